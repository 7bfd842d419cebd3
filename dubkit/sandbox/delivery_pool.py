"""Webhook delivery workers: a few threads, fair across API keys, each attempt under one deadline.

:class:`FairPool` runs outbox rows on ``WORKERS`` threads with at most ``PER_KEY`` rows of one key
in flight. Rows wait in per-key queues (oldest first); a free worker takes the next row of the key
served longest ago, so keys take turns and one key's backlog or hanging receiver occupies at
most ``PER_KEY`` workers. :func:`post` sends one POST whose connect, send, status line, headers
and the first ``ANSWER_CAP`` bytes of body all fit within one timeout: each socket operation is
given only the time left, so a receiver that trickles bytes cannot stretch an attempt (a TLS
handshake is bounded per socket operation only).
"""

from __future__ import annotations

import http.client
import io
import logging
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

WORKERS = 6  # delivery threads
PER_KEY = 1  # attempts of one key in flight at once
ANSWER_CAP = 65536  # bytes of a receiver's answer body read (politely) before hanging up
log = logging.getLogger("dubkit.sandbox")


class AttemptTimeout(Exception):
    """The receiver did not answer (status line and headers) within the attempt's timeout."""


class Aborted(Exception):
    """The pool is stopping: the attempt was cut short and is not an outcome."""


def _time_left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("attempt deadline passed")
    return left


class _DeadlineReader(io.RawIOBase):
    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock, self._deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._sock.settimeout(_time_left(self._deadline))
        return self._sock.recv_into(buffer)


class _DeadlineSocket:
    """A connected socket as http.client uses it, each send and read given only the time left."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock, self._deadline = sock, deadline

    def sendall(self, data: bytes) -> None:
        self._sock.settimeout(_time_left(self._deadline))
        self._sock.sendall(data)

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))

    def close(self) -> None:
        self._sock.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _Live:
    """Sockets of attempts in flight, so that stopping can cut them short."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socks: set[socket.socket] = set()
        self.closed = False

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            if self.closed:
                raise Aborted()
            self._socks.add(sock)

    def discard(self, sock: socket.socket | None) -> None:
        with self._lock:
            if sock is not None:
                self._socks.discard(sock)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            for sock in self._socks:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class _Deadlined(http.client.HTTPConnection):
    """http.client connection whose connect, sends and reads all share one deadline."""

    deadline: float
    live: _Live
    raw: socket.socket | None = None

    def connect(self) -> None:
        self.timeout = _time_left(self.deadline)
        super().connect()
        self.raw = raw = self.sock
        self.live.add(raw)
        self.sock = _DeadlineSocket(raw, self.deadline)


class _HTTP(_Deadlined, http.client.HTTPConnection):
    pass


class _HTTPS(_Deadlined, http.client.HTTPSConnection):
    pass


def post(
    url: str, body: bytes, headers: dict[str, str], timeout: float, live: _Live | None = None
) -> int:
    """POST ``body`` to ``url``; the answer's status code. Redirects are not followed.

    Raises :class:`AttemptTimeout` when the status line and headers are not in within
    ``timeout`` seconds of starting (connect included), :class:`Aborted` when the pool stops,
    ``OSError`` or ``http.client.HTTPException`` when the connection fails, ``ValueError`` for a
    URL that is not http(s).
    """
    live = live or _Live()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    deadline = time.monotonic() + timeout
    connection = (_HTTPS if parts.scheme == "https" else _HTTP)(parts.hostname, parts.port)
    connection.deadline, connection.live = deadline, live
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request("POST", target, body=body, headers=headers)
        answer = connection.getresponse()
        try:  # the status is in; read a little of the body so the receiver can finish writing
            answer.read(ANSWER_CAP)
        except (OSError, http.client.HTTPException):
            pass
        return answer.status
    except (OSError, http.client.HTTPException) as exc:
        if live.closed:
            raise Aborted() from exc
        if isinstance(exc, socket.timeout):
            raise AttemptTimeout(f"no answer within {timeout:g} s") from exc
        raise
    finally:
        live.discard(connection.raw)
        connection.close()


class FairPool:
    """Runs ``attempt(row_id)`` on worker threads, keys in turn, each key's rows oldest first."""

    def __init__(
        self,
        attempt: Callable[[int], None],
        on_done: Callable[[], None],
        *,
        workers: int = WORKERS,
        per_key: int = PER_KEY,
    ) -> None:
        self._attempt, self._on_done = attempt, on_done
        self.workers, self.per_key = workers, per_key
        self.live = _Live()
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="sandbox-webhook")
        self._lock = threading.Condition()
        self._queued: dict[str, deque[int]] = {}
        self._running: dict[int, str] = {}  # row id -> key
        self._per_key: Counter[str] = Counter()
        self._served: dict[str, int] = {}  # key -> turn it was last served at
        self._turn = 0

    def running(self) -> set[int]:
        with self._lock:
            return set(self._running)

    def free(self) -> int:
        with self._lock:
            return self.workers - len(self._running)

    def has_ready(self) -> bool:
        """Is a queued row waiting whose key is below its in-flight limit?"""
        with self._lock:
            return any(q and self._per_key[k] < self.per_key for k, q in self._queued.items())

    def refill(self, due: Iterable[tuple[int, str]], exclude: set[int]) -> None:
        """Replace the queues with ``due`` rows ``(id, key)``, oldest first.

        ``exclude`` holds the rows that were running when ``due`` was read: their state in it
        may be stale, and rows running now are queued already.
        """
        queued: dict[str, deque[int]] = {}
        with self._lock:
            for row_id, key in due:
                if row_id not in exclude and row_id not in self._running:
                    queued.setdefault(key, deque()).append(row_id)
            self._queued = queued

    def dispatch(self) -> int:
        """Start queued rows on free workers, the key served longest ago first."""
        started = 0
        with self._lock:
            while len(self._running) < self.workers and not self.live.closed:
                ready = [
                    k for k, q in self._queued.items() if q and self._per_key[k] < self.per_key
                ]
                if not ready:
                    break
                key = min(ready, key=lambda k: (self._served.get(k, 0), self._queued[k][0]))
                row_id = self._queued[key].popleft()
                self._turn += 1
                self._served[key] = self._turn
                self._running[row_id] = key
                self._per_key[key] += 1
                self._executor.submit(self._run, row_id, key)
                started += 1
        return started

    def _run(self, row_id: int, key: str) -> None:
        try:
            if not self.live.closed:
                self._attempt(row_id)
        except Exception:
            log.exception("webhook delivery of outbox row %s", row_id)
        finally:
            with self._lock:
                del self._running[row_id]
                self._per_key[key] -= 1
                if not self._per_key[key]:
                    del self._per_key[key]
                self._lock.notify_all()
            self._on_done()

    def stop(self, grace: float = 2.0) -> None:
        """Cut attempts in flight short and wait (up to ``grace`` s) for their workers."""
        self.live.close()
        self._executor.shutdown(wait=False)
        with self._lock:
            self._lock.wait_for(lambda: not self._running, timeout=grace)
