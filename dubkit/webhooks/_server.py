"""HTTP for the Receiver: the WSGI adapter and a small threaded stdlib server for notebooks.

The server gives each connection one thread, so it bounds what a client can hold: at most
``max_connections`` at once (more are answered 503 at once, and the service retries), each read
waits at most ``idle_timeout`` seconds, and the request (line, headers, body) must have arrived
``request_timeout`` seconds after the connection was accepted. A client that connects and sends
nothing, half a request, or a byte now and then is disconnected instead of holding a thread.
"""

from __future__ import annotations

import json
import logging
import math
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from socketserver import ThreadingMixIn
from typing import Any, Protocol
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

log = logging.getLogger("dubkit.webhooks")


class _Answer(Protocol):
    @property
    def status(self) -> int: ...
    @property
    def body(self) -> dict[str, Any]: ...


class Receiving(Protocol):
    """What the HTTP side needs of a :class:`~dubkit.webhooks.Receiver`."""

    @property
    def max_body(self) -> int: ...
    def refuse_oversize(self, size: int) -> _Answer: ...
    def handle(self, headers: Mapping[str, str], body: bytes) -> _Answer: ...
    def wsgi_app(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> list[bytes]: ...


_CHUNK = 1 << 20
_DRAIN_LIMIT = 64 << 20  # read (and drop) at most this much of an oversized body
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    405: "Method Not Allowed",
    408: "Request Timeout",
    411: "Length Required",
    413: "Payload Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
# The service sends a small envelope in one go and expects a 2xx within a few seconds (§4.3),
# so a sender silent for 10 s mid-request is a dead or hostile peer, and a real delivery cut off
# is retried (not 2xx). 30 s for the whole request still admits the 8 MiB body limit at 2.5 Mbit/s.
IDLE_TIMEOUT = 10.0
REQUEST_TIMEOUT = 30.0
# Deliveries arrive one per finished task; 100 at once is far above that (and waitress's
# default connection_limit). Behind gunicorn or waitress their own limits apply instead.
MAX_CONNECTIONS = 100
_BUSY_BODY = b'{"received": false, "error": "receiver busy: too many open connections"}'
_BUSY = (
    b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\nRetry-After: 10\r\nConnection: close\r\n\r\n%s"
    % (len(_BUSY_BODY), _BUSY_BODY)
)


def wsgi_call(
    receiver: Receiving, environ: dict[str, Any], start_response: Callable[..., Any]
) -> list[bytes]:
    def reply(
        status: int, body: dict[str, Any], headers: tuple[tuple[str, str], ...] = ()
    ) -> list[bytes]:
        data = json.dumps(body).encode()
        start_response(
            f"{status} {_REASONS.get(status, '')}",
            [("Content-Type", "application/json"), ("Content-Length", str(len(data))), *headers],
        )
        return [data]

    try:
        if environ.get("REQUEST_METHOD") != "POST":
            return reply(
                405, {"received": False, "error": "deliveries are POSTed"}, (("Allow", "POST"),)
            )
        stream = environ["wsgi.input"]
        if "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
            # No Content-Length: the body ends where its framing says (read within the limit).
            try:
                body = _read_chunked(stream, environ, receiver.max_body)
            except _TooBig:
                answer = receiver.refuse_oversize(receiver.max_body + 1)
                return reply(answer.status, answer.body)
            except (OSError, ValueError) as exc:  # cut off or badly framed: it may retry
                log.warning("webhook chunked body not received: %s", type(exc).__name__)
                return reply(400, {"received": False, "error": "chunked body not received whole"})
            answer = receiver.handle(_headers(environ), body)
            return reply(answer.status, answer.body)
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return reply(411, {"received": False, "error": "Content-Length is not a number"})
        if length > receiver.max_body:
            try:
                _drain(stream, length)  # so the sender reads our answer instead of a reset
            except OSError:  # too slow or gone: answer anyway, best effort
                pass
            answer = receiver.refuse_oversize(length)
            return reply(answer.status, answer.body)
        try:
            body = _read(stream, length)
        except OSError as exc:  # a timeout or a dropped client: nothing accepted, it may retry
            log.warning("webhook body not received: %s", type(exc).__name__)
            return reply(408, {"received": False, "error": "request body not received in time"})
        answer = receiver.handle(_headers(environ), body)
        return reply(answer.status, answer.body)
    except Exception:  # a bug, not bad input: say so, and let the service retry
        log.exception("webhook receiver failed")
        return reply(500, {"received": False, "error": "internal error"})


def _headers(environ: dict[str, Any]) -> dict[str, str]:
    return {
        key[5:].replace("_", "-").lower(): value
        for key, value in environ.items()
        if key.startswith("HTTP_")
    }


def _read(stream: Any, length: int) -> bytes:
    parts, left = [], length
    while left > 0:
        part = stream.read(min(left, _CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


class _TooBig(Exception):
    """A chunked body passed the receiver's size limit."""


def _read_chunked(stream: Any, environ: Mapping[str, Any], limit: int) -> bytes:
    """A chunked body, whole. A server that decoded the framing (gunicorn, waitress: they set
    ``wsgi.input_terminated``) gives the bytes up to EOF; the stdlib server gives the framed
    stream, decoded here."""
    parts: list[bytes] = []
    size = 0
    if environ.get("wsgi.input_terminated"):
        while part := stream.read(_CHUNK):
            size += len(part)
            if size > limit:
                raise _TooBig
            parts.append(part)
        return b"".join(parts)
    while True:
        line = stream.readline(1024)
        if not line.endswith(b"\n"):
            raise ValueError("chunk size line cut off")
        chunk = int(line.split(b";", 1)[0].strip(), 16)  # chunk extensions are ignored
        if chunk == 0:
            while stream.readline(1024) not in (b"\r\n", b"\n", b""):
                pass  # trailer fields: not used
            return b"".join(parts)
        size += chunk
        if size > limit:
            raise _TooBig
        data = _read(stream, chunk)
        if len(data) != chunk or stream.readline(1024) not in (b"\r\n", b"\n"):
            raise ValueError("chunk cut off")
        parts.append(data)


def _drain(stream: Any, length: int) -> None:
    left = min(length, _DRAIN_LIMIT)
    while left > 0:
        part = stream.read(min(left, _CHUNK))
        if not part:
            return
        left -= len(part)


class _TimedSocket(socket.socket):
    """An accepted connection whose reads wait at most ``idle`` s each and end by ``deadline``.

    The check sits under the buffered reader (``makefile`` calls ``recv_into``), so a request
    line or body dribbled a byte at a time cannot stretch one ``readline()`` past the deadline.
    """

    idle: float = IDLE_TIMEOUT
    deadline: float = math.inf  # time.monotonic() by which the request must have been read

    def _arm(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("request not received in time")
        self.settimeout(min(self.idle, left))

    def recv_into(self, *args: Any, **kwargs: Any) -> int:
        self._arm()
        return super().recv_into(*args, **kwargs)

    def recv(self, *args: Any, **kwargs: Any) -> bytes:
        self._arm()
        return super().recv(*args, **kwargs)

    def sendall(self, *args: Any, **kwargs: Any) -> None:
        # The answer is small; past the read deadline it still goes out, but a client that
        # does not read it holds the thread at most ``idle`` seconds.
        self.settimeout(self.idle)
        super().sendall(*args, **kwargs)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True  # restart on the same port while old sockets linger
    request_queue_size = 128

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limit(IDLE_TIMEOUT, REQUEST_TIMEOUT, MAX_CONNECTIONS)
        self._busy_logged = -math.inf

    def limit(self, idle_timeout: float, request_timeout: float, max_connections: int) -> None:
        """Set the bounds (before serving starts)."""
        self.idle_timeout, self.request_timeout = idle_timeout, request_timeout
        self.max_connections = max_connections
        self._slots = threading.BoundedSemaphore(max_connections)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = self.socket.accept()
        timed = _TimedSocket(conn.family, conn.type, conn.proto, fileno=conn.detach())
        timed.idle = self.idle_timeout
        timed.deadline = time.monotonic() + self.request_timeout
        return timed, address

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self._refuse(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # the thread did not start: its slot is free again
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def _refuse(self, request: socket.socket) -> None:
        # On the accept thread: never block it, never read the request.
        try:
            request.setblocking(False)
            request.send(_BUSY)  # a fresh connection's send buffer always takes these bytes
        except OSError:
            pass
        self.shutdown_request(request)
        if time.monotonic() - self._busy_logged > 60:  # one line a minute under a flood
            self._busy_logged = time.monotonic()
            log.warning(
                "webhook receiver has %d connections open; refusing more with 503",
                self.max_connections,
            )

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):  # timed out or hung up: routine
            log.debug("webhook connection dropped: %s", type(sys.exc_info()[1]).__name__)
            return
        log.exception("webhook HTTP server error")


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # the receiver logs deliveries
        pass


def start_server(
    receiver: Receiving,
    host: str,
    port: int,
    *,
    idle_timeout: float = IDLE_TIMEOUT,
    request_timeout: float = REQUEST_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
) -> tuple[Any, str]:
    if not (idle_timeout > 0 and request_timeout > 0 and max_connections >= 1):
        raise ValueError("idle_timeout and request_timeout must be > 0, max_connections >= 1")
    server = make_server(
        host, port, receiver.wsgi_app, server_class=_Server, handler_class=_QuietHandler
    )
    server.limit(idle_timeout, request_timeout, max_connections)
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.1},
        name="dubkit-webhook-http",
        daemon=True,
    )
    thread.start()
    return server, f"http://{host}:{server.server_port}/"


def stop_server(server: Any) -> None:
    server.shutdown()
    server.server_close()
