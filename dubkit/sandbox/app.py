"""The sandbox's HTTP layer: auth, envelope, idempotency, req_id, faults. No product rules here.

Every answer under ``/openapi/v1`` is the service's envelope ``{code, message, data}``, including
framework-level failures (unknown path, wrong method, malformed JSON): never a default error body.
Admin routes live under ``/_sandbox`` (see :mod:`dubkit.sandbox.admin`); generated files are served
under ``/files``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from ..errors import ValidationError
from ..schema import MAX_IDEMPOTENCY_KEY, OPERATIONS_BY_PATH, Operation, parse
from . import products  # noqa: F401  (registers every product's handlers)
from .admin import admin_router
from .backend import Backend, ServiceError
from .operations import HANDLERS, Call
from .storage import storage_router

log = logging.getLogger("dubkit.sandbox")
PREFIX = "/openapi/v1"
DEFAULT_BODY_LIMIT = 8 * 1024 * 1024


def envelope(code: int, message: str = "", data: Any = None, *,
             headers: dict[str, str] | None = None) -> JSONResponse:
    # choice: the HTTP status mirrors the business code for errors (see backend docstring)
    return JSONResponse({"code": code, "message": message, "data": data},
                        status_code=200 if code == 200 else code, headers=headers)


def create_app(backend: Backend) -> FastAPI:
    app = FastAPI(title="dubkit sandbox", docs_url="/_sandbox/docs", redoc_url=None,
                  openapi_url="/_sandbox/openapi.json")
    app.state.backend = backend
    app.include_router(admin_router)
    app.include_router(storage_router)

    @app.exception_handler(StarletteHTTPException)
    async def _framework_error(request: Request, exc: StarletteHTTPException) -> Response:
        return envelope(exc.status_code, f"{exc.detail}: {request.method} {request.url.path}")

    @app.get("/files/{relpath:path}", include_in_schema=False)
    async def _files(relpath: str) -> Response:
        path = (backend.files_dir / relpath).resolve()
        if not path.is_relative_to(backend.files_dir.resolve()) or not path.is_file():
            return envelope(404, f"file not found: {relpath}")
        return FileResponse(path)

    @app.api_route(PREFIX + "/{path:path}", methods=["GET", "POST", "PUT", "DELETE", "PATCH"])
    async def _operation(path: str, request: Request) -> Response:
        return await _serve(backend, "/" + path, request)

    return DropResponseMiddleware(app)


async def _serve(backend: Backend, path: str, request: Request) -> Response:
    """Answer one API call; every refusal along the way is a ServiceError -> envelope."""
    faults = backend.setting("faults", {})
    targeted = _targeted(faults, path)
    try:
        api_key = _authenticate(backend, request)
        op = _operation(request.method, path)
        raw_bytes = await _read_body(backend, request)
        if targeted and faults.get("latencyMs"):
            # After the body arrived, like a slow service: the work still happens even if
            # the client gives up waiting.
            await asyncio.sleep(float(faults["latencyMs"]) / 1000)
        raw = _decode(op, raw_bytes, request)
        idem = _idempotency_key(op, request)
        model = op.body or op.query
        try:
            body = parse(model, raw) if model else None
        except ValidationError as exc:
            raise ServiceError(400, f"invalid request: {exc}") from None
        if targeted and backend.fault_rng.random() < float(faults.get("error502Before", 0)):
            raise ServiceError(502, "bad gateway (injected by the sandbox before any work)")
        req_id = request.query_params.get("req_id") or uuid.uuid4().hex   # tracing only
        data = await _run_under_key(backend, Call(backend, api_key, op, body, raw, idem, req_id), path)
    except ServiceError as exc:
        return envelope(exc.code, exc.message, headers=exc.headers)
    except ClientDisconnect:
        return Response(status_code=499)   # nobody is listening; nothing was done

    if targeted and backend.fault_rng.random() < float(faults.get("dropAfterCommit", 0)):
        request.scope["dubkit.drop"] = True
    if targeted and backend.fault_rng.random() < float(faults.get("error502After", 0)):
        return envelope(502, "bad gateway (injected by the sandbox after the work was "
                             "committed); poll tasks/detail or wait for the webhook")
    return envelope(200, "", data)


def _operation(method: str, path: str) -> Operation:
    op = OPERATIONS_BY_PATH.get((method, path))
    if op is None:
        known = any(p == path for (_, p) in OPERATIONS_BY_PATH)
        raise ServiceError(405 if known else 404,
                           f"{'method not allowed' if known else 'no such endpoint'}: "
                           f"{method} {PREFIX}{path}")
    return op


def _authenticate(backend: Backend, request: Request) -> str:
    api_key = _bearer(request)
    if api_key is None or backend.key(api_key) is None:
        raise ServiceError(401, "unauthorized: API key missing or invalid "
                                "(send 'Authorization: Bearer <api_key>')")
    return api_key


async def _read_body(backend: Backend, request: Request) -> bytes:
    limit = int(backend.setting("body_limit", DEFAULT_BODY_LIMIT))
    too_large = ServiceError(413, f"payload too large: the body limit is {limit} bytes")
    if int(request.headers.get("content-length") or 0) > limit:
        raise too_large
    raw_bytes = await request.body()
    if len(raw_bytes) > limit:
        raise too_large
    return raw_bytes


def _decode(op: Operation, raw_bytes: bytes, request: Request) -> dict[str, Any]:
    """POST: the JSON object body; GET: the query parameters (``req_id`` is only for tracing)."""
    if op.method != "POST":
        return {k: v for k, v in request.query_params.items() if k != "req_id"}
    try:
        raw = json.loads(raw_bytes) if raw_bytes.strip() else None
    except ValueError as exc:
        raise ServiceError(400, f"malformed JSON body: {exc}") from None
    if raw is None and op.idempotency_required:
        raise ServiceError(400, "body: a JSON object is required")
    if raw is not None and not isinstance(raw, dict):
        raise ServiceError(400, "body: must be a JSON object")
    return raw or {}


def _idempotency_key(op: Operation, request: Request) -> str | None:
    key = request.headers.get("x-idempotency-key")
    if not (op.idempotency_required or (op.method == "POST" and key is not None)):
        return None
    if key is None:
        problem = "required on this operation (a unique string of at most 64 characters)"
    elif not key.strip():
        problem = "must not be empty"
    elif len(key) > MAX_IDEMPOTENCY_KEY:
        problem = f"at most {MAX_IDEMPOTENCY_KEY} characters, got {len(key)}"
    else:
        return key
    raise ServiceError(400, f"X-Idempotency-Key header: {problem}")


async def _run_under_key(backend: Backend, call: Call, path: str) -> Any:
    """Run the handler under the idempotency key: kept on success, released on refusal."""
    key = call.idempotency_key
    if key is not None:
        backend.reserve_idempotency_key(call.api_key, path, key)
    committed = False
    try:
        data = await run_in_threadpool(_handle, call)
        committed = True
    except ServiceError:
        raise
    except Exception as exc:
        log.exception("sandbox handler %s failed (req_id %s)", call.op.name, call.req_id)
        raise ServiceError(500, f"internal error in the sandbox: {type(exc).__name__}: "
                                f"{exc}") from None
    finally:
        if key is not None:
            (backend.commit_idempotency_key if committed
             else backend.release_idempotency_key)(call.api_key, path, key)
    return data


def _handle(call: Call) -> Any:
    with call.backend.refund_on_crash():
        return HANDLERS[call.op.name](call)


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def _targeted(faults: dict[str, Any], path: str) -> bool:
    if not faults:
        return False
    paths = faults.get("paths")
    return not paths or any(path.startswith(p.removeprefix(PREFIX)) for p in paths)


class DropResponseMiddleware:
    """Commit, then lose the answer: send the status line and headers, never the body.

    The server closes the connection when the app returns without completing the response,
    which is what a client sees when a proxy or network drops an answer after the service did
    the work. Used by the ``dropAfterCommit`` fault.
    """

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.state = app.state

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def maybe_drop(message: dict[str, Any]) -> None:
            if scope.get("dubkit.drop"):
                if message["type"] == "http.response.start":
                    await send(message)
                return   # swallow the body
            await send(message)

        await self.app(scope, receive, maybe_drop)
