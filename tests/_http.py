"""A throwaway HTTP peer for tests: a webhook receiver, a slow or odd upstream."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterator, NamedTuple


@contextmanager
def local_http(respond: Callable[[str, dict, bytes], tuple[int, dict, bytes]]) -> Iterator[str]:
    """A throwaway HTTP server on loopback (a webhook receiver, a slow or odd upstream).

    ``respond(method, headers, body)`` returns ``(status, headers, body)``; yields the base URL.
    """
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            status, headers, body = respond(self.command, dict(self.headers),
                                            self.rfile.read(length))
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


class Caught(NamedTuple):
    url: str
    deliveries: list[tuple[dict, bytes]]   # (headers, raw body), in arrival order
    arrived: threading.Event               # set on each delivery; clear it to wait for the next


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
