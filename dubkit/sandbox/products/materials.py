"""Materials (interface §2.6, §3.1, §5): upload sessions, registration, list, soft delete.

The bytes go to :mod:`dubkit.sandbox.storage` through presigned URLs; this module hands out
those URLs and answers the operations, and registers a finished upload as a material: it probes
the bytes with ffmpeg, derives the thumbnail and audio track, and keeps one material per content
and key.

Choices where the interface is silent (*choice*):

* *choice* The ``materialId`` of an upload session becomes the material's id once registered.
  Before that it is only a handle: list, delete and media translation do not know it (404).
* *choice* Duplicates are found by MD5 per API key. gen-upload-url answers a live material with
  the same ``fileHash`` (``uploadUrl: ""``, ``material`` set). Multipart initiate has no such
  field, so it always opens a session; but completing any upload whose bytes match a live
  material of the key answers that material and drops the new copy: one material per content.
* *choice* Completion checks that the stored bytes have the ``fileHash`` given at the start
  (400 otherwise; the session stays open so the bytes can be sent again). ``fileHash`` on
  complete, presign-parts and abort must equal the start's, ``s3Uri`` must be the session's
  (400). ``fileName`` is taken from the start; a different one at completion is ignored.
* *choice* Registration probes the file with ffmpeg. Bytes that are not audio or video are 422
  and the upload is closed (the bytes deleted): no retry can register them.
* *choice* Record fields: ``category`` video if there is a picture, else audio; ``mimeType`` of
  the container; ``duration`` in ms, rounded; ``resolution`` ``WxH`` for video only;
  ``thumbnailUrl`` a JPEG a tenth into a video (audio materials have no thumbnail);
  ``audioUrl`` the first audio track as m4a for video (absent when it has none) and the file
  itself for audio. Files are served under ``/files/materials/<materialId>/``.
* *choice* Lists are newest first. Delete is soft: the material leaves list, dedup and media
  translation (404) at once; its files stay. Deleting an unknown or deleted id is 404.
* *choice* Aborting an aborted upload again is fine; aborting a completed one is 400.
* *choice* presign-parts answers at most ``MAX_PRESIGN`` (1,000) URLs a call; more is 400.
* *choice* Completions of one key's uploads with the same bytes register one after another, so
  any number of concurrent uploads of one file make one material.
* *choice* Uploads and materials cost no credits.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import weakref
from pathlib import Path
from typing import Any

from ...media import av
from ...schema import (
    GenUploadUrlAnswer,
    Material,
    MaterialIdBody,
    MaterialPage,
    MaterialQuery,
    MultipartComplete,
    MultipartInitiateAnswer,
    MultipartRef,
    PartUrl,
    PresignParts,
    PresignPartsAnswer,
    UploadComplete,
    UploadStart,
)
from .. import multipart, storage
from ..backend import Backend, new_id, now_iso
from ..call import Call
from ..database import Database
from ..service_error import ServiceError
from .common import page_rows
from .upload_sessions import (
    checked_session,
    claim,
    mark_completed,
    open_session,
    session_row,
    set_state,
)

log = logging.getLogger("dubkit.sandbox")
MAX_PRESIGN = 1000  # part URLs per presign-parts call (the interface states no maximum)

# --------------------------------------------------------------------------- the registry

SCHEMA = """
CREATE TABLE IF NOT EXISTS materials (
    material_id TEXT PRIMARY KEY, api_key TEXT NOT NULL, file_hash TEXT NOT NULL,
    relpath TEXT NOT NULL, object_key TEXT NOT NULL, record TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS materials_by_hash ON materials (api_key, file_hash, deleted);
CREATE INDEX IF NOT EXISTS materials_by_key ON materials (api_key, deleted, seq);
CREATE INDEX IF NOT EXISTS materials_by_seq ON materials (seq);
"""


def materials_table(backend: Backend) -> Database:
    return backend.db.ensure(SCHEMA).count_live_rows("materials")


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
    with _registering_lock(backend, api_key, session["file_hash"]):
        return _register_now(backend, api_key, session, path, size)


def _registering_lock(backend: Backend, api_key: str, file_hash: str) -> threading.Lock:
    """The one lock of a key's registrations of these bytes (duplicate check, then insert)."""
    with _registering_guard:
        return _registering.setdefault(backend, {}).setdefault(
            (api_key, file_hash), threading.Lock()
        )


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
    record, relpath = _stored(
        backend, material_id, session["file_name"], session["file_hash"], path, size, info
    )
    with materials_table(backend).transaction() as db:
        _insert(db, api_key, session["file_hash"], relpath, session["object_key"], record)
        mark_completed(db, material_id)
    storage.delete_object(backend, session["object_key"])
    return record


def _stored(
    backend: Backend,
    material_id: str,
    name: str,
    file_hash: str,
    path: Path,
    size: int,
    info: av.MediaInfo,
) -> tuple[Material, str]:
    """Move a probed file into the material's folder; its record and where it now is."""
    folder = f"materials/{material_id}"
    relpath = f"{folder}/{path.name}"
    backend.file_path(folder).mkdir(parents=True, exist_ok=True)
    os.replace(path, backend.file_path(relpath))
    stamp = now_iso()
    record = Material(
        material_id=material_id,
        category=info.category,
        name=name,
        address_url=backend.file_url(relpath),
        mime_type=info.mime_type,
        file_hash=file_hash,
        filesize=size,
        duration=int(round(info.duration * 1000)),
        create_time=stamp,
        update_time=stamp,
        **_derived_files(backend, folder, backend.file_path(relpath), info),
    )
    return record, relpath


def register_fetched(
    backend: Backend, api_key: str, path: Path, name: str, file_hash: str, info: av.MediaInfo
) -> Material:
    """A file the sandbox fetched for a dub (``source.sourceUrl``), registered as a material
    of ``api_key`` as an upload would be: the same bytes registered already are that one."""
    with _registering_lock(backend, api_key, file_hash):
        duplicate = live_by_hash(backend, api_key, file_hash)
        if duplicate is not None:
            return Material.model_validate_json(duplicate["record"])
        record, relpath = _stored(
            backend, new_id("mat_"), name, file_hash, path, path.stat().st_size, info
        )
        with materials_table(backend).transaction() as db:
            _insert(db, api_key, file_hash, relpath, "", record)
        return record


def _insert(
    db: sqlite3.Connection,
    api_key: str,
    file_hash: str,
    relpath: str,
    object_key: str,
    record: Material,
) -> None:
    """The material's row, last in the list order (``seq``), inside ``db``'s transaction."""
    seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM materials").fetchone()[0]
    db.execute(
        "INSERT INTO materials (material_id, api_key, file_hash, relpath, object_key, "
        "record, seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            record.material_id,
            api_key,
            file_hash,
            relpath,
            object_key,
            json.dumps(record.to_wire()),
            seq,
        ),
    )


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


# --------------------------------------------------------------------------- for other products


def find_material(backend: Backend, api_key: str, material_id: str) -> Material:
    """The registered, live material ``material_id`` of ``api_key`` (§3.1 record), else 404.

    The 404 says why: never registered (an unfinished upload's id), deleted, or unknown.
    """
    row = materials_table(backend).one(
        "SELECT * FROM materials WHERE material_id = ? AND api_key = ?", (material_id, api_key)
    )
    if row is not None and not row["deleted"]:
        return Material.model_validate_json(row["record"])
    if row is not None:
        raise ServiceError(404, f"material not found: {material_id} was deleted")
    if session_row(backend, api_key, material_id) is not None:
        raise ServiceError(
            404,
            f"material not found: {material_id} is an upload that was never "
            f"completed; only a registered material can be used",
        )
    raise ServiceError(404, f"material not found: {material_id}")


def is_live(backend: Backend, material_id: str) -> bool:
    """Whether ``material_id`` is registered and not deleted (for serving its files)."""
    return (
        materials_table(backend).one(
            "SELECT 1 FROM materials WHERE material_id = ? AND deleted = 0", (material_id,)
        )
        is not None
    )


def material_path(backend: Backend, api_key: str, material_id: str) -> Path:
    """The main file of a registered, live material (404 as :func:`find_material`)."""
    find_material(backend, api_key, material_id)
    row = materials_table(backend).one(
        "SELECT relpath FROM materials WHERE material_id = ?", (material_id,)
    )
    return backend.file_path(row["relpath"])  # type: ignore[index]


# --------------------------------------------------------------------------- single upload


def gen_upload_url(call: Call[UploadStart]) -> dict[str, Any]:
    backend, body = call.backend, call.body
    duplicate = live_by_hash(backend, call.api_key, body.file_hash.lower())
    if duplicate is not None:
        record = Material.model_validate_json(duplicate["record"])
        return GenUploadUrlAnswer(
            upload_url="",
            material=record,
            material_id=record.material_id,
            s3_uri=storage.s3_uri(duplicate["object_key"]),
        ).to_wire()
    session = open_session(backend, call.api_key, body, "single")
    key = session["object_key"]
    return GenUploadUrlAnswer(
        upload_url=storage.presign_put(backend, key),
        s3_uri=storage.s3_uri(key),
        material_id=session["material_id"],
    ).to_wire()


def complete(call: Call[UploadComplete]) -> dict[str, Any]:
    backend, body = call.backend, call.body
    session = checked_session(backend, call.api_key, body.material_id, "single", body.file_hash)
    if storage.key_of(body.s3_uri) != session["object_key"]:
        raise ServiceError(
            400,
            f"invalid request: s3Uri: not the storage target of materialId "
            f"{body.material_id} (send the s3Uri gen-upload-url answered)",
        )
    claim(backend, session)
    try:
        stored = storage.stored_object(backend, session["object_key"])
        if stored is None:
            raise ServiceError(
                400, "no file at the upload URL yet: PUT the bytes to uploadUrl before completing"
            )
        if stored["etag"] != session["file_hash"]:
            raise ServiceError(
                400,
                f"invalid request: fileHash: the uploaded bytes have MD5 "
                f"{stored['etag']}, not {session['file_hash']}; PUT the "
                f"right file again",
            )
    except ServiceError:
        set_state(backend, session["material_id"], "open")
        raise
    return register(
        backend,
        call.api_key,
        session,
        storage.object_path(backend, session["object_key"]),
        stored["size"],
    ).to_wire()


# --------------------------------------------------------------------------- multipart


def multipart_initiate(call: Call[UploadStart]) -> dict[str, Any]:
    backend = call.backend
    session = open_session(backend, call.api_key, call.body, "multipart")
    return MultipartInitiateAnswer(
        material_id=session["material_id"],
        s3_uri=storage.s3_uri(session["object_key"]),
        upload_id=session["upload_id"],
        expires_in_seconds=storage.presign_ttl(backend),
        recommended_part_size=storage.recommended_part_size(backend),
    ).to_wire()


def multipart_presign(call: Call[PresignParts]) -> dict[str, Any]:
    backend, body = call.backend, call.body
    session = checked_session(
        backend,
        call.api_key,
        body.material_id,
        "multipart",
        body.file_hash,
        body.upload_id,
        need_hash=False,
    )
    if session["state"] != "open":
        raise ServiceError(404, f"upload {session['material_id']} is {session['state']}, not open")
    if not body.part_numbers:
        raise ServiceError(400, "invalid request: partNumbers: list the parts to presign (1-10000)")
    if len(body.part_numbers) > MAX_PRESIGN:
        raise ServiceError(
            400,
            f"invalid request: partNumbers: at most {MAX_PRESIGN} per "
            f"call, got {len(body.part_numbers)}; ask for the rest in "
            f"further calls",
        )
    urls = [
        PartUrl(
            part_number=n,
            url=storage.presign_put(
                backend, session["object_key"], upload_id=session["upload_id"], part_number=n
            ),
        )
        for n in body.part_numbers
    ]
    return PresignPartsAnswer(urls=urls, expires_in_seconds=storage.presign_ttl(backend)).to_wire()


def multipart_complete(call: Call[MultipartComplete]) -> dict[str, Any]:
    backend, body = call.backend, call.body
    session = checked_session(
        backend, call.api_key, body.material_id, "multipart", body.file_hash, body.upload_id
    )
    claim(backend, session)
    upload_id = session["upload_id"]
    try:
        listed = []
        for i, part in enumerate(body.parts or []):
            if part.part_number is None or not part.e_tag:
                raise ServiceError(400, f"parts[{i}]: partNumber and eTag are both required")
            listed.append((part.part_number, part.e_tag))
        path = storage.object_path(backend, session["object_key"])
        size = multipart.complete(backend, upload_id, listed, session["file_hash"], path)
    except ServiceError:
        set_state(backend, session["material_id"], "open")
        raise
    if size > storage.upload_limit(backend):
        storage.delete_object(backend, session["object_key"])
        multipart.finish(backend, upload_id, "aborted")
        set_state(backend, session["material_id"], "aborted")
        raise ServiceError(
            413,
            f"payload too large: {size} bytes; the upload limit is "
            f"{storage.upload_limit(backend)} bytes",
        )
    try:
        record = register(backend, call.api_key, session, path, size)
    except ServiceError:
        multipart.finish(backend, upload_id, "aborted")
        raise
    multipart.finish(backend, upload_id)
    return record.to_wire()


def multipart_abort(call: Call[MultipartRef]) -> None:
    backend, body = call.backend, call.body
    session = checked_session(
        backend, call.api_key, body.material_id, "multipart", body.file_hash, body.upload_id
    )
    if session["state"] == "completed":
        raise ServiceError(
            400,
            f"upload already completed: material {session['material_id']} "
            f"is registered; delete it with material/delete",
        )
    if session["state"] == "open":
        multipart.finish(backend, session["upload_id"], "aborted")
        set_state(backend, session["material_id"], "aborted")


# --------------------------------------------------------------------------- list, delete


def list_materials(call: Call[MaterialQuery]) -> dict[str, Any]:
    query, store = call.body, materials_table(call.backend)
    where, args = "api_key = ? AND deleted = 0", [call.api_key]
    mime_type = (query.mime_type or "").strip().lower()
    if mime_type.endswith("/*"):  # any of a type: video/*
        where += " AND instr(lower(json_extract(record, '$.mimeType')), ?) = 1"
        args.append(mime_type[:-1])
    elif mime_type:
        where += " AND lower(json_extract(record, '$.mimeType')) = ?"
        args.append(mime_type)
    rows, total = page_rows(
        store,
        f"SELECT record FROM materials WHERE {where} ORDER BY seq DESC",
        args,
        query.current_page,
        query.page_size,
        default_size=20,
        # the kept count, unless a filter asks for a COUNT over it
        total=None if mime_type else store.live_rows("materials", call.api_key),
    )
    return MaterialPage(
        records=[Material.model_validate_json(r["record"]) for r in rows], total=total
    ).to_wire()


def delete(call: Call[MaterialIdBody]) -> None:
    material_id = call.body.material_id
    if not material_id:
        raise ServiceError(400, "invalid request: materialId: is required")
    record = find_material(call.backend, call.api_key, material_id)
    record.update_time = now_iso()
    materials_table(call.backend).execute(
        "UPDATE materials SET deleted = 1, record = ? WHERE material_id = ?",
        (json.dumps(record.to_wire()), material_id),
    )
