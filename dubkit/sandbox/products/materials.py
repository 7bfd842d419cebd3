"""Materials (interface §2.6, §3.1, §5): upload sessions, registration, list, soft delete.

The bytes go to :mod:`dubkit.sandbox.storage` through presigned URLs; this module hands out
those URLs and turns a finished upload into a material record.

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
import re
import threading
import weakref
from pathlib import Path
from typing import Any

from ...schema import (MaterialIdBody, MultipartComplete, MultipartRef, PageQuery, PresignParts,
                       UploadComplete, UploadStart)
from .. import multipart, storage
from ..backend import Backend, ServiceError, new_id, now_iso
from ...media import av
from ..operations import Call, handles
from ..store import Store
from .common import page_rows

log = logging.getLogger("dubkit.sandbox")
MAX_PRESIGN = 1000      # part URLs per presign-parts call (the interface states no maximum)

SCHEMA = """
CREATE TABLE IF NOT EXISTS material_uploads (
    material_id TEXT PRIMARY KEY, api_key TEXT NOT NULL, kind TEXT NOT NULL, upload_id TEXT,
    file_hash TEXT NOT NULL, file_name TEXT NOT NULL, object_key TEXT NOT NULL,
    state TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS materials (
    material_id TEXT PRIMARY KEY, api_key TEXT NOT NULL, file_hash TEXT NOT NULL,
    relpath TEXT NOT NULL, object_key TEXT NOT NULL, record TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS materials_by_hash ON materials (api_key, file_hash, deleted);
CREATE INDEX IF NOT EXISTS materials_by_key ON materials (api_key, deleted, seq);
"""


def _store(backend: Backend) -> Store:
    return backend.store.ensure(SCHEMA)


# --------------------------------------------------------------------------- for other products

def find_material(backend: Backend, api_key: str, material_id: str) -> dict[str, Any]:
    """The registered, live material ``material_id`` of ``api_key`` (§3.1 record), else 404.

    The 404 says why: never registered (an unfinished upload's id), deleted, or unknown.
    """
    row = _store(backend).one("SELECT * FROM materials WHERE material_id = ? AND api_key = ?",
                              (material_id, api_key))
    if row is not None and not row["deleted"]:
        return json.loads(row["record"])
    if row is not None:
        raise ServiceError(404, f"material not found: {material_id} was deleted")
    if _session_row(backend, api_key, material_id) is not None:
        raise ServiceError(404, f"material not found: {material_id} is an upload that was never "
                                f"completed; only a registered material can be used")
    raise ServiceError(404, f"material not found: {material_id}")


def is_live(backend: Backend, material_id: str) -> bool:
    """Whether ``material_id`` is registered and not deleted (for serving its files)."""
    return _store(backend).one("SELECT 1 FROM materials WHERE material_id = ? AND deleted = 0",
                               (material_id,)) is not None


def material_path(backend: Backend, api_key: str, material_id: str) -> Path:
    """The main file of a registered, live material (404 as :func:`find_material`)."""
    find_material(backend, api_key, material_id)
    row = _store(backend).one("SELECT relpath FROM materials WHERE material_id = ?",
                              (material_id,))
    return backend.file_path(row["relpath"])   # type: ignore[index]


# --------------------------------------------------------------------------- sessions

def _safe_name(file_name: str) -> str:
    stem, dot, ext = Path(file_name).name.rpartition(".")
    stem, ext = (stem, ext) if dot else (ext, "")
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "file"
    ext = re.sub(r"[^A-Za-z0-9]+", "", ext)[:10]
    return f"{clean[:80]}.{ext}" if ext else clean[:80]


def _open_session(call: Call, body: UploadStart, kind: str) -> dict[str, Any]:
    material_id = new_id("mat_")
    key = f"materials/{material_id}/{_safe_name(body.file_name)}"
    upload_id = storage.create_multipart(call.backend, key) if kind == "multipart" else None
    _store(call.backend).execute(
        "INSERT INTO material_uploads (material_id, api_key, kind, upload_id, file_hash, "
        "file_name, object_key, state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'open', ?)",
        (material_id, call.api_key, kind, upload_id, body.file_hash.lower(), body.file_name,
         key, now_iso()))
    return _session_row(call.backend, call.api_key, material_id)  # type: ignore[return-value]


def upload_sessions(backend: Backend, api_key: str) -> list[dict[str, Any]]:
    """Every upload session of a key, oldest first (for the admin view)."""
    return [{"materialId": r["material_id"], "kind": r["kind"], "state": r["state"],
             "fileName": r["file_name"], "createdAt": r["created_at"]}
            for r in _store(backend).all("SELECT * FROM material_uploads WHERE api_key = ? "
                                         "ORDER BY created_at, rowid", (api_key,))]


def _session_row(backend: Backend, api_key: str, material_id: str) -> dict[str, Any] | None:
    row = _store(backend).one("SELECT * FROM material_uploads WHERE material_id = ? AND "
                              "api_key = ?", (material_id, api_key))
    return dict(row) if row else None


def _session(call: Call, material_id: str | None, kind: str, file_hash: str | None,
             upload_id: str | None = None, *, need_hash: bool = True) -> dict[str, Any]:
    """The caller's upload session, checked against what the request claims about it."""
    if not material_id:
        raise ServiceError(400, "invalid request: materialId: is required (from "
                                "gen-upload-url or multipart/initiate)")
    session = _session_row(call.backend, call.api_key, material_id)
    if session is None:
        raise ServiceError(404, f"upload not found: materialId {material_id}")
    if session["kind"] != kind:
        other = "multipart/complete" if session["kind"] == "multipart" else "upload/complete"
        raise ServiceError(400, f"invalid request: materialId: {material_id} is a "
                                f"{session['kind']} upload; finish it with {other}")
    if kind == "multipart" and upload_id != session["upload_id"]:
        raise ServiceError(400, "invalid request: uploadId: "
                                + ("is required" if not upload_id else
                                   f"{upload_id!r} is not the upload of materialId {material_id}"))
    if (file_hash or need_hash) and (file_hash or "").lower() != session["file_hash"]:
        raise ServiceError(400, f"invalid request: fileHash: must equal the hash given when the "
                                f"upload started ({session['file_hash']})")
    return session


def _claim(call: Call, session: dict[str, Any]) -> None:
    """Move an open session to 'completing' so two completions cannot both register it."""
    state = session["state"]
    if state == "completed":
        raise ServiceError(400, f"upload already completed: material {session['material_id']} "
                                f"is registered (see material/list)")
    cursor = _store(call.backend).execute(
        "UPDATE material_uploads SET state = 'completing' WHERE material_id = ? AND "
        "state = 'open'", (session["material_id"],))
    if cursor.rowcount == 0:
        # 400, not 409: 409 means a reused idempotency key to every client of the service.
        raise ServiceError(404 if state in ("aborted", "failed") else 400,
                           f"upload {session['material_id']} is {state}, not open")


def _set_state(backend: Backend, material_id: str, state: str) -> None:
    _store(backend).execute("UPDATE material_uploads SET state = ? WHERE material_id = ?",
                            (state, material_id))


# --------------------------------------------------------------------------- registration

def _live_by_hash(backend: Backend, api_key: str, file_hash: str) -> dict[str, Any] | None:
    row = _store(backend).one("SELECT * FROM materials WHERE api_key = ? AND file_hash = ? AND "
                              "deleted = 0 ORDER BY seq LIMIT 1", (api_key, file_hash))
    return dict(row) if row else None


_registering: "weakref.WeakKeyDictionary[Backend, dict[tuple[str, str], threading.Lock]]" = \
    weakref.WeakKeyDictionary()
_registering_guard = threading.Lock()


def _register(call: Call, session: dict[str, Any], path: Path, size: int) -> dict[str, Any]:
    """Turn the stored object at ``path`` into a material (or answer the existing duplicate).

    The duplicate check and the insert are one step per key and content: concurrent uploads
    of the same bytes wait for each other here and all answer the one material.
    """
    with _registering_guard:
        lock = _registering.setdefault(call.backend, {}).setdefault(
            (call.api_key, session["file_hash"]), threading.Lock())
    with lock:
        return _register_now(call, session, path, size)


def _register_now(call: Call, session: dict[str, Any], path: Path, size: int
                  ) -> dict[str, Any]:
    backend, material_id = call.backend, session["material_id"]
    duplicate = _live_by_hash(backend, call.api_key, session["file_hash"])
    if duplicate is not None:
        storage.delete_object(backend, session["object_key"])
        _set_state(backend, material_id, "completed")
        return json.loads(duplicate["record"])
    try:
        info = av.probe(path)
    except av.MediaError as exc:
        storage.delete_object(backend, session["object_key"])
        _set_state(backend, material_id, "failed")
        reason = str(exc).splitlines()[0]
        raise ServiceError(422, f"the uploaded file {session['file_name']!r} is not audio or "
                                f"video the service can read ({reason}); nothing was "
                                f"registered") from None
    folder = f"materials/{material_id}"
    relpath = f"{folder}/{Path(session['object_key']).name}"
    backend.file_path(folder).mkdir(parents=True, exist_ok=True)
    os.replace(path, backend.file_path(relpath))
    stamp = now_iso()
    record: dict[str, Any] = {
        "materialId": material_id, "category": info.category, "name": session["file_name"],
        "addressUrl": backend.file_url(relpath), "mimeType": info.mime_type,
        "fileHash": session["file_hash"], "filesize": size,
        "duration": int(round(info.duration * 1000)), "createTime": stamp, "updateTime": stamp}
    record |= _derived_files(backend, folder, backend.file_path(relpath), info, record)
    store = _store(backend)
    with store.transaction() as db:
        seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM materials").fetchone()[0]
        db.execute("INSERT INTO materials (material_id, api_key, file_hash, relpath, object_key, "
                   "record, seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (material_id, call.api_key, session["file_hash"], relpath,
                    session["object_key"], json.dumps(record), seq))
        db.execute("UPDATE material_uploads SET state = 'completed' WHERE material_id = ?",
                   (material_id,))
    storage.delete_object(backend, session["object_key"])
    return record


def _derived_files(backend: Backend, folder: str, path: Path, info: av.MediaInfo,
                   record: dict[str, Any]) -> dict[str, Any]:
    """Thumbnail, audio track and resolution; a step ffmpeg cannot do is left out, not fatal."""
    extra: dict[str, Any] = {}
    if info.category == "audio":
        return {"audioUrl": record["addressUrl"]}
    if info.width and info.height:
        extra["resolution"] = f"{info.width}x{info.height}"
    for name, field, make in (("thumbnail.jpg", "thumbnailUrl", av.thumbnail),
                              ("audio.m4a", "audioUrl", av.extract_audio)):
        if field == "audioUrl" and not info.has_audio:
            continue
        try:
            make(path, backend.file_path(f"{folder}/{name}"))
            extra[field] = backend.file_url(f"{folder}/{name}")
        except av.MediaError as exc:
            log.warning("material %s: no %s: %s", folder, field, str(exc).splitlines()[0])
    return extra


# --------------------------------------------------------------------------- single upload

@handles("materials.gen_upload_url")
def gen_upload_url(call: Call) -> dict[str, Any]:
    body: UploadStart = call.body  # type: ignore[assignment]
    duplicate = _live_by_hash(call.backend, call.api_key, body.file_hash.lower())
    if duplicate is not None:
        record = json.loads(duplicate["record"])
        return {"uploadUrl": "", "material": record, "materialId": record["materialId"],
                "s3Uri": storage.s3_uri(duplicate["object_key"])}
    session = _open_session(call, body, "single")
    key = session["object_key"]
    return {"uploadUrl": storage.presign_put(call.backend, key), "s3Uri": storage.s3_uri(key),
            "materialId": session["material_id"]}


@handles("materials.complete")
def complete(call: Call) -> dict[str, Any]:
    body: UploadComplete = call.body  # type: ignore[assignment]
    session = _session(call, body.material_id, "single", body.file_hash)
    if storage.key_of(body.s3_uri) != session["object_key"]:
        raise ServiceError(400, f"invalid request: s3Uri: not the storage target of materialId "
                                f"{body.material_id} (send the s3Uri gen-upload-url answered)")
    _claim(call, session)
    try:
        stored = storage.stored_object(call.backend, session["object_key"])
        if stored is None:
            raise ServiceError(400, "no file at the upload URL yet: PUT the bytes to uploadUrl "
                                    "before completing")
        if stored["etag"] != session["file_hash"]:
            raise ServiceError(400, f"invalid request: fileHash: the uploaded bytes have MD5 "
                                    f"{stored['etag']}, not {session['file_hash']}; PUT the "
                                    f"right file again")
    except ServiceError:
        _set_state(call.backend, session["material_id"], "open")
        raise
    return _register(call, session, storage.object_path(call.backend, session["object_key"]),
                     stored["size"])


# --------------------------------------------------------------------------- multipart

@handles("materials.multipart_initiate")
def multipart_initiate(call: Call) -> dict[str, Any]:
    session = _open_session(call, call.body, "multipart")  # type: ignore[arg-type]
    return {"materialId": session["material_id"], "s3Uri": storage.s3_uri(session["object_key"]),
            "uploadId": session["upload_id"],
            "expiresInSeconds": storage.presign_ttl(call.backend),
            "recommendedPartSize": storage.recommended_part_size(call.backend)}


@handles("materials.multipart_presign")
def multipart_presign(call: Call) -> dict[str, Any]:
    body: PresignParts = call.body  # type: ignore[assignment]
    session = _session(call, body.material_id, "multipart", body.file_hash, body.upload_id,
                       need_hash=False)
    if session["state"] != "open":
        raise ServiceError(404, f"upload {session['material_id']} is {session['state']}, "
                                f"not open")
    if not body.part_numbers:
        raise ServiceError(400, "invalid request: partNumbers: list the parts to presign "
                                "(1-10000)")
    if len(body.part_numbers) > MAX_PRESIGN:
        raise ServiceError(400, f"invalid request: partNumbers: at most {MAX_PRESIGN} per "
                                f"call, got {len(body.part_numbers)}; ask for the rest in "
                                f"further calls")
    urls = [{"partNumber": n, "url": storage.presign_put(
        call.backend, session["object_key"], upload_id=session["upload_id"], part_number=n)}
        for n in body.part_numbers]
    return {"urls": urls, "expiresInSeconds": storage.presign_ttl(call.backend)}


@handles("materials.multipart_complete")
def multipart_complete(call: Call) -> dict[str, Any]:
    body: MultipartComplete = call.body  # type: ignore[assignment]
    session = _session(call, body.material_id, "multipart", body.file_hash, body.upload_id)
    _claim(call, session)
    backend, upload_id = call.backend, session["upload_id"]
    try:
        path = storage.object_path(backend, session["object_key"])
        size = multipart.complete(backend, upload_id,
                                  [(p.part_number, p.e_tag) for p in body.parts or []],
                                  session["file_hash"], path)
    except ServiceError:
        _set_state(backend, session["material_id"], "open")
        raise
    if size > storage.upload_limit(backend):
        storage.delete_object(backend, session["object_key"])
        multipart.finish(backend, upload_id, "aborted")
        _set_state(backend, session["material_id"], "aborted")
        raise ServiceError(413, f"payload too large: {size} bytes; the upload limit is "
                                f"{storage.upload_limit(backend)} bytes")
    try:
        record = _register(call, session, path, size)
    except ServiceError:
        multipart.finish(backend, upload_id, "aborted")
        raise
    multipart.finish(backend, upload_id)
    return record


@handles("materials.multipart_abort")
def multipart_abort(call: Call) -> None:
    body: MultipartRef = call.body  # type: ignore[assignment]
    session = _session(call, body.material_id, "multipart", body.file_hash, body.upload_id)
    if session["state"] == "completed":
        raise ServiceError(400, f"upload already completed: material {session['material_id']} "
                                f"is registered; delete it with material/delete")
    if session["state"] == "open":
        multipart.finish(call.backend, session["upload_id"], "aborted")
        _set_state(call.backend, session["material_id"], "aborted")
    return None


# --------------------------------------------------------------------------- list, delete

@handles("materials.list")
def list_materials(call: Call) -> dict[str, Any]:
    query: PageQuery = call.body  # type: ignore[assignment]
    rows, total = page_rows(_store(call.backend), "SELECT record FROM materials WHERE "
                            "api_key = ? AND deleted = 0 ORDER BY seq DESC", (call.api_key,),
                            query.current_page, query.page_size, default_size=20)
    return {"records": [json.loads(r["record"]) for r in rows], "total": total}


@handles("materials.delete")
def delete(call: Call) -> None:
    body: MaterialIdBody = call.body  # type: ignore[assignment]
    if not body.material_id:
        raise ServiceError(400, "invalid request: materialId: is required")
    record = find_material(call.backend, call.api_key, body.material_id)
    record["updateTime"] = now_iso()
    _store(call.backend).execute("UPDATE materials SET deleted = 1, record = ? WHERE "
                                 "material_id = ?", (json.dumps(record), body.material_id))
    return None
