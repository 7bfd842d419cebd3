"""The sandbox's HTTP layer: auth, envelope, idempotency, req_id, faults. No product rules here.

Every answer under ``/openapi/v1`` is the service's envelope ``{code, message, data}``, including
framework-level failures (unknown path, wrong method with its ``Allow``, malformed JSON): never a
default error body. Every request is checked against the contract document
(:mod:`dubkit.contract`) before anything else looks at it: a header, query parameter or body field
the document does not allow is a 400 naming it. In strict mode answers are checked too (see
:mod:`dubkit.sandbox.contract_log`). The document itself is served at
``/_sandbox/openapi.json``. Admin routes live under ``/_sandbox`` (see
:mod:`dubkit.sandbox.admin`); generated files are served under ``/files``.

*choice* An operation's query parameters are the ones the interface lists (and ``req_id``); any
other name is a 400 naming it, because a misspelt filter (``pagesize``) would otherwise be
ignored without a word.
*choice* The two voice-list POSTs are read-only: an ``X-Idempotency-Key`` sent with them is
checked for its shape but never consumed, so a retried list call is never a 409.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
import uuid
from contextlib import nullcontext
from email.utils import formatdate
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from .. import contract
from ..schema import OPERATIONS_BY_PATH, Operation, WireError, validated
from ..schema.sandbox_admin import Faults
from . import accounts, extras, file_access, replayed_files
from .admin import admin_router
from .backend import Backend
from .call import Call
from .envelope import envelope, omit_nulls
from .guard import AdminGuard, check_json, check_query, read_body
from .products.routes import HANDLERS
from .service_error import ServiceError
from .storage import storage_router

log = logging.getLogger("dubkit.sandbox")
PREFIX = "/openapi/v1"
DEFAULT_BODY_LIMIT = 8 * 1024 * 1024


def create_app(backend: Backend, hosts: set[str]) -> DropResponseMiddleware:
    """The ASGI app; ``hosts`` are the ``Host`` values that name this sandbox (admin calls)."""
    app = FastAPI(title="dubkit sandbox", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.backend = backend
    app.include_router(admin_router)
    app.include_router(storage_router)

    @app.exception_handler(StarletteHTTPException)
    async def _framework_error(request: Request, exc: StarletteHTTPException) -> Response:
        path = request.url.path
        if exc.status_code == 405 and path.startswith(PREFIX + "/"):
            try:  # a method the router does not route (HEAD, QUERY...): the table decides
                _operation(request.method, path[len(PREFIX) :])
            except ServiceError as refusal:
                return envelope(refusal.code, refusal.message, headers=refusal.headers)
        return envelope(
            exc.status_code,
            f"{exc.detail}: {request.method} {path}",
            headers=dict(exc.headers or {}),
        )

    @app.get("/_sandbox/openapi.json", include_in_schema=False)
    async def _contract_document() -> dict[str, Any]:
        """The interface this sandbox emulates (dubkit/contract/openapi.yaml), served here."""
        return {**contract.document(), "servers": [{"url": backend.base_url or "/"}]}

    @app.get("/files/{relpath:path}", include_in_schema=False)
    async def _files(relpath: str) -> Response:
        replayed = replayed_files.served(backend, relpath)
        if replayed is not None:  # a replayed lesson's file (see replayed_files)
            path, media_type = replayed
            return FileResponse(path, media_type=media_type, headers=replayed_files.HEADERS)
        own = file_access.served_path(backend, relpath)
        if own is None:
            return envelope(404, "file not found")
        return FileResponse(own)

    @app.api_route(
        PREFIX + "/{path:path}",
        methods=["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"],
    )
    async def _api_call(path: str, request: Request) -> Response:
        return await _serve(backend, "/" + path, request)

    return DropResponseMiddleware(AdminGuard(app, backend.admin_token, hosts))


async def _serve(backend: Backend, path: str, request: Request) -> Response:
    """Answer one API call; every refusal along the way is a ServiceError -> envelope."""
    faults = Faults.model_validate(backend.setting("faults", {}))
    targeted = _targeted(faults, path)
    req_id = request.query_params.get("req_id") or uuid.uuid4().hex  # tracing only
    try:
        api_key = _authenticate(backend, request)
        # Drawn only when set, so seeded runs of the other faults keep their sequence.
        if targeted and faults.error429 and backend.fault_rng.random() < faults.error429:
            backend.throttle.count_refusal(api_key)
            raise ServiceError(
                429,
                "Too many requests (injected by the sandbox before any work)",
                {"Retry-After": _retry_after(faults)},
            )
        with backend.throttle.admitted(api_key):
            return await _admitted(backend, api_key, path, request, faults, targeted, req_id)
    except ServiceError as exc:
        return _answer(backend, None, exc.code, exc.message, req_id=req_id, headers=exc.headers)


def _retry_after(faults: Faults) -> str:
    if not faults.retry_after_as_date:
        return str(faults.retry_after)
    # An HTTP date has whole seconds: rounded up, so it never asks for less than the wait.
    return formatdate(math.ceil(time.time()) + faults.retry_after, usegmt=True)


async def _admitted(
    backend: Backend,
    api_key: str,
    path: str,
    request: Request,
    faults: Faults,
    targeted: bool,
    req_id: str,
) -> Response:
    """Answer one API call of a key within its limits."""
    op: Operation | None = None
    try:
        op = _operation(request.method, path)
        check_query(request)
        raw_bytes = await read_body(request, int(backend.setting("body_limit", DEFAULT_BODY_LIMIT)))
        if targeted and faults.latency_ms:
            # After the body arrived, like a slow service: the work still happens even if
            # the client gives up waiting.
            await asyncio.sleep(faults.latency_ms / 1000)
        raw = _decode(op, raw_bytes, request)
        _check_contract(backend, op, raw, request, req_id)
        body = _parse(backend, op, raw, req_id)
        idem = request.headers.get("x-idempotency-key") if op.idempotency_required else None
        if targeted and backend.fault_rng.random() < faults.error502_before:
            raise ServiceError(502, "bad gateway (injected by the sandbox before any work)")
        call = Call(backend, api_key, op, body, raw if isinstance(raw, dict) else {}, idem, req_id)
        # Drawn only when set, so seeded runs of the other faults keep their sequence.
        crash = (
            targeted
            and bool(faults.crash_after_handler)
            and backend.fault_rng.random() < faults.crash_after_handler
        )
        data = await _run_under_key(backend, call, path, crash=crash)
    except ServiceError as exc:
        return _answer(backend, op, exc.code, exc.message, req_id=req_id, headers=exc.headers)
    except ClientDisconnect:
        return Response(status_code=499)  # nobody is listening; nothing was done

    if targeted and backend.fault_rng.random() < faults.drop_after_commit:
        request.scope["dubkit.drop"] = True
    if targeted and backend.fault_rng.random() < faults.error502_after:
        return _answer(
            backend,
            op,
            502,
            "bad gateway (injected by the sandbox after the work "
            "was committed); poll tasks/detail or wait for the webhook",
            req_id=req_id,
        )
    return _answer(backend, op, 200, "", data, req_id=req_id)


def _answer(
    backend: Backend,
    op: Operation | None,
    code: int,
    message: str,
    data: Any = None,
    *,
    req_id: str,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """The envelope, with only documented fields (the sandbox's extras go in a header); in
    strict mode also checked against the document first."""
    if code == 200 and op is not None:
        payload, carried = extras.answer(
            op.name, {"code": code, "message": message, "data": omit_nulls(data)}
        )
        data, headers = payload.get("data"), {**(headers or {}), **carried}
    response = envelope(code, message, data, headers=headers)
    if backend.contract_log.strict:
        backend.contract_log.record(
            op.name if op else None,
            "answer",
            contract.check_answer(
                op.name if op else None,
                response.status_code,
                json.loads(bytes(response.body)),
                response.headers,
            ),
            status=response.status_code,
            req_id=req_id,
        )
    return response


def _check_contract(
    backend: Backend, op: Operation, raw: Any, request: Request, req_id: str
) -> None:
    """400 naming the first header, query parameter or body field the document forbids."""
    problems = contract.check_request(
        op.name,
        body=raw if op.method == "POST" else contract.NO_BODY,
        query={k: v for k, v in request.query_params.items()},
        headers=request.headers,
    )
    if not problems:
        return
    if backend.contract_log.strict and request.headers.get("user-agent", "").startswith("dubkit/"):
        backend.contract_log.record(op.name, "request", problems, req_id=req_id)
    raise ServiceError(400, f"invalid request: {problems[0]}")


def _parse(backend: Backend, op: Operation, raw: Any, req_id: str) -> Any:
    """The typed body or query. The document allowed it, so only a stated rule may refuse it."""
    model = op.body or op.query
    if model is None:
        return None
    try:
        return validated(model, raw if isinstance(raw, dict) else {})
    except WireError as exc:
        if not exc.rule and backend.contract_log.strict:
            backend.contract_log.record(
                op.name,
                "models",
                [
                    contract.Problem(
                        exc.field,
                        f"allowed by the document, refused by dubkit.schema."
                        f"{model.__name__}: {exc.problem}",
                    )
                ],
                req_id=req_id,
            )
        raise ServiceError(400, f"invalid request: {exc}") from None


def _operation(method: str, path: str) -> Operation:
    op = OPERATIONS_BY_PATH.get((method, path))
    if op is None:
        allowed = [m for (m, p) in OPERATIONS_BY_PATH if p == path]
        if allowed:
            raise ServiceError(
                405,
                f"method not allowed: {method} {PREFIX}{path} (use {', '.join(allowed)})",
                {"Allow": ", ".join(allowed)},
            )
        raise ServiceError(404, f"no such endpoint: {method} {PREFIX}{path}")
    return op


def _authenticate(backend: Backend, request: Request) -> str:
    return str(accounts.admitted(backend, _bearer(request))["api_key"])


def _decode(op: Operation, raw_bytes: bytes, request: Request) -> Any:
    """POST: the decoded JSON body (``contract.NO_BODY`` when none was sent); GET: the query parameters
    (``req_id`` is only for tracing)."""
    if op.method != "POST":
        return {k: v for k, v in request.query_params.items() if k != "req_id"}
    if not raw_bytes:
        return contract.NO_BODY
    try:
        body = json.loads(raw_bytes)
    except (ValueError, RecursionError) as exc:
        raise ServiceError(400, f"malformed JSON body: {str(exc)[:200]}") from None
    check_json(body)
    return body


async def _run_under_key(backend: Backend, call: Call[Any], path: str, *, crash: bool) -> Any:
    """Run the handler under the idempotency key: kept on success, released on refusal."""
    key = call.idempotency_key
    if key is not None:
        backend.reserve_idempotency_key(call.api_key, path, key)
    committed = False
    try:
        data = await run_in_threadpool(_handle, call, crash)
        committed = True
    except ServiceError:
        raise
    except Exception as exc:
        log.exception("sandbox handler %s failed (req_id %s)", call.op.name, call.req_id)
        raise ServiceError(
            500, f"internal error in the sandbox: {type(exc).__name__}: {exc}"
        ) from None
    finally:
        if key is not None:
            (backend.commit_idempotency_key if committed else backend.release_idempotency_key)(
                call.api_key, path, key
            )
    return data


def _handle(call: Call[Any], crash: bool) -> Any:
    # An async create holds one of its key's task slots (accounts.task_slot) until committed.
    slot = accounts.task_slot(call.backend, call.api_key) if call.op.asynchronous else nullcontext()
    with slot, call.backend.undo_on_crash():
        data = HANDLERS[call.op.name](call)
        if crash:  # the crashAfterHandler fault: a sandbox bug after the work was done
            raise RuntimeError(
                "crash injected by the sandbox after the handler ran (fault crashAfterHandler)"
            )
        return data


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def _targeted(faults: Faults, path: str) -> bool:
    """Whether any fault is set for ``path`` (every API path when the faults name none)."""
    if not faults.model_fields_set:
        return False
    paths = faults.paths
    return not paths or any(path.startswith(p.removeprefix(PREFIX)) for p in paths)


class DropResponseMiddleware:
    """Commit, then lose the answer: send the status line and headers, never the body.

    The server closes the connection when the app returns without completing the response,
    which is what a client sees when a proxy or network drops an answer after the service did
    the work. Used by the ``dropAfterCommit`` fault.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def maybe_drop(message: dict[str, Any]) -> None:
            if scope.get("dubkit.drop"):
                if message["type"] == "http.response.start":
                    await send(message)
                return  # swallow the body
            await send(message)

        await self.app(scope, receive, maybe_drop)
