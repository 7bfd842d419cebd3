"""Object-storage emulation: presigned PUT URLs, objects, parts and ETags (interface §5).

The service never takes file bytes through its API: it hands out presigned URLs of an object
store. This module is that store; :mod:`dubkit.sandbox.multipart` keeps multipart sessions.
Routes (``storage_router``):

===========================================  ===============================================
``PUT /storage/{key}?expires=&signature=``    store an object (single upload)
``PUT /storage/{key}?uploadId=&partNumber=``  store one part of a multipart upload
``&expires=&signature=``
``GET|POST /_sandbox/storage``                admin: ``presignTtl``, ``recommendedPartSize``,
                                              ``putLatencyMs``; counts of refused PUTs
                                              (``expired``, ``signature``, ``incomplete``)
``GET /_sandbox/storage/uploads/{uploadId}``  admin: a session's state and parts (size,
                                              eTag, how many PUTs each took)
===========================================  ===============================================

Choices where the interface is silent (*choice*):

* *choice* URLs are signed with HMAC-SHA256 over method, key, upload id, part number and
  expiry, with a secret kept in the sandbox's settings. A changed character is ``403
  signature does not match``, a late PUT ``403 URL expired``. Lifetime ``presignTtl`` seconds
  (default 3600), reported as ``expiresInSeconds``. ``putLatencyMs`` delays every PUT before
  it is examined, like a slow network (tests use it to let URLs expire in flight).
* *choice* A PUT needs ``Content-Length`` (411 without, like S3); no other header and no API
  key. The answer is 200 with ``ETag: "<md5 of the bytes>"``.
* *choice* Bytes become the object (or part) only once all arrived, so a dropped connection
  never leaves half an object; a body shorter than its ``Content-Length`` is 400.
* *choice* ``upload_limit`` (admin ``/_sandbox/limits``, default 10 GiB) caps an object, and
  the sum of a multipart upload's parts: over it is ``413`` before the bytes are read. So is
  a PUT over its key's storage quota (:mod:`dubkit.sandbox.accounts`).
* Storage errors use the API's ``{code, message, data}`` shape with a matching HTTP status.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import secrets
import time
import weakref
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from ..schema import MIN_PART_SIZE
from ..schema.sandbox_admin import PartQuery, StorageSettings, StorageState, StoredPart, UploadState
from . import accounts, multipart
from .backend import Backend
from .database import Database

log = logging.getLogger("dubkit.sandbox")
storage_router = APIRouter(include_in_schema=False)


DEFAULT_PART_SIZE = 8 * 1024 * 1024
DEFAULT_PRESIGN_TTL = 3600.0
DEFAULT_UPLOAD_LIMIT = 10 * 1024**3
BUCKET = "dubkit-sandbox"

SCHEMA = """
CREATE TABLE IF NOT EXISTS storage_objects (
    key TEXT PRIMARY KEY, size INTEGER NOT NULL, etag TEXT NOT NULL, stored_at REAL NOT NULL);
"""
_refused: weakref.WeakKeyDictionary[Backend, Counter[str]] = weakref.WeakKeyDictionary()


def _store(backend: Backend) -> Database:
    return backend.db.ensure(SCHEMA)


def object_path(backend: Backend, key: str) -> Path:
    """Where the object ``key`` lives on disk (it may not exist)."""
    return backend.data_dir / "storage" / "objects" / key


def s3_uri(key: str) -> str:
    return f"s3://{BUCKET}/{key}"


def key_of(uri: str) -> str | None:
    prefix = f"s3://{BUCKET}/"
    return uri[len(prefix) :] if uri.startswith(prefix) else None


def stored_object(backend: Backend, key: str) -> dict[str, Any] | None:
    """``{key, size, etag}`` of a stored object, or None."""
    row = _store(backend).one("SELECT * FROM storage_objects WHERE key = ?", (key,))
    return dict(row) if row and object_path(backend, key).is_file() else None


def delete_object(backend: Backend, key: str) -> None:
    object_path(backend, key).unlink(missing_ok=True)
    _store(backend).execute("DELETE FROM storage_objects WHERE key = ?", (key,))


def create_multipart(backend: Backend, key: str) -> str:
    """A multipart session for ``key`` whose slot is today's recommended part size."""
    return multipart.create(backend, key, recommended_part_size(backend))


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


def presign_put(
    backend: Backend, key: str, *, upload_id: str | None = None, part_number: int | None = None
) -> str:
    """A URL that lets whoever holds it PUT ``key`` (or one part of it) until it expires."""
    expires = str(int((time.time() + presign_ttl(backend)) * 1000))
    upload, part = upload_id or "", str(part_number) if part_number else ""
    query = PartQuery(upload_id=upload, part_number=part).to_wire() if upload_id else {}
    query |= {"expires": expires, "signature": _signature(backend, key, upload, part, expires)}
    return f"{backend.base_url}/storage/{quote(key)}?{urlencode(query)}"


def _part_query(query: Any) -> PartQuery:
    """Which upload and part a PUT's query names (empty when it names none)."""
    return PartQuery.model_validate({k: v for k, v in query.items() if isinstance(v, str)})


def _check_signature(backend: Backend, key: str, query: Any) -> str | None:
    expires = query.get("expires", "")
    part = _part_query(query)
    wanted = _signature(backend, key, part.upload_id, part.part_number, expires)
    if not hmac.compare_digest(wanted, query.get("signature", "")):
        return "signature"
    if not expires.isdigit() or int(expires) < time.time() * 1000:
        return "expired"
    return None


# --------------------------------------------------------------------------- routes


def _refuse(status: int, message: str) -> JSONResponse:
    return JSONResponse({"code": status, "message": message, "data": None}, status_code=status)


def _note_refused(backend: Backend, problem: str) -> None:
    _refused.setdefault(backend, Counter())[problem] += 1


def _etag(etag: str) -> Response:
    return Response(status_code=200, headers={"ETag": f'"{etag}"'})


@storage_router.put("/storage/{key:path}")
async def put_object(key: str, request: Request) -> Response:
    backend: Backend = request.app.state.backend
    latency = float(backend.setting("put_latency_ms", 0))
    if latency:
        await asyncio.sleep(latency / 1000)
    query = request.query_params
    problem = _check_signature(backend, key, query)
    if problem:
        _note_refused(backend, problem)
        return _refuse(
            403,
            "URL expired: ask for a new presigned URL"
            if problem == "expired"
            else "signature does not match: this URL was changed or not made by this sandbox",
        )
    length = request.headers.get("content-length")
    if length is None or not length.isdigit():
        return _refuse(411, "Content-Length is required on a presigned PUT")
    size, limit = int(length), upload_limit(backend)
    incomplete = _refuse(400, f"incomplete body: Content-Length said {size} bytes")
    upload_id = _part_query(query).upload_id or None
    if upload_id is None:
        if size > limit:
            return _refuse(
                413, f"payload too large: the upload limit is {limit} bytes ({size} bytes sent)"
            )
        replaced = stored_object(backend, key)
        adding = size - (replaced or {"size": 0})["size"]
        with accounts.storage_room(backend, key, adding) as over_quota:
            if over_quota:
                return _refuse(413, over_quota)
            etag = await _receive(request, multipart.FileSink(object_path(backend, key)), size)
            if etag is None:
                _note_refused(backend, "incomplete")
                return incomplete
            _store(backend).execute(
                "INSERT OR REPLACE INTO storage_objects (key, size, etag, "
                "stored_at) VALUES (?, ?, ?, ?)",
                (key, size, etag, time.time()),
            )
        return _etag(etag)

    number = int(_part_query(query).part_number)  # a signed URL: its part number is one
    upload = multipart.open_upload(backend, upload_id)
    gone = _refuse(404, f"multipart upload not found or no longer open: {upload_id}")
    if upload is None:
        return gone
    total = multipart.stored_bytes(backend, upload_id, besides=number) + size
    if total > limit:
        return _refuse(
            413,
            f"payload too large: the upload limit is {limit} bytes ({total} bytes would be stored)",
        )
    replaced = sum(
        p["size"] for p in multipart.parts(backend, upload_id) if p["part_number"] == number
    )
    with accounts.storage_room(backend, upload["key"], size - replaced) as over_quota:
        if over_quota:
            return _refuse(413, over_quota)
        try:
            sink = multipart.part_sink(backend, upload, number, size)
            etag = await _receive(request, sink, size)
        except multipart.Closed:  # completed or aborted while this part was arriving
            return gone
        if etag is None:
            _note_refused(backend, "incomplete")
            return incomplete
        if not multipart.record_part(backend, upload, number, size, etag, in_slot=sink.in_slot):
            return gone
    # Not awaited: the client gets its ETag now, the hashing goes on beside the next parts.
    hashing = asyncio.get_running_loop().run_in_executor(
        None, multipart.extend_prefix_hash, backend, upload_id
    )
    hashing.add_done_callback(_log_failure)
    return _etag(etag)


async def _receive(request: Request, sink: Any, expected: int) -> str | None:
    """Stream the body into ``sink``; the MD5 of the bytes, or None if they were not all sent."""
    digest = hashlib.md5(usedforsecurity=False)
    received, pending, pending_size = 0, [], 0

    def write(chunks: list[bytes]) -> None:
        # hashlib and file writes free the GIL: parallel parts use more than one core.
        data = b"".join(chunks)
        digest.update(data)
        sink.write(data)

    complete = False
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if received > expected:
                return None
            pending.append(chunk)
            pending_size += len(chunk)
            if pending_size >= multipart.BLOCK:
                await run_in_threadpool(write, pending)
                pending, pending_size = [], 0
        write(pending)
        complete = received == expected
    except ClientDisconnect:
        return None
    finally:
        sink.close(keep=complete)
    return digest.hexdigest() if complete else None


def _settings(backend: Backend) -> dict[str, Any]:
    return StorageState(
        presign_ttl=presign_ttl(backend),
        recommended_part_size=recommended_part_size(backend),
        put_latency_ms=float(backend.setting("put_latency_ms", 0)),
        upload_limit=upload_limit(backend),
        min_part_size=MIN_PART_SIZE,
        refused=dict(_refused.get(backend, {})),
    ).model_dump(by_alias=True)


@storage_router.get("/_sandbox/storage")
def get_storage_settings(request: Request) -> dict[str, Any]:
    return _settings(request.app.state.backend)


@storage_router.post("/_sandbox/storage")
def set_storage_settings(body: StorageSettings, request: Request) -> dict[str, Any]:
    """Admin: URL lifetime, the part size initiate recommends, PUT latency."""
    backend: Backend = request.app.state.backend
    for name in ("presign_ttl", "recommended_part_size", "put_latency_ms"):
        if getattr(body, name) is not None:
            backend.set_setting(name, getattr(body, name))
    return _settings(backend)


@storage_router.get("/_sandbox/storage/uploads/{upload_id}")
def upload_parts(upload_id: str, request: Request) -> dict[str, Any]:
    """Admin: one multipart session's state and parts, with how many PUTs each part took."""
    backend: Backend = request.app.state.backend
    parts = [
        StoredPart(part_number=p["part_number"], size=p["size"], e_tag=p["etag"], puts=p["puts"])
        for p in multipart.parts(backend, upload_id)
        if p["puts"]  # a part whose first PUT is still arriving is not stored yet
    ]
    state = multipart.state(backend, upload_id)
    return UploadState(upload_id=upload_id, state=state, parts=parts).model_dump(by_alias=True)


def _log_failure(future: asyncio.Future[Any]) -> None:
    """Background hashing is an optimisation (complete re-hashes what is missing); say if it broke."""
    if not future.cancelled() and future.exception() is not None:
        log.error("background part hashing failed", exc_info=future.exception())
