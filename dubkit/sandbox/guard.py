"""What keeps the sandbox safe to leave running: the admin token, cross-site refusals, and
limits that hold while the bytes arrive.

* **Admin token.** Every route under ``/_sandbox`` (but the public contract document) needs
  the data dir's admin token in the ``X-Sandbox-Admin-Token`` header, else 401. The token is
  made once per data dir, in ``<data dir>/admin-token`` (mode 0600): whoever may read the data
  dir may steer the sandbox, nobody else. :class:`dubkit.SandboxHandle` reads it.
* **Cross-site.** A state-changing admin call (any method but GET/HEAD) is also refused (403)
  when it comes from a web page: a form or text content type (what a page can send without a
  CORS preflight), an ``Origin`` that is not the sandbox's own, or a ``Host`` that is not one of
  the sandbox's names (a DNS-rebinding page). So a page in the user's browser cannot reset or
  reconfigure the sandbox even if it guessed the port.
* **Limits while bytes arrive.** An API body is read chunk by chunk and refused (413) the
  moment it passes the body limit, never buffered whole; a query string over
  :data:`MAX_QUERY` characters, JSON nested deeper than :data:`MAX_DEPTH`, text with a NUL
  or a lone surrogate (which no store or file name can hold), and ``NaN``/``Infinity`` (which
  Python's JSON reader takes but JSON has not, so an echo of them would not be JSON) are 400
  before anything is committed or charged.
"""

from __future__ import annotations

import hmac
import math
from collections.abc import Iterable
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from .admin_token import ADMIN_HEADER
from .envelope import envelope
from .service_error import ServiceError

PUBLIC_ADMIN_PATHS = frozenset({"/_sandbox/openapi.json"})
MAX_QUERY = 4096  # characters of a query string; the interface's GETs need a few dozen
MAX_DEPTH = 32  # nesting of a JSON body; the deepest documented body has 5 levels
BYTES_ADMIN_PATHS = ("/_sandbox/replayed-files/",)  # admin calls whose body is a file's bytes
_BYTES_TYPE = "application/octet-stream"
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data", "text/plain")


class AdminGuard:
    """ASGI middleware: the token and the cross-site checks in front of ``/_sandbox``."""

    def __init__(self, app: ASGIApp, token: str, hosts: Iterable[str]) -> None:
        self.app = app
        self.token = token.encode()
        self.hosts = {h.lower() for h in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if (
            scope["type"] != "http"
            or not path.startswith("/_sandbox")
            or path in PUBLIC_ADMIN_PATHS
        ):
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(Request(scope))
        if refusal is not None:
            await envelope(refusal.code, refusal.message)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def refusal(self, request: Request) -> ServiceError | None:
        given = request.headers.get(ADMIN_HEADER, "").encode()
        if not hmac.compare_digest(given, self.token):
            return ServiceError(
                401,
                f"admin routes need this sandbox's admin token in the "
                f"{ADMIN_HEADER} header (it is in the 'admin-token' file "
                f"of the sandbox's data dir)",
            )
        if request.method in ("GET", "HEAD"):
            return None
        host = request.headers.get("host", "").lower()
        if host not in self.hosts:
            return ServiceError(
                403,
                "admin calls must name this sandbox in Host (a page on "
                "another site cannot reconfigure it)",
            )
        origin = request.headers.get("origin")
        if origin is not None and origin.lower().split("://", 1)[-1] not in self.hosts:
            return ServiceError(403, "admin calls from another site's page are refused")
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind == _BYTES_TYPE and request.url.path.startswith(BYTES_ADMIN_PATHS):
            return None  # a page cannot send this type without a CORS preflight either
        if kind in _FORM_TYPES or (kind and kind != "application/json"):
            return ServiceError(403, "admin calls send JSON (Content-Type: application/json)")
        return None


def sandbox_hosts(host: str, port: int, extra: Iterable[str] = ()) -> set[str]:
    """The ``Host`` values that name this sandbox: its address, loopback names, ``extra``."""
    names = {host, "127.0.0.1", "localhost", "[::1]", *extra}
    if host in ("0.0.0.0", "::"):  # listening everywhere: the machine's own names too
        import socket

        names |= {socket.gethostname(), socket.getfqdn()}
    return {f"{name}:{port}" for name in names} | set(extra)


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused (413) as soon as more than ``limit`` bytes have arrived."""

    def too_large(got: str) -> ServiceError:
        return ServiceError(
            413, f"payload too large: the body limit is {limit} bytes, got {got} bytes"
        )

    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(declared)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large(f"more than {limit}")
        chunks.append(chunk)
    return b"".join(chunks)


def check_query(request: Request) -> None:
    query = request.url.query
    if len(query) > MAX_QUERY:
        raise ServiceError(
            400, f"invalid request: query string: at most {MAX_QUERY} characters, got {len(query)}"
        )
    for name, value in request.query_params.multi_items():
        _check_text(name, name, "query parameter name")
        _check_text(value, name, "query parameter")


def check_json(value: Any) -> None:
    """400 naming the first place a decoded body is too deep or holds text no store can keep."""
    stack: list[tuple[Any, str, int]] = [(value, "body", 1)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ServiceError(
                400, f"invalid request: {path}: nested deeper than {MAX_DEPTH} levels"
            )
        if isinstance(node, dict):
            for key, item in node.items():
                _check_text(key, path, "field name")
                stack.append((item, f"{path}.{key}" if path != "body" else key, depth + 1))
        elif isinstance(node, list):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(node))
        elif isinstance(node, str):
            _check_text(node, path, "text")
        elif isinstance(node, float) and not math.isfinite(node):  # Python's json reads them
            raise ServiceError(
                400,
                f"invalid request: {path}: {node!r} is not a JSON number (NaN and Infinity "
                "are not JSON; send a number or a string)",
            )


def _check_text(text: str, path: str, what: str) -> None:
    if "\x00" in text:
        raise ServiceError(400, f"invalid request: {path}: {what} contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ServiceError(
            400,
            f"invalid request: {path}: {what} contains a lone surrogate (not valid Unicode text)",
        ) from None
