"""HTTP for the Receiver: the WSGI adapter and a small threaded stdlib server for notebooks."""

from __future__ import annotations

import json
import logging
import threading
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any, Callable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

if TYPE_CHECKING:
    from .receiver import Receiver

log = logging.getLogger("dubkit.webhooks")
_CHUNK = 1 << 20
_DRAIN_LIMIT = 64 << 20   # read (and drop) at most this much of an oversized body
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 405: "Method Not Allowed",
            411: "Length Required", 413: "Payload Too Large", 500: "Internal Server Error",
            503: "Service Unavailable"}


def wsgi_call(receiver: "Receiver", environ: dict[str, Any],
              start_response: Callable[..., Any]) -> list[bytes]:
    def reply(status: int, body: dict[str, Any],
              headers: tuple[tuple[str, str], ...] = ()) -> list[bytes]:
        data = json.dumps(body).encode()
        start_response(f"{status} {_REASONS.get(status, '')}",
                       [("Content-Type", "application/json"),
                        ("Content-Length", str(len(data))), *headers])
        return [data]

    try:
        if environ.get("REQUEST_METHOD") != "POST":
            return reply(405, {"received": False, "error": "deliveries are POSTed"},
                         (("Allow", "POST"),))
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return reply(411, {"received": False, "error": "Content-Length is not a number"})
        stream = environ["wsgi.input"]
        if length > receiver.max_body:
            _drain(stream, length)   # so the sender reads our answer instead of a reset
            answer = receiver.refuse_oversize(length)
            return reply(answer.status, answer.body)
        answer = receiver.handle(_headers(environ), _read(stream, length))
        return reply(answer.status, answer.body)
    except Exception:   # a bug, not bad input: say so, and let the service retry
        log.exception("webhook receiver failed")
        return reply(500, {"received": False, "error": "internal error"})


def _headers(environ: dict[str, Any]) -> dict[str, str]:
    return {key[5:].replace("_", "-").lower(): value for key, value in environ.items()
            if key.startswith("HTTP_")}


def _read(stream: Any, length: int) -> bytes:
    parts, left = [], length
    while left > 0:
        part = stream.read(min(left, _CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _drain(stream: Any, length: int) -> None:
    left = min(length, _DRAIN_LIMIT)
    while left > 0:
        part = stream.read(min(left, _CHUNK))
        if not part:
            return
        left -= len(part)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True   # restart on the same port while old sockets linger
    request_queue_size = 128


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:   # the receiver logs deliveries
        pass


def start_server(receiver: "Receiver", host: str, port: int) -> tuple[Any, str]:
    server = make_server(host, port, receiver.wsgi_app, server_class=_Server,
                         handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              name="dubkit-webhook-http", daemon=True)
    thread.start()
    return server, f"http://{host}:{server.server_port}/"


def stop_server(server: Any) -> None:
    server.shutdown()
    server.server_close()
