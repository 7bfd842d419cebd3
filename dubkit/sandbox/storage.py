"""Object-storage emulation: presigned PUT URLs, single objects, multipart parts and ETags.

The service never takes file bytes through its API: it hands out presigned URLs of an object
store (interface §5). This module is that store. Routes (``storage_router``):

==========================================  ================================================
``PUT /storage/{key}?expires=&signature=``   store an object (single upload)
``PUT /storage/{key}?uploadId=&partNumber=`` store one part of a multipart upload
  ``&expires=&signature=``
``GET|POST /_sandbox/storage``               admin: ``{presignTtl, recommendedPartSize}``
``GET /_sandbox/storage/uploads/{id}``       admin: a multipart upload's parts (size, eTag,
                                             how many PUTs each took)
==========================================  ================================================

Choices where the interface is silent (*choice*):

* *choice* URLs are signed with HMAC-SHA256 over method, key, upload id, part number and expiry
  with a secret kept in the sandbox's settings. A changed character or an expired URL is
  ``403`` (``signature does not match`` / ``URL expired``). Lifetime: ``presignTtl`` seconds
  (default 3600), reported as ``expiresInSeconds``.
* *choice* A PUT needs ``Content-Length`` (411 without, like S3); no other header is required
  and no API key is sent. Any 2xx is success; the reply carries ``ETag: "<md5 of the bytes>"``.
* *choice* Bytes stream to a temporary file and become the object only once all arrived, so a
  dropped connection never leaves half an object or half a part. Re-sending a part replaces it.
* *choice* ``upload_limit`` (admin ``/_sandbox/limits``, default 10 GiB) caps one object, and
  for multipart the sum of its parts: over it is ``413`` before the bytes are read.
* *choice* Every part but the last must be at least ``MIN_PART_SIZE`` (5 MiB); parts listed at
  completion must be in ascending order, without repeats, with the ETag each PUT answered.
* Storage errors use the API's ``{code, message, data}`` shape with a matching HTTP status.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import shutil
import time
import uuid
import weakref
from pathlib import Path
from typing import Any, Optional, Sequence
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from ..schema import Wire
from .backend import Backend, ServiceError
from .store import Store

storage_router = APIRouter(include_in_schema=False)

MIN_PART_SIZE = 5 * 1024 * 1024
DEFAULT_PART_SIZE = 8 * 1024 * 1024
DEFAULT_PRESIGN_TTL = 3600.0
DEFAULT_UPLOAD_LIMIT = 10 * 1024 ** 3
BUCKET = "dubkit-sandbox"
_WRITE_BLOCK = 1 << 20          # hand bytes to a worker thread a MiB at a time

SCHEMA = """
CREATE TABLE IF NOT EXISTS storage_objects (
    key TEXT PRIMARY KEY, size INTEGER NOT NULL, etag TEXT NOT NULL, stored_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS storage_uploads (
    upload_id TEXT PRIMARY KEY, key TEXT NOT NULL, state TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS storage_parts (
    upload_id TEXT NOT NULL, part_number INTEGER NOT NULL, size INTEGER NOT NULL,
    etag TEXT NOT NULL, puts INTEGER NOT NULL DEFAULT 1, PRIMARY KEY (upload_id, part_number));
"""
_ready: "weakref.WeakSet[Store]" = weakref.WeakSet()


def _store(backend: Backend) -> Store:
    if backend.store not in _ready:
        backend.store.ensure(SCHEMA)
        _ready.add(backend.store)
    return backend.store


def _root(backend: Backend) -> Path:
    return backend.data_dir / "storage"


def object_path(backend: Backend, key: str) -> Path:
    """Where the object ``key`` lives on disk (it may not exist)."""
    return _root(backend) / "objects" / key


def _part_path(backend: Backend, upload_id: str, part_number: int) -> Path:
    return _root(backend) / "parts" / upload_id / f"{part_number:05d}"


def s3_uri(key: str) -> str:
    return f"s3://{BUCKET}/{key}"


def key_of(uri: str) -> str | None:
    prefix = f"s3://{BUCKET}/"
    return uri[len(prefix):] if uri.startswith(prefix) else None


# --------------------------------------------------------------------------- settings, signing

def presign_ttl(backend: Backend) -> int:
    return int(backend.setting("presign_ttl", DEFAULT_PRESIGN_TTL))


def recommended_part_size(backend: Backend) -> int:
    return int(backend.setting("recommended_part_size", DEFAULT_PART_SIZE))


def upload_limit(backend: Backend) -> int:
    return int(backend.setting("upload_limit", DEFAULT_UPLOAD_LIMIT))


def _secret(backend: Backend) -> bytes:
    secret = backend.setting("storage_secret")
    if secret is None:
        secret = secrets.token_hex(32)
        backend.set_setting("storage_secret", secret)
    return secret.encode()


def _signature(backend: Backend, key: str, upload_id: str, part: str, expires: str) -> str:
    message = "\n".join(("PUT", key, upload_id, part, expires)).encode()
    return hmac.new(_secret(backend), message, hashlib.sha256).hexdigest()


def presign_put(backend: Backend, key: str, *, upload_id: str | None = None,
                part_number: int | None = None) -> str:
    """A URL that lets anyone holding it PUT ``key`` (or one part of it) until it expires."""
    expires = str(int((time.time() + presign_ttl(backend)) * 1000))
    upload, part = upload_id or "", str(part_number) if part_number else ""
    query = {"uploadId": upload, "partNumber": part} if upload_id else {}
    query |= {"expires": expires, "signature": _signature(backend, key, upload, part, expires)}
    return f"{backend.base_url}/storage/{quote(key)}?{urlencode(query)}"


def _check_signature(backend: Backend, key: str, query: Any) -> str | None:
    expires = query.get("expires", "")
    wanted = _signature(backend, key, query.get("uploadId", ""), query.get("partNumber", ""),
                        expires)
    if not hmac.compare_digest(wanted, query.get("signature", "")):
        return "signature does not match: this URL was changed or not made by this sandbox"
    if not expires.isdigit() or int(expires) < time.time() * 1000:
        return "URL expired: ask for a new presigned URL"
    return None


# --------------------------------------------------------------------------- multipart sessions

def create_multipart(backend: Backend, key: str) -> str:
    upload_id = uuid.uuid4().hex
    _store(backend).execute("INSERT INTO storage_uploads (upload_id, key, state, created_at) "
                            "VALUES (?, ?, 'open', ?)", (upload_id, key, time.time()))
    return upload_id


def _open_upload(backend: Backend, upload_id: str) -> dict[str, Any] | None:
    row = _store(backend).one("SELECT * FROM storage_uploads WHERE upload_id = ? AND "
                              "state = 'open'", (upload_id,))
    return dict(row) if row else None


def parts(backend: Backend, upload_id: str) -> list[dict[str, Any]]:
    return [dict(r) for r in _store(backend).all(
        "SELECT part_number, size, etag, puts FROM storage_parts WHERE upload_id = ? "
        "ORDER BY part_number", (upload_id,))]


def complete_multipart(backend: Backend, upload_id: str,
                       listed: Sequence[tuple[int, str]]) -> tuple[Path, int, str]:
    """Join the listed parts into the object; return its path, size and MD5.

    Refuses (400) a list that is empty, out of order, names a part not stored or an ETag that
    is not the stored part's, or has a part under ``MIN_PART_SIZE`` before the last. The
    session stays open after a refusal, so the caller can fix it and complete again.
    """
    upload = _open_upload(backend, upload_id)
    if upload is None:
        raise ServiceError(404, f"multipart upload not found or no longer open: {upload_id}")
    if not listed:
        raise ServiceError(400, "invalid request: parts: list every uploaded part as "
                                "{partNumber, eTag}")
    stored = {p["part_number"]: p for p in parts(backend, upload_id)}
    previous = 0
    for i, (number, etag) in enumerate(listed):
        if number <= previous:
            raise ServiceError(400, f"invalid request: parts[{i}].partNumber: parts must be "
                                    f"listed in ascending order without repeats (got {number} "
                                    f"after {previous})")
        previous = number
        part = stored.get(number)
        if part is None:
            raise ServiceError(400, f"invalid request: parts[{i}]: part {number} was never "
                                    f"uploaded")
        if etag.strip().strip('"').lower() != part["etag"]:
            raise ServiceError(400, f"invalid request: parts[{i}].eTag: {etag!r} is not the "
                                    f"ETag of part {number} as stored (send the ETag its PUT "
                                    f"answered)")
        if i < len(listed) - 1 and part["size"] < MIN_PART_SIZE:
            raise ServiceError(400, f"invalid request: parts[{i}]: part {number} is "
                                    f"{part['size']} bytes; every part but the last must be at "
                                    f"least {MIN_PART_SIZE} bytes (5 MiB)")
    target = object_path(backend, upload["key"])
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.partial")
    digest = hashlib.md5(usedforsecurity=False)
    size = 0
    try:
        with open(partial, "wb") as out:
            block = bytearray(_WRITE_BLOCK)
            view = memoryview(block)
            for number, _ in listed:
                with open(_part_path(backend, upload_id, number), "rb") as part_file:
                    while count := part_file.readinto(block):
                        digest.update(view[:count])
                        out.write(view[:count])
                        size += count
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target, size, digest.hexdigest()


def finish_multipart(backend: Backend, upload_id: str, state: str = "completed") -> None:
    """Close a session (``completed`` or ``aborted``) and delete its parts."""
    store = _store(backend)
    with store.transaction() as db:
        db.execute("UPDATE storage_uploads SET state = ? WHERE upload_id = ?", (state, upload_id))
        db.execute("DELETE FROM storage_parts WHERE upload_id = ?", (upload_id,))
    shutil.rmtree(_root(backend) / "parts" / upload_id, ignore_errors=True)


def delete_object(backend: Backend, key: str) -> None:
    object_path(backend, key).unlink(missing_ok=True)
    _store(backend).execute("DELETE FROM storage_objects WHERE key = ?", (key,))


def stored_object(backend: Backend, key: str) -> dict[str, Any] | None:
    row = _store(backend).one("SELECT * FROM storage_objects WHERE key = ?", (key,))
    return dict(row) if row and object_path(backend, key).is_file() else None


# --------------------------------------------------------------------------- routes

def _refuse(status: int, message: str) -> JSONResponse:
    return JSONResponse({"code": status, "message": message, "data": None}, status_code=status)


@storage_router.put("/storage/{key:path}")
async def put_object(key: str, request: Request) -> Response:
    backend: Backend = request.app.state.backend
    query = request.query_params
    problem = _check_signature(backend, key, query)
    if problem:
        return _refuse(403, problem)
    upload_id = query.get("uploadId") or None
    part_number = int(query["partNumber"]) if upload_id else None
    length = request.headers.get("content-length")
    if length is None or not length.isdigit():
        return _refuse(411, "Content-Length is required on a presigned PUT")
    expected = int(length)
    limit, already = upload_limit(backend), 0
    if upload_id:
        if _open_upload(backend, upload_id) is None:
            return _refuse(404, f"multipart upload not found or no longer open: {upload_id}")
        already = sum(p["size"] for p in parts(backend, upload_id)
                      if p["part_number"] != part_number)
    if already + expected > limit:
        return _refuse(413, f"payload too large: the upload limit is {limit} bytes "
                            f"({already + expected} bytes would be stored)")
    target = _part_path(backend, upload_id, part_number) if upload_id else \
        object_path(backend, key)
    etag = await _receive(request, target, expected)
    if etag is None:
        return _refuse(400, f"incomplete body: Content-Length said {expected} bytes")
    store = _store(backend)
    if upload_id:
        if _open_upload(backend, upload_id) is None:   # aborted while the bytes arrived
            target.unlink(missing_ok=True)
            return _refuse(404, f"multipart upload not found or no longer open: {upload_id}")
        store.execute("INSERT INTO storage_parts (upload_id, part_number, size, etag) "
                      "VALUES (?, ?, ?, ?) ON CONFLICT (upload_id, part_number) DO UPDATE SET "
                      "size = excluded.size, etag = excluded.etag, puts = puts + 1",
                      (upload_id, part_number, expected, etag))
    else:
        store.execute("INSERT OR REPLACE INTO storage_objects (key, size, etag, stored_at) "
                      "VALUES (?, ?, ?, ?)", (key, expected, etag, time.time()))
    return Response(status_code=200, headers={"ETag": f'"{etag}"'})


async def _receive(request: Request, target: Path, expected: int) -> str | None:
    """Stream the body to ``target`` through a temporary file; its MD5, or None if short."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.partial")
    digest = hashlib.md5(usedforsecurity=False)
    received = 0
    pending: list[bytes] = []
    pending_size = 0

    def write(out: Any, chunks: list[bytes]) -> None:
        # hashlib and file writes release the GIL: parallel parts use more than one core.
        data = b"".join(chunks)
        digest.update(data)
        out.write(data)

    try:
        with open(partial, "wb") as out:
            try:
                async for chunk in request.stream():
                    received += len(chunk)
                    if received > expected:
                        return None
                    pending.append(chunk)
                    pending_size += len(chunk)
                    if pending_size >= _WRITE_BLOCK:
                        await run_in_threadpool(write, out, pending)
                        pending, pending_size = [], 0
            except ClientDisconnect:
                return None
            write(out, pending)
        if received != expected:
            return None
        os.replace(partial, target)
        return digest.hexdigest()
    finally:
        partial.unlink(missing_ok=True)


class StorageSettings(Wire):
    presign_ttl: Optional[float] = Field(default=None, gt=0)
    recommended_part_size: Optional[int] = Field(default=None, ge=MIN_PART_SIZE)


def _settings(backend: Backend) -> dict[str, Any]:
    return {"presignTtl": presign_ttl(backend), "recommendedPartSize":
            recommended_part_size(backend), "uploadLimit": upload_limit(backend),
            "minPartSize": MIN_PART_SIZE}


@storage_router.get("/_sandbox/storage")
def get_storage_settings(request: Request) -> dict[str, Any]:
    return _settings(request.app.state.backend)


@storage_router.post("/_sandbox/storage")
def set_storage_settings(body: StorageSettings, request: Request) -> dict[str, Any]:
    """Admin: URL lifetime and the part size initiate recommends (tests, demos)."""
    backend: Backend = request.app.state.backend
    for name in ("presign_ttl", "recommended_part_size"):
        if getattr(body, name) is not None:
            backend.set_setting(name, getattr(body, name))
    return _settings(backend)


@storage_router.get("/_sandbox/storage/uploads/{upload_id}")
def upload_parts(upload_id: str, request: Request) -> dict[str, Any]:
    """Admin: one multipart upload's state and parts, with how many PUTs each part took."""
    backend: Backend = request.app.state.backend
    row = _store(backend).one("SELECT state FROM storage_uploads WHERE upload_id = ?",
                              (upload_id,))
    return {"uploadId": upload_id, "state": row["state"] if row else None,
            "parts": [{"partNumber": p["part_number"], "size": p["size"], "eTag": p["etag"],
                       "puts": p["puts"]} for p in parts(backend, upload_id)]}
