"""A throwaway HTTP peer for tests: a webhook receiver, a slow or odd upstream."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import NamedTuple

Respond = Callable[[str, str, dict, bytes], tuple[int, dict, bytes]]


@contextmanager
def _serve(respond: Respond) -> Iterator[str]:
    """``respond(method, path, headers, body)`` answers every request; yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            status, headers, body = respond(
                self.command, self.path, dict(self.headers), self.rfile.read(length)
            )
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the client gave up on this request long ago

        do_GET = do_POST = do_PUT = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


@contextmanager
def local_http(respond: Callable[[str, dict, bytes], tuple[int, dict, bytes]]) -> Iterator[str]:
    """A throwaway HTTP server on loopback (a webhook receiver, a slow or odd upstream).

    ``respond(method, headers, body)`` returns ``(status, headers, body)``; yields the base URL.
    """
    with _serve(lambda method, _path, headers, body: respond(method, headers, body)) as url:
        yield url


class Caught(NamedTuple):
    url: str
    deliveries: list[tuple[dict, bytes]]  # (headers, raw body), in arrival order
    arrived: threading.Event  # set on each delivery; clear it to wait for the next


@contextmanager
def webhook_catcher() -> Iterator[Caught]:
    """A receiver that keeps every delivery's headers and raw body and answers 200."""
    caught = Caught("", [], threading.Event())

    def receive(method: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
        caught.deliveries.append((headers, body))
        caught.arrived.set()
        return 200, {}, b"{}"

    with local_http(receive) as url:
        yield caught._replace(url=url)


class CountingProxy:
    """A loopback proxy in front of ``target`` that counts what passes through it.

    Tests use it to know, without sleeping, that every attempt a client sent has been
    answered by the sandbox (``wait_idle``), and how many there were (``attempts``).
    """

    def __init__(self, target: str) -> None:
        self.target = target
        self.url = ""
        self.attempts: list[str] = []  # request paths, in arrival order
        self.in_flight = 0
        self._idle = threading.Condition()

    def wait_idle(self, timeout: float = 30) -> None:
        with self._idle:
            if not self._idle.wait_for(lambda: self.in_flight == 0, timeout):
                raise AssertionError(f"{self.in_flight} request(s) still unanswered upstream")

    def _forward(
        self, method: str, path: str, headers: dict, body: bytes
    ) -> tuple[int, dict, bytes]:
        import requests

        with self._idle:
            self.attempts.append(path)
            self.in_flight += 1
        try:
            sent = {k: v for k, v in headers.items() if k.lower() not in ("host", "connection")}
            answer = requests.request(
                method, self.target + path, headers=sent, data=body, timeout=60
            )
            kept = {
                k: v
                for k, v in answer.headers.items()
                if k.lower() in ("content-type", "retry-after")
            }
            return answer.status_code, kept, answer.content
        finally:
            with self._idle:
                self.in_flight -= 1
                self._idle.notify_all()


@contextmanager
def counting_proxy(target: str) -> Iterator[CountingProxy]:
    proxy = CountingProxy(target)
    with _serve(proxy._forward) as url:
        proxy.url = url
        yield proxy
