"""Voice catalogue (interface §2.7, §3.2-§3.3): preset list, clone list / rename / delete.

The cloned-voice table lives here; the clone products (clone-voice create) add rows with
:func:`insert_clone`, TTS reads them with :func:`find_clone`.

Choices where the interface is silent (*choice*):

* *choice* Clones belong to the key that made them; another key's clone is 404, like an
  unknown one. Deleted clones vanish from list, rename and TTS (404 / "not found").
* *choice* Clone list: ``searchName`` is a case-insensitive substring of the name; ``voiceId``
  and ``voiceIds`` combine (a clone matching either is kept). Without ``orderBy`` clones are
  ordered by ``create_time``; ties keep insertion order. Timestamps are ISO 8601 UTC.
* *choice* Rename needs ``voiceId`` and a non-blank ``voiceName`` (400 naming the field
  otherwise); it changes ``name`` and ``updateTime`` only.
"""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass
from typing import Any

from ...schema import CloneRename, CloneVoiceQuery, VoiceIdBody
from ..backend import Backend, ServiceError, new_id, now_iso
from ..catalogue import SpeakingVoice
from ..operations import Call, handles
from ..store import Store
from .common import page

CLONE_SCHEMA = """
CREATE TABLE IF NOT EXISTS cloned_voices (
    voice_id TEXT PRIMARY KEY, api_key TEXT NOT NULL, name TEXT NOT NULL, provider TEXT NOT NULL,
    example_language TEXT, content TEXT, audio TEXT, task_id TEXT, prosody TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0, create_time TEXT NOT NULL, update_time TEXT NOT NULL,
    seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS cloned_voices_by_key ON cloned_voices (api_key, deleted, seq);
"""
_ready: "weakref.WeakSet[Store]" = weakref.WeakSet()
_CLONE_ORDER = {"voiceId": "voice_id", "name": "name", "create_time": "create_time",
                "update_time": "update_time"}


@dataclass(frozen=True)
class StoredClone:
    """A cloned voice as the sandbox keeps it: the §3.3 record and how to speak it."""

    record: dict[str, Any]      # camelCase, exactly what clone/list shows
    voice: SpeakingVoice

    @property
    def provider(self) -> str:
        return self.record["provider"]


def _table(backend: Backend) -> Store:
    if backend.store not in _ready:
        backend.store.ensure(CLONE_SCHEMA)
        _ready.add(backend.store)
    return backend.store


def insert_clone(backend: Backend, api_key: str, record: dict[str, Any],
                 prosody: SpeakingVoice | dict[str, Any]) -> dict[str, Any]:
    """Store a new clone for ``api_key``; return its §3.3 record (with ``voiceId``).

    ``record`` uses the wire names: ``name``, ``provider`` (V1-V5), ``exampleLanguage``,
    ``content``, ``audio``, ``taskId``, and optionally ``voiceId`` (made as ``cv_<hex>``
    when missing). ``prosody`` is how TTS will speak it (a :class:`SpeakingVoice` or its JSON).

    >>> insert_clone(backend, key, {"name": "Ann", "provider": "V3", "taskId": t},
    ...              SpeakingVoice("en-us", "f2"))["voiceId"]          # doctest: +SKIP
    'cv_...'
    """
    voice = prosody if isinstance(prosody, SpeakingVoice) else SpeakingVoice.from_json(prosody)
    voice_id = record.get("voiceId") or new_id("cv_")
    stamp = now_iso()
    store = _table(backend)
    with store.transaction() as db:
        seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM cloned_voices").fetchone()[0]
        db.execute(
            "INSERT INTO cloned_voices (voice_id, api_key, name, provider, example_language, "
            "content, audio, task_id, prosody, create_time, update_time, seq) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (voice_id, api_key, record.get("name") or voice_id, record["provider"],
             record.get("exampleLanguage"), record.get("content"), record.get("audio"),
             record.get("taskId"), json.dumps(voice.to_json()), stamp, stamp, seq))
    found = find_clone(backend, api_key, voice_id)
    assert found is not None
    return found.record


def find_clone(backend: Backend, api_key: str, voice_id: str) -> StoredClone | None:
    """The live (not deleted) clone ``voice_id`` of ``api_key``, or None."""
    row = _table(backend).one("SELECT * FROM cloned_voices WHERE voice_id = ? AND api_key = ? "
                              "AND deleted = 0", (voice_id, api_key))
    if row is None:
        return None
    return StoredClone(_clone_record(dict(row)), SpeakingVoice.from_json(json.loads(row["prosody"])))


def _clone_record(row: dict[str, Any]) -> dict[str, Any]:
    return {"voiceId": row["voice_id"], "name": row["name"], "provider": row["provider"],
            "exampleLanguage": row["example_language"], "content": row["content"],
            "audio": row["audio"], "taskId": row["task_id"], "createTime": row["create_time"],
            "updateTime": row["update_time"]}


@handles("voices.clones")
def list_clones(call: Call) -> dict[str, Any]:
    query: CloneVoiceQuery = call.body  # type: ignore[assignment]
    sql = "SELECT * FROM cloned_voices WHERE api_key = ? AND deleted = 0"
    args: list[Any] = [call.api_key]
    wanted = [v for v in [query.voice_id, *(query.voice_ids or [])] if v]
    if wanted:
        sql += f" AND voice_id IN ({', '.join('?' * len(wanted))})"
        args += wanted
    if query.search_name:
        sql += " AND instr(lower(name), ?) > 0"
        args.append(query.search_name.lower())
    column = _CLONE_ORDER[query.order_by or "create_time"]
    direction = "ASC" if query.order == "asc" else "DESC"
    sql += f" ORDER BY {column} {direction}, seq {direction}"
    rows = [_clone_record(dict(r)) for r in _table(call.backend).all(sql, args)]
    return page(rows, query.current_page, query.page_size, default_size=10)


def _live_clone(call: Call, voice_id: str | None) -> StoredClone:
    if not voice_id:
        raise ServiceError(400, "invalid request: voiceId: is required")
    found = find_clone(call.backend, call.api_key, voice_id)
    if found is None:
        raise ServiceError(404, f"cloned voice not found: {voice_id} (see "
                                f"/openapi/v1/assets/voice/clone/list)")
    return found


@handles("voices.rename")
def rename_clone(call: Call) -> None:
    body: CloneRename = call.body  # type: ignore[assignment]
    clone = _live_clone(call, body.voice_id)
    if not body.voice_name or not body.voice_name.strip():
        raise ServiceError(400, "invalid request: voiceName: is required and must not be blank")
    _table(call.backend).execute(
        "UPDATE cloned_voices SET name = ?, update_time = ? WHERE voice_id = ?",
        (body.voice_name.strip(), now_iso(), clone.record["voiceId"]))
    return None


@handles("voices.delete")
def delete_clone(call: Call) -> None:
    body: VoiceIdBody = call.body  # type: ignore[assignment]
    clone = _live_clone(call, body.voice_id)
    _table(call.backend).execute(
        "UPDATE cloned_voices SET deleted = 1, update_time = ? WHERE voice_id = ?",
        (now_iso(), clone.record["voiceId"]))
    return None
