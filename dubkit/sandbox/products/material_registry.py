"""The registry of materials: their table, and registering a finished upload as a material.

Registration probes the bytes with ffmpeg, derives the thumbnail and audio track, and keeps one
material per content and key; the choices it follows are listed in
:mod:`dubkit.sandbox.products.materials`.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import weakref
from pathlib import Path
from typing import Any

from ...media import av
from ...schema import Material
from .. import storage
from ..backend import Backend, now_iso
from ..service_error import ServiceError
from ..store import Store
from .upload_sessions import mark_completed, set_state

log = logging.getLogger("dubkit.sandbox")

SCHEMA = """
CREATE TABLE IF NOT EXISTS materials (
    material_id TEXT PRIMARY KEY, api_key TEXT NOT NULL, file_hash TEXT NOT NULL,
    relpath TEXT NOT NULL, object_key TEXT NOT NULL, record TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS materials_by_hash ON materials (api_key, file_hash, deleted);
CREATE INDEX IF NOT EXISTS materials_by_key ON materials (api_key, deleted, seq);
CREATE INDEX IF NOT EXISTS materials_by_seq ON materials (seq);
"""


def materials_table(backend: Backend) -> Store:
    return backend.store.ensure(SCHEMA).count_live_rows("materials")


def live_by_hash(backend: Backend, api_key: str, file_hash: str) -> dict[str, Any] | None:
    """The oldest live material of ``api_key`` whose bytes have MD5 ``file_hash`` (its row)."""
    row = materials_table(backend).one(
        "SELECT * FROM materials WHERE api_key = ? AND file_hash = ? AND "
        "deleted = 0 ORDER BY seq LIMIT 1",
        (api_key, file_hash),
    )
    return dict(row) if row else None


_registering: weakref.WeakKeyDictionary[Backend, dict[tuple[str, str], threading.Lock]] = (
    weakref.WeakKeyDictionary()
)
_registering_guard = threading.Lock()


def register(
    backend: Backend, api_key: str, session: dict[str, Any], path: Path, size: int
) -> Material:
    """Turn the stored object at ``path`` into a material (or answer the existing duplicate).

    The duplicate check and the insert are one step per key and content: concurrent uploads
    of the same bytes wait for each other here and all answer the one material.
    """
    with _registering_guard:
        lock = _registering.setdefault(backend, {}).setdefault(
            (api_key, session["file_hash"]), threading.Lock()
        )
    with lock:
        return _register_now(backend, api_key, session, path, size)


def _register_now(
    backend: Backend, api_key: str, session: dict[str, Any], path: Path, size: int
) -> Material:
    material_id = session["material_id"]
    duplicate = live_by_hash(backend, api_key, session["file_hash"])
    if duplicate is not None:
        storage.delete_object(backend, session["object_key"])
        set_state(backend, material_id, "completed")
        return Material.model_validate_json(duplicate["record"])
    try:
        info = av.probe(path)
    except av.MediaError as exc:
        storage.delete_object(backend, session["object_key"])
        set_state(backend, material_id, "failed")
        reason = str(exc).splitlines()[0]
        raise ServiceError(
            422,
            f"the uploaded file {session['file_name']!r} is not audio or "
            f"video the service can read ({reason}); nothing was "
            f"registered",
        ) from None
    folder = f"materials/{material_id}"
    relpath = f"{folder}/{Path(session['object_key']).name}"
    backend.file_path(folder).mkdir(parents=True, exist_ok=True)
    os.replace(path, backend.file_path(relpath))
    stamp = now_iso()
    record = Material(
        material_id=material_id,
        category=info.category,
        name=session["file_name"],
        address_url=backend.file_url(relpath),
        mime_type=info.mime_type,
        file_hash=session["file_hash"],
        filesize=size,
        duration=int(round(info.duration * 1000)),
        create_time=stamp,
        update_time=stamp,
        **_derived_files(backend, folder, backend.file_path(relpath), info),
    )
    store = materials_table(backend)
    with store.transaction() as db:
        seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM materials").fetchone()[0]
        db.execute(
            "INSERT INTO materials (material_id, api_key, file_hash, relpath, object_key, "
            "record, seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                material_id,
                api_key,
                session["file_hash"],
                relpath,
                session["object_key"],
                json.dumps(record.to_wire()),
                seq,
            ),
        )
        mark_completed(db, material_id)
    storage.delete_object(backend, session["object_key"])
    return record


def _derived_files(backend: Backend, folder: str, path: Path, info: av.MediaInfo) -> dict[str, str]:
    """Thumbnail, audio track and resolution; a step ffmpeg cannot do is left out, not fatal."""
    if info.category == "audio":
        return {"audio_url": backend.file_url(f"{folder}/{path.name}")}
    extra: dict[str, str] = {}
    if info.width and info.height:
        extra["resolution"] = f"{info.width}x{info.height}"
    for name, field, make in (
        ("thumbnail.jpg", "thumbnail_url", av.thumbnail),
        ("audio.m4a", "audio_url", av.extract_audio),
    ):
        if field == "audio_url" and not info.has_audio:
            continue
        try:
            make(path, backend.file_path(f"{folder}/{name}"))
            extra[field] = backend.file_url(f"{folder}/{name}")
        except av.MediaError as exc:
            log.warning("material %s: no %s: %s", folder, field, str(exc).splitlines()[0])
    return extra
