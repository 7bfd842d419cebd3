"""The receiver's memory: one SQLite row per accepted delivery, keyed by ``pipelineKey``.

The row is written *before* the receiver answers 2xx, so an accepted event survives a crash, and
a retry of the same completion finds its key and is answered 2xx without running anything again.
A row is ``pending`` until a handler succeeds (``done``) or its retries run out (``dead``, the
dead-letter record, with the last error).

Several processes may open the same file (gunicorn workers on one host): the primary key decides
which one accepts a delivery, and a *lease* marks who is handling a pending row. A row whose lease
ran out belongs to a process that died; any process takes it over (:meth:`take_orphans`). Each
row also names its owner (pid and host): a row whose owner is a process of this host that no
longer runs is taken over at once, without waiting out the lease. An owner on another host (or
container), or one whose liveness is unsure, is judged by its lease alone.

>>> store = EventStore("events.sqlite3")
>>> store.claim("3f2a...", "openapi-tts", "task-1", raw_body, lease=300)   # True the first time
>>> store.dead_letters()
"""

from __future__ import annotations

import functools
import os
import re
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ValidationError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS webhook_events (
    pipeline_key TEXT PRIMARY KEY, event TEXT, task_id TEXT, body BLOB NOT NULL,
    received_at REAL NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL, lease_until REAL NOT NULL, last_error TEXT, finished_at REAL,
    owner_pid INTEGER, owner_host TEXT);
CREATE INDEX IF NOT EXISTS webhook_events_pending ON webhook_events (state, lease_until);
"""
# Columns added since the first release: files written by older versions gain them on open.
_ADDED_COLUMNS = (("owner_pid", "INTEGER"), ("owner_host", "TEXT"))
DEFAULT_RETENTION = 7 * 24 * 3600.0  # how long a handled key still dedupes a late retry


def default_store_path() -> Path:
    """``$DUBKIT_WEBHOOK_DB``, else ``~/.cache/dubkit/webhooks.sqlite3``."""
    return Path(
        os.environ.get("DUBKIT_WEBHOOK_DB")
        or Path.home() / ".cache" / "dubkit" / "webhooks.sqlite3"
    )


@functools.cache
def host_id() -> str | None:
    """Which process table a pid belongs to: host name, boot and (Linux) pid namespace.

    Two containers on one host share the boot id but not the pid namespace; cloned VMs may
    share a host name but not the boot id. A pid is only judged where all three match, so on
    Linux, when either id cannot be read, None: this process's rows are judged by lease alone.
    """
    if not sys.platform.startswith("linux"):
        return socket.gethostname()  # no pid namespaces to tell apart
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
    return f"{socket.gethostname()}|{boot}|{namespace}"


def process_alive(pid: int) -> bool:
    """False only when ``pid`` certainly runs no process on this host; when unsure, True."""
    if pid <= 0:
        return True  # never let kill() address a process group
    if sys.platform == "win32":
        return _windows_process_alive(pid)  # os.kill(pid, 0) would *terminate* it there
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it runs, as another user
        return True
    try:  # killed but not yet reaped by its parent (a zombie): it runs no handler any more
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def _windows_process_alive(pid: int) -> bool:
    try:
        import ctypes
        from ctypes import wintypes

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
        kernel32.OpenProcess.restype = wintypes.HANDLE
        kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
        kernel32.GetExitCodeProcess.argtypes = (wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD))
        kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            # ERROR_INVALID_PARAMETER (87): no such process
            return bool(ctypes.get_last_error() != 87)  # type: ignore[attr-defined]
        try:
            code = wintypes.DWORD()
            if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
                return True
            return code.value == 259  # STILL_ACTIVE
        finally:
            kernel32.CloseHandle(handle)
    except Exception:
        return True


@dataclass
class Attempt:
    """One run of a pending event's handler, as its store holds it: ``finish`` or ``fail``
    records the outcome. On PostgreSQL ``connection`` is the open transaction's (the handler's
    writes commit with the outcome) and ``savepoint`` undoes a failed handler's writes."""

    row: dict[str, Any]
    finish: Callable[[], None]
    fail: Callable[[str, float | None], int]  # (error, retry_at or None: dead) -> attempts
    connection: Any = None
    savepoint: Callable[[], AbstractContextManager[Any]] = nullcontext


def store_path(store: str | Path) -> Path:
    """The SQLite file a ``store`` argument names: a path, or ``sqlite:///path``. Any other
    URL is refused by name, not taken as a relative file called ``postgresql:`` or the like."""
    text = str(store)
    if isinstance(store, str) and re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
        scheme = text.split("://", 1)[0].lower()
        if scheme == "sqlite" and text.startswith("sqlite:///"):
            return Path(text[len("sqlite://") :])
        raise ValidationError(
            "store",
            f"{scheme}:// URLs are not a store dubkit can use; give a SQLite file path "
            "(or sqlite:///path) or a postgresql:// URL",
        )
    return Path(store)


class EventStore:
    """Dedupe keys, pending work and dead letters in one SQLite file (safe across processes)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = store_path(path) if path is not None else default_store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Owner-only from the first byte: rows hold result file URLs that open without a key
        # (SQLite gives its -wal and -shm files the database's mode).
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        os.chmod(self.path, 0o600)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        with self._lock:
            db = self._connection()
            db.executescript(_SCHEMA)
            columns = {r["name"] for r in db.execute("PRAGMA table_info(webhook_events)")}
            for name, kind in _ADDED_COLUMNS:
                if name not in columns:
                    try:
                        db.execute(f"ALTER TABLE webhook_events ADD COLUMN {name} {kind}")
                    except sqlite3.OperationalError as exc:  # another process was first
                        if "duplicate column" not in str(exc):
                            raise

    def __repr__(self) -> str:
        return f"EventStore({str(self.path)!r})"

    @property
    def where(self) -> str:
        return str(self.path)

    def _connection(self) -> sqlite3.Connection:
        # One connection per process: a connection inherited through fork (gunicorn --preload)
        # must not be used by the child.
        if self._db is None or self._pid != os.getpid():
            self._db = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=10
            )
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL: a committed row survives a process crash; only power loss may drop the
            # last few. Set FULL on the connection if that matters more than latency.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._pid = os.getpid()
        return self._db

    def _run(self, sql: str, args: Iterable[Any] = ()) -> int:
        """Run a write; the number of rows it changed."""
        with self._lock:
            return self._connection().execute(sql, tuple(args)).rowcount

    def _rows(self, sql: str, args: Iterable[Any] = ()) -> list[sqlite3.Row]:
        # Fetched whole under the lock: a query still stepping holds a read transaction open on
        # the connection, and another thread's write through it then fails at once with
        # "database is locked" (a stale snapshot, which SQLite does not wait out) whenever
        # another process wrote in between.
        with self._lock:
            return self._connection().execute(sql, tuple(args)).fetchall()

    # ------------------------------------------------------------------ the delivery path

    def claim(
        self,
        pipeline_key: str,
        event: str | None,
        task_id: str | None,
        body: bytes,
        *,
        lease: float,
    ) -> bool:
        """Record a delivery; False if its key was seen before (a duplicate)."""
        now = time.time()
        inserted = self._run(
            "INSERT OR IGNORE INTO webhook_events (pipeline_key, event, task_id, body, "
            "received_at, state, next_at, lease_until, owner_pid, owner_host) "
            "VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?)",
            (pipeline_key, event, task_id, body, now, now, now + lease, os.getpid(), host_id()),
        )
        return inserted == 1

    @contextmanager
    def attempt(self, pipeline_key: str, *, lease: float) -> Iterator[Attempt | None]:
        """One attempt at a pending row this process holds (None if it is not pending)."""
        row = self.get(pipeline_key)
        if row is None or row["state"] != "pending":
            yield None
            return
        self.extend(pipeline_key, lease)
        yield Attempt(
            row=row,
            finish=lambda: self.finish(pipeline_key),
            fail=lambda error, retry_at: self.fail(pipeline_key, error, retry_at, lease=lease),
        )

    def extend(self, pipeline_key: str, lease: float) -> None:
        """Keep a row this process is handling from being taken over."""
        self._run(
            "UPDATE webhook_events SET lease_until = ?, owner_pid = ?, owner_host = ? "
            "WHERE pipeline_key = ?",
            (time.time() + lease, os.getpid(), host_id(), pipeline_key),
        )

    def finish(self, pipeline_key: str) -> None:
        self._run(
            "UPDATE webhook_events SET state = 'done', attempts = attempts + 1, "
            "last_error = NULL, finished_at = ? WHERE pipeline_key = ?",
            (time.time(), pipeline_key),
        )

    def fail(self, pipeline_key: str, error: str, retry_at: float | None, *, lease: float) -> int:
        """Count a failed attempt: retry at ``retry_at``, or dead-letter it when None.

        Returns the number of attempts made so far.
        """
        if retry_at is None:
            self._run(
                "UPDATE webhook_events SET state = 'dead', attempts = attempts + 1, "
                "last_error = ?, finished_at = ? WHERE pipeline_key = ?",
                (error, time.time(), pipeline_key),
            )
        else:
            self._run(
                "UPDATE webhook_events SET attempts = attempts + 1, last_error = ?, "
                "next_at = ?, lease_until = ? WHERE pipeline_key = ?",
                (error, retry_at, retry_at + lease, pipeline_key),
            )
        rows = self._rows(
            "SELECT attempts FROM webhook_events WHERE pipeline_key = ?", (pipeline_key,)
        )
        return rows[0]["attempts"] if rows else 0

    def release(self, pipeline_keys: Iterable[str]) -> None:
        """Give up the lease of rows this process will not handle (clean shutdown)."""
        for key in pipeline_keys:
            self._run(
                "UPDATE webhook_events SET lease_until = 0 WHERE pipeline_key = ? AND "
                "state = 'pending'",
                (key,),
            )

    def take_orphans(self, *, lease: float, limit: int = 100) -> list[dict[str, Any]]:
        """Pending rows nobody holds, now leased to this process.

        Nobody holds a row whose lease ran out (its process stopped, or died on another host)
        or whose owner is a process of this host that is no longer running (it crashed).
        """
        now, me, host = time.time(), os.getpid(), host_id()
        owners = (
            []
            if host is None
            else self._rows(
                "SELECT DISTINCT owner_pid FROM webhook_events WHERE state = 'pending' AND "
                "lease_until >= ? AND owner_host = ? AND owner_pid != ?",
                (now, host, me),
            )
        )
        dead = [r["owner_pid"] for r in owners if not process_alive(r["owner_pid"])][:500]
        crashed = (
            f" OR (owner_host = ? AND owner_pid IN ({', '.join('?' * len(dead))}))" if dead else ""
        )
        rows = self._rows(
            f"SELECT * FROM webhook_events WHERE state = 'pending' AND "
            f"(lease_until < ?{crashed}) ORDER BY received_at LIMIT ?",
            (now, *((host, *dead) if dead else ()), limit),
        )
        taken = []
        for row in rows:  # compare-and-set: with several processes only one wins each row
            changed = self._run(
                "UPDATE webhook_events SET lease_until = ?, owner_pid = ?, "
                "owner_host = ? WHERE pipeline_key = ? AND lease_until = ? AND "
                "state = 'pending'",
                (now + lease, me, host, row["pipeline_key"], row["lease_until"]),
            )
            if changed == 1:
                taken.append(dict(row))
        return taken

    # ------------------------------------------------------------------ inspection and upkeep

    def get(self, pipeline_key: str) -> dict[str, Any] | None:
        rows = self._rows("SELECT * FROM webhook_events WHERE pipeline_key = ?", (pipeline_key,))
        return dict(rows[0]) if rows else None

    def dead_letters(self) -> list[dict[str, Any]]:
        """Events whose handler kept failing: key, event, task, attempts, last error, body."""
        return [
            dict(r)
            for r in self._rows(
                "SELECT * FROM webhook_events WHERE state = 'dead' ORDER BY received_at"
            )
        ]

    def revive(self, pipeline_key: str | None = None) -> int:
        """Make dead letters pending again (all, or one); returns how many."""
        sql = (
            "UPDATE webhook_events SET state = 'pending', attempts = 0, lease_until = 0, "
            "next_at = 0, finished_at = NULL WHERE state = 'dead'"
        )
        if pipeline_key is None:
            return self._run(sql)
        return self._run(sql + " AND pipeline_key = ?", (pipeline_key,))

    def counts(self) -> dict[str, int]:
        rows = self._rows("SELECT state, COUNT(*) AS n FROM webhook_events GROUP BY state")
        return {r["state"]: r["n"] for r in rows}

    def forget(self, older_than: float = DEFAULT_RETENTION) -> int:
        """Drop handled rows older than ``older_than`` seconds (their keys stop deduping)."""
        return self._run(
            "DELETE FROM webhook_events WHERE state = 'done' AND finished_at < ?",
            (time.time() - older_than,),
        )

    def close(self) -> None:
        with self._lock:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db = None
