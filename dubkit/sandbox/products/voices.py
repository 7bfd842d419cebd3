"""Voice catalogue (interface §2.7, §3.2-§3.3): preset list, clone list / rename / delete.

Presets come from :mod:`dubkit.sandbox.catalogue`. The cloned-voice table lives here; the
clone products (clone-voice create) add rows with :func:`insert_clone`, TTS reads them with
:func:`find_clone`.

Choices where the interface is silent (*choice*):

* *choice* A preset's ``audio`` (a WAV of the voice saying "Hello! This is my voice." in its
  language) and ``cover`` (an SVG badge) are made the first time their URL is fetched, then
  served from the files dir; a listing only names them.
* *choice* Preset filters: ``locale`` matches the code case-insensitively, and a bare
  language (``en``) matches all its regions; an unknown code is 400 with suggestions.
  ``gender``, ``age`` and ``category`` match case-insensitively; ``quality: high`` keeps HD
  voices; ``emotionPrompt: include`` keeps voices recommended for ``emoPrompt`` (record field
  ``supportsEmotionPrompt``), ``exclude`` the others; ``searchName`` is a case-insensitive
  substring of ``displayName`` or ``localName``. ``topIds`` that pass the filters come first,
  in the order given. Without ``orderBy``: preferred first, then by score (both descending),
  then ``voiceId``; ``orderBy`` sorts by that field in ``order`` (default desc), ties by
  ``voiceId``. Records carry three labelled extras: ``age``, ``category`` and
  ``supportsEmotionPrompt``.
* *choice* Clones belong to the key that made them; another key's clone is 404, like an
  unknown one. Deleted clones vanish from list, rename and TTS (404 / "not found").
* *choice* Clone list: ``searchName`` is a case-insensitive substring of the name; ``voiceId``
  and ``voiceIds`` combine (a clone matching either is kept). Without ``orderBy`` clones are
  ordered by ``create_time``; ties keep insertion order. Timestamps are ISO 8601 UTC.
* *choice* ``orderBy``, ``order``, ``quality`` and ``emotionPrompt`` are free strings on the wire;
  a value the sandbox cannot apply (not one of the documented ones) is 400 naming the field and
  the values it knows. ``age``, ``gender`` and ``category`` filter by any value (``age: teen``
  simply matches no voice).
* *choice* Rename needs ``voiceId`` and a non-blank ``voiceName`` (400 naming the field
  otherwise); it changes ``name`` and ``updateTime`` only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ... import locales
from ...schema import (
    ClonedVoice,
    ClonedVoicePage,
    CloneRename,
    CloneVoiceQuery,
    PresetVoice,
    PresetVoicePage,
    PresetVoiceQuery,
    VoiceIdBody,
)
from .. import catalogue_files
from ..backend import Backend, new_id, now_iso
from ..call import Call
from ..catalogue import Preset, SpeakingVoice, presets
from ..database import Database
from ..service_error import ServiceError
from .common import check_locale, page, page_rows

CLONE_SCHEMA = """
CREATE TABLE IF NOT EXISTS cloned_voices (
    voice_id TEXT PRIMARY KEY, api_key TEXT NOT NULL, name TEXT NOT NULL, provider TEXT NOT NULL,
    example_language TEXT, content TEXT, audio TEXT, task_id TEXT, prosody TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0, create_time TEXT NOT NULL, update_time TEXT NOT NULL,
    seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS cloned_voices_by_key ON cloned_voices (api_key, deleted, seq);
CREATE INDEX IF NOT EXISTS cloned_voices_by_task ON cloned_voices (task_id);
CREATE INDEX IF NOT EXISTS cloned_voices_by_seq ON cloned_voices (seq);
CREATE INDEX IF NOT EXISTS cloned_voices_by_created ON cloned_voices
    (api_key, deleted, create_time, seq);
CREATE INDEX IF NOT EXISTS cloned_voices_by_updated ON cloned_voices
    (api_key, deleted, update_time, seq);
CREATE INDEX IF NOT EXISTS cloned_voices_by_name ON cloned_voices (api_key, deleted, name, seq);
CREATE INDEX IF NOT EXISTS cloned_voices_by_id ON cloned_voices (api_key, deleted, voice_id, seq);
"""
_CLONE_ORDER = {
    "voiceId": "voice_id",
    "name": "name",
    "create_time": "create_time",
    "update_time": "update_time",
}
_ORDERS = ("asc", "desc")


def _known(field: str, value: str, known: Any) -> str:
    """``value`` if the sandbox can apply it to ``field``; else 400 naming both."""
    if value not in known:
        raise ServiceError(
            400,
            f"invalid request: {field}: the sandbox knows "
            f"{', '.join(map(repr, known))}, got {value[:40]!r}",
        )
    return value


@dataclass(frozen=True)
class StoredClone:
    """A cloned voice as the sandbox keeps it: the §3.3 record and how to speak it."""

    record: ClonedVoice  # exactly what clone/list shows
    voice: SpeakingVoice

    @property
    def provider(self) -> str:
        return self.record.provider or ""


def _table(backend: Backend) -> Database:
    return backend.db.ensure(CLONE_SCHEMA).count_live_rows("cloned_voices")


def insert_clone(
    backend: Backend,
    api_key: str,
    voice: SpeakingVoice,
    *,
    name: str,
    provider: str,
    task_id: str,
    language: str | None = None,
    content: str | None = None,
    audio: str | None = None,
) -> StoredClone:
    """Store a new clone ``cv_<hex>`` for ``api_key``, spoken by TTS as ``voice``.

    >>> insert_clone(backend, key, SpeakingVoice("en-us", "f2"), name="Ann", provider="V3",
    ...              task_id=t).record.voice_id                        # doctest: +SKIP
    'cv_...'
    """
    voice_id = new_id("cv_")
    stamp = now_iso()
    store = _table(backend)
    with store.transaction() as db:
        seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM cloned_voices").fetchone()[0]
        db.execute(
            "INSERT INTO cloned_voices (voice_id, api_key, name, provider, example_language, "
            "content, audio, task_id, prosody, create_time, update_time, seq) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                voice_id,
                api_key,
                name or voice_id,
                provider,
                language,
                content,
                audio,
                task_id,
                json.dumps(voice.to_json()),
                stamp,
                stamp,
                seq,
            ),
        )
    found = find_clone(backend, api_key, voice_id)
    assert found is not None
    return found


def find_clone(backend: Backend, api_key: str, voice_id: str) -> StoredClone | None:
    """The live (not deleted) clone ``voice_id`` of ``api_key``, or None."""
    row = _table(backend).one(
        "SELECT * FROM cloned_voices WHERE voice_id = ? AND api_key = ? AND deleted = 0",
        (voice_id, api_key),
    )
    if row is None:
        return None
    return StoredClone(
        _clone_record(dict(row)), SpeakingVoice.from_json(json.loads(row["prosody"]))
    )


def clone_of_task_is_live(backend: Backend, task_id: str) -> bool:
    """Whether the clone made by ``task_id`` still exists (for serving its reference copy)."""
    return (
        _table(backend).one(
            "SELECT 1 FROM cloned_voices WHERE task_id = ? AND deleted = 0", (task_id,)
        )
        is not None
    )


def _clone_record(row: dict[str, Any]) -> ClonedVoice:
    return ClonedVoice(
        voice_id=row["voice_id"],
        name=row["name"],
        provider=row["provider"],
        example_language=row["example_language"],
        content=row["content"],
        audio=row["audio"],
        task_id=row["task_id"],
        create_time=row["create_time"],
        update_time=row["update_time"],
    )


def list_clones(call: Call[CloneVoiceQuery]) -> dict[str, Any]:
    query = call.body
    sql = "SELECT * FROM cloned_voices WHERE api_key = ? AND deleted = 0"
    args: list[Any] = [call.api_key]
    wanted = [v for v in [query.voice_id, *(query.voice_ids or [])] if v]
    if wanted:
        sql += f" AND voice_id IN ({', '.join('?' * len(wanted))})"
        args += wanted
    if query.search_name:
        sql += " AND instr(lower(name), ?) > 0"
        args.append(query.search_name.lower())
    column = _CLONE_ORDER[_known("orderBy", query.order_by or "create_time", _CLONE_ORDER)]
    direction = "ASC" if _known("order", query.order or "desc", _ORDERS) == "asc" else "DESC"
    sql += f" ORDER BY {column} {direction}, seq {direction}"
    store = _table(call.backend)
    rows, total = page_rows(
        store,
        sql,
        args,
        query.current_page,
        query.page_size,
        default_size=10,
        # unfiltered: the kept count; filtered: counted over the filter
        total=None
        if wanted or query.search_name
        else store.live_rows("cloned_voices", call.api_key),
    )
    return ClonedVoicePage(records=[_clone_record(dict(r)) for r in rows], total=total).to_wire()


def _live_clone(call: Call[Any], voice_id: str | None) -> StoredClone:
    if not voice_id:
        raise ServiceError(400, "invalid request: voiceId: is required")
    found = find_clone(call.backend, call.api_key, voice_id)
    if found is None:
        raise ServiceError(
            404, f"cloned voice not found: {voice_id} (see /openapi/v1/assets/voice/clone/list)"
        )
    return found


def rename_clone(call: Call[CloneRename]) -> None:
    body = call.body
    clone = _live_clone(call, body.voice_id)
    if not body.voice_name or not body.voice_name.strip():
        raise ServiceError(400, "invalid request: voiceName: is required and must not be blank")
    _table(call.backend).execute(
        "UPDATE cloned_voices SET name = ?, update_time = ? WHERE voice_id = ?",
        (body.voice_name.strip(), now_iso(), clone.record.voice_id),
    )


def delete_clone(call: Call[VoiceIdBody]) -> None:
    clone = _live_clone(call, call.body.voice_id)
    _table(call.backend).execute(
        "UPDATE cloned_voices SET deleted = 1, update_time = ? WHERE voice_id = ?",
        (now_iso(), clone.record.voice_id),
    )


# --------------------------------------------------------------------------- presets

_PRESET_ORDER = {  # orderBy's values -> the record field each sorts by
    "voiceId": "voice_id",
    "score": "score",
    "create_time": "create_time",
    "update_time": "update_time",
    "is_preferred": "is_preferred",
}


def list_presets(call: Call[PresetVoiceQuery]) -> dict[str, Any]:
    query = call.body
    if query.locale is not None:
        _check_locale_filter(query.locale)
    for field, value, known in (
        ("quality", query.quality, ("any", "high")),
        ("emotionPrompt", query.emotion_prompt, ("exclude", "include")),
        ("order", query.order, _ORDERS),
        ("orderBy", query.order_by, _PRESET_ORDER),
    ):
        if value is not None:
            _known(field, value, known)
    matching = [p for p in presets() if _matches(p.record, query)]
    if query.order_by:
        key = _PRESET_ORDER[query.order_by]
        matching.sort(key=lambda p: p.voice_id)
        matching.sort(key=lambda p: getattr(p.record, key), reverse=query.order != "asc")
    else:
        matching.sort(
            key=lambda p: (-(p.record.is_preferred or 0), -(p.record.score or 0), p.voice_id)
        )
    pinned = {voice_id: i for i, voice_id in enumerate(query.top_ids or [])}
    matching.sort(key=lambda p: pinned.get(p.voice_id, len(pinned)))  # stable: keeps order
    shown, total = page(matching, query.current_page, query.page_size, default_size=10)
    records = [served_preset(call.backend, p) for p in shown]
    return PresetVoicePage(records=records, total=total).to_wire()


def _matches(record: PresetVoice, query: PresetVoiceQuery) -> bool:
    def same(value: str | None, wanted: str | None) -> bool:
        return wanted is None or (value or "").lower() == wanted.lower()

    locale = (record.locale or "").lower()
    if query.locale is not None:
        code = query.locale.lower()
        if locale != code and not locale.startswith(code + "-"):
            return False
    if query.search_name:
        needle = query.search_name.lower()
        names = (record.display_name or "", record.local_name or "")
        if not any(needle in name.lower() for name in names):
            return False
    if query.quality == "high" and not record.is_hd:
        return False
    if query.emotion_prompt and record.supports_emotion_prompt != (
        query.emotion_prompt == "include"
    ):
        return False
    return (
        same(record.voice_id, query.voice_id)
        and same(record.gender, query.gender)
        and same(record.age, query.age)
        and same(record.category, query.category)
    )


def _check_locale_filter(code: str) -> None:
    lowered = code.lower()
    if any(t.lower() == lowered or t.lower().startswith(lowered + "-") for t in locales.TARGET):
        return
    check_locale("locale", code, locales.TARGET)


def served_preset(backend: Backend, preset: Preset) -> PresetVoice:
    """The record with its preview and cover URLs; the files are made when first fetched
    (:mod:`dubkit.sandbox.catalogue_files`), so a listing never waits for hundreds of them."""
    voice_id = preset.voice_id
    return preset.record.model_copy(
        update={
            "audio": backend.file_url(catalogue_files.preview_relpath(voice_id)),
            "cover": backend.file_url(catalogue_files.cover_relpath(voice_id)),
            "preview_text": preset.sample_text,
        }
    )
