"""The receiver's memory: one SQLite row per accepted delivery, keyed by ``pipelineKey``.

The row is written *before* the receiver answers 2xx, so an accepted event survives a crash, and
a retry of the same completion finds its key and is answered 2xx without running anything again.
A row is ``pending`` until a handler succeeds (``done``) or its retries run out (``dead``, the
dead-letter record, with the last error).

Several processes may open the same file (gunicorn workers on one host): the primary key decides
which one accepts a delivery, and a *lease* marks who is handling a pending row. A row whose lease
ran out belongs to a process that died; any process takes it over (:meth:`take_orphans`).

>>> store = EventStore("events.sqlite3")
>>> store.claim("3f2a...", "openapi-tts", "task-1", raw_body, lease=300)   # True the first time
>>> store.dead_letters()
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable

_SCHEMA = """
CREATE TABLE IF NOT EXISTS webhook_events (
    pipeline_key TEXT PRIMARY KEY, event TEXT, task_id TEXT, body BLOB NOT NULL,
    received_at REAL NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL, lease_until REAL NOT NULL, last_error TEXT, finished_at REAL);
CREATE INDEX IF NOT EXISTS webhook_events_pending ON webhook_events (state, lease_until);
"""
DEFAULT_RETENTION = 7 * 24 * 3600.0   # how long a handled key still dedupes a late retry


def default_store_path() -> Path:
    """``$DUBKIT_WEBHOOK_DB``, else ``~/.cache/dubkit/webhooks.sqlite3``."""
    return Path(os.environ.get("DUBKIT_WEBHOOK_DB")
                or Path.home() / ".cache" / "dubkit" / "webhooks.sqlite3")


class EventStore:
    """Dedupe keys, pending work and dead letters in one SQLite file (safe across processes)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        with self._lock:
            self._connection().executescript(_SCHEMA)

    def __repr__(self) -> str:
        return f"EventStore({str(self.path)!r})"

    def _connection(self) -> sqlite3.Connection:
        # One connection per process: a connection inherited through fork (gunicorn --preload)
        # must not be used by the child.
        if self._db is None or self._pid != os.getpid():
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                       timeout=10)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL: a committed row survives a process crash; only power loss may drop the
            # last few. Set FULL on the connection if that matters more than latency.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._pid = os.getpid()
        return self._db

    def _run(self, sql: str, args: Iterable[Any] = ()) -> sqlite3.Cursor:
        with self._lock:
            return self._connection().execute(sql, tuple(args))

    # ------------------------------------------------------------------ the delivery path

    def claim(self, pipeline_key: str, event: str | None, task_id: str | None, body: bytes, *,
              lease: float) -> bool:
        """Record a delivery; False if its key was seen before (a duplicate)."""
        now = time.time()
        cursor = self._run(
            "INSERT OR IGNORE INTO webhook_events (pipeline_key, event, task_id, body, "
            "received_at, state, next_at, lease_until) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)",
            (pipeline_key, event, task_id, body, now, now, now + lease))
        return cursor.rowcount == 1

    def extend(self, pipeline_key: str, lease: float) -> None:
        """Keep a row this process is handling from being taken over."""
        self._run("UPDATE webhook_events SET lease_until = ? WHERE pipeline_key = ?",
                  (time.time() + lease, pipeline_key))

    def finish(self, pipeline_key: str) -> None:
        self._run("UPDATE webhook_events SET state = 'done', attempts = attempts + 1, "
                  "last_error = NULL, finished_at = ? WHERE pipeline_key = ?",
                  (time.time(), pipeline_key))

    def fail(self, pipeline_key: str, error: str, retry_at: float | None, *, lease: float) -> int:
        """Count a failed attempt: retry at ``retry_at``, or dead-letter it when None.

        Returns the number of attempts made so far.
        """
        if retry_at is None:
            self._run("UPDATE webhook_events SET state = 'dead', attempts = attempts + 1, "
                      "last_error = ?, finished_at = ? WHERE pipeline_key = ?",
                      (error, time.time(), pipeline_key))
        else:
            self._run("UPDATE webhook_events SET attempts = attempts + 1, last_error = ?, "
                      "next_at = ?, lease_until = ? WHERE pipeline_key = ?",
                      (error, retry_at, retry_at + lease, pipeline_key))
        row = self._run("SELECT attempts FROM webhook_events WHERE pipeline_key = ?",
                        (pipeline_key,)).fetchone()
        return row["attempts"] if row else 0

    def release(self, pipeline_keys: Iterable[str]) -> None:
        """Give up the lease of rows this process will not handle (clean shutdown)."""
        for key in pipeline_keys:
            self._run("UPDATE webhook_events SET lease_until = 0 WHERE pipeline_key = ? AND "
                      "state = 'pending'", (key,))

    def take_orphans(self, *, lease: float, limit: int = 100) -> list[dict[str, Any]]:
        """Pending rows nobody holds (their process stopped or died), now leased to this one."""
        now = time.time()
        rows = self._run("SELECT * FROM webhook_events WHERE state = 'pending' AND "
                         "lease_until < ? ORDER BY received_at LIMIT ?", (now, limit)).fetchall()
        taken = []
        for row in rows:   # compare-and-set: with several processes only one wins each row
            cursor = self._run("UPDATE webhook_events SET lease_until = ? WHERE pipeline_key = ?"
                               " AND lease_until = ? AND state = 'pending'",
                               (now + lease, row["pipeline_key"], row["lease_until"]))
            if cursor.rowcount == 1:
                taken.append(dict(row))
        return taken

    # ------------------------------------------------------------------ inspection and upkeep

    def get(self, pipeline_key: str) -> dict[str, Any] | None:
        row = self._run("SELECT * FROM webhook_events WHERE pipeline_key = ?",
                        (pipeline_key,)).fetchone()
        return dict(row) if row else None

    def dead_letters(self) -> list[dict[str, Any]]:
        """Events whose handler kept failing: key, event, task, attempts, last error, body."""
        return [dict(r) for r in self._run(
            "SELECT * FROM webhook_events WHERE state = 'dead' ORDER BY received_at").fetchall()]

    def revive(self, pipeline_key: str | None = None) -> int:
        """Make dead letters pending again (all, or one); returns how many."""
        sql = ("UPDATE webhook_events SET state = 'pending', attempts = 0, lease_until = 0, "
               "next_at = 0, finished_at = NULL WHERE state = 'dead'")
        if pipeline_key is None:
            return self._run(sql).rowcount
        return self._run(sql + " AND pipeline_key = ?", (pipeline_key,)).rowcount

    def counts(self) -> dict[str, int]:
        rows = self._run("SELECT state, COUNT(*) AS n FROM webhook_events GROUP BY state")
        return {r["state"]: r["n"] for r in rows.fetchall()}

    def forget(self, older_than: float = DEFAULT_RETENTION) -> int:
        """Drop handled rows older than ``older_than`` seconds (their keys stop deduping)."""
        return self._run("DELETE FROM webhook_events WHERE state = 'done' AND finished_at < ?",
                         (time.time() - older_than,)).rowcount

    def close(self) -> None:
        with self._lock:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db = None
