"""The Receiver as an ASGI application, for FastAPI, Starlette and uvicorn.

The same path as the WSGI app's (:func:`dubkit.webhooks._server.wsgi_call`): a size check
before the body is read whole, then :meth:`Receiver.handle` (verify, parse, dedupe in the store,
queue), whose store writes run in a worker thread so the server's event loop never waits on
SQLite or PostgreSQL. Handlers run on the receiver's own workers after the answer, as they do
behind WSGI; an ``async def`` handler is awaited there (see ``Receiver._attempt``).

Mounted in an app (``app.mount("/webhooks", receiver.asgi_app)``) it gets no lifespan events:
its workers start with the first delivery, and the app's shutdown calls ``receiver.stop()``.
Served alone (``uvicorn app:receiver.asgi_app``) it starts and stops with the server.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Protocol

from ._server import _Answer

log = logging.getLogger("dubkit.webhooks")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class Receiving(Protocol):
    """What the ASGI side needs of a :class:`~dubkit.webhooks.Receiver`."""

    @property
    def max_body(self) -> int: ...
    def refuse_oversize(self, size: int) -> _Answer: ...
    def handle(self, headers: dict[str, str], body: bytes) -> _Answer: ...
    def start(self) -> object: ...
    def stop(self, timeout: float = 5.0) -> None: ...


class _TooBig(Exception):
    pass


class ASGIApp:
    """``receiver.asgi_app``: an ASGI 3 application object (an ``async __call__``, which is
    how uvicorn tells ASGI 3 from ASGI 2)."""

    def __init__(self, receiver: Receiving) -> None:
        self.receiver = receiver

    def __repr__(self) -> str:
        return f"ASGIApp({self.receiver!r})"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await asgi_call(self.receiver, scope, receive, send)


async def asgi_call(receiver: Receiving, scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(receiver, receive, send)
        return
    if scope["type"] != "http":  # a websocket: nothing to receive here
        raise RuntimeError(f"dubkit's webhook receiver serves HTTP, not {scope['type']}")
    try:
        await _delivery(receiver, scope, receive, send)
    except Exception:  # a bug, not bad input: say so, and let the service retry
        log.exception("webhook receiver failed")
        await _reply(send, 500, {"received": False, "error": "internal error"})


async def _delivery(receiver: Receiving, scope: Scope, receive: Receive, send: Send) -> None:
    if scope.get("method") != "POST":
        body = {"received": False, "error": "deliveries are POSTed"}
        await _reply(send, 405, body, ((b"allow", b"POST"),))
        return
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    said = headers.get("content-length")
    if said is not None and said.strip().isdigit() and int(said) > receiver.max_body:
        answer = receiver.refuse_oversize(int(said))
        await _reply(send, answer.status, answer.body)
        return
    try:
        data = await _body(receive, receiver.max_body)
    except _TooBig:
        answer = receiver.refuse_oversize(receiver.max_body + 1)
        await _reply(send, answer.status, answer.body)
        return
    if data is None:  # the client went away mid-body: nothing accepted, it may retry
        return
    answer = await asyncio.to_thread(receiver.handle, headers, data)
    await _reply(send, answer.status, answer.body)


async def _body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, at most ``limit`` bytes (``_TooBig`` past it); None if cut off."""
    parts, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _TooBig
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


async def _reply(
    send: Send, status: int, body: dict[str, Any], headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


async def _lifespan(receiver: Receiving, receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await asyncio.to_thread(receiver.start)  # takes back pending work from the store
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await asyncio.to_thread(receiver.stop)  # lets queued handlers finish
            await send({"type": "lifespan.shutdown.complete"})
            return
