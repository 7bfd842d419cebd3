"""The receiver's memory on PostgreSQL, for receivers on several hosts (``store="postgresql://…"``).

The same rows and states as the SQLite store (:mod:`dubkit.webhooks.store`): a delivery is
recorded before it is answered 2xx, its ``pipelineKey`` is the primary key (a retry finds it and
runs nothing), and it stays ``pending`` until a handler succeeds (``done``) or runs out of
attempts (``dead``). What decides who runs a pending event is PostgreSQL's own row lock, not a
lease of dubkit's making: a handler runs inside a transaction that holds the event's row
``FOR UPDATE``, and whoever finds the row locked skips it (``SKIP LOCKED``). A process that
dies (SIGKILL, a lost host) loses its connection, PostgreSQL ends its transaction and frees the
row, and any other receiver's sweeper takes the event within seconds. The ``done`` mark commits
in that same transaction, so a handler given the connection (``transaction=True``) commits its
writes and the mark together or not at all: exactly once. Any other handler runs at least
once: a crash after its side effect and before the commit runs it again.

Needs ``psycopg`` 3 (``pip install 'dubkit[postgres]'``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import ValidationError
from .store import DEFAULT_RETENTION, Attempt

TABLE = "dubkit_webhook_events"
# A pending event nobody holds is taken over once it has waited this long past its due time:
# the process that claimed it normally starts it within milliseconds.
ORPHAN_GRACE = 2.0
# Connections notice a peer gone silent (a host lost without closing its sockets) in ~25 s.
_KEEPALIVE = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
}
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    pipeline_key TEXT PRIMARY KEY, event TEXT, task_id TEXT, body BYTEA NOT NULL,
    received_at DOUBLE PRECISION NOT NULL, state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, next_at DOUBLE PRECISION NOT NULL,
    lease_until DOUBLE PRECISION NOT NULL, last_error TEXT, finished_at DOUBLE PRECISION,
    owner_pid INTEGER, owner_host TEXT);
CREATE INDEX IF NOT EXISTS {TABLE}_pending ON {TABLE} (next_at) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS {TABLE}_done ON {TABLE} (finished_at) WHERE state = 'done';
"""


def is_postgres_url(store: object) -> bool:
    return isinstance(store, str) and store.split("://", 1)[0].lower() in ("postgresql", "postgres")


class PostgresEventStore:
    """Dedupe keys, pending work and dead letters in one PostgreSQL table."""

    def __init__(self, url: str) -> None:
        try:
            import psycopg
            import psycopg.conninfo
        except ImportError:
            raise ValidationError(
                "store", "a PostgreSQL store needs psycopg: pip install 'dubkit[postgres]'"
            ) from None
        self._psycopg = psycopg
        self.url = url
        self._local = threading.local()
        with self._connection() as db:
            db.execute(f"SELECT pg_advisory_lock({_SCHEMA_LOCK})")  # one creator at a time
            try:
                db.execute(_SCHEMA)
            finally:
                db.execute(f"SELECT pg_advisory_unlock({_SCHEMA_LOCK})")

    @property
    def where(self) -> str:
        """The database, without a password (for reprs and logs)."""
        parts = urlsplit(self.url)
        host = parts.netloc.rsplit("@", 1)[-1]
        user = parts.username
        return urlunsplit((parts.scheme, f"{user}@{host}" if user else host, parts.path, "", ""))

    def __repr__(self) -> str:
        return f"PostgresEventStore({self.where!r})"

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """This thread's connection (made again after a fork or once it broke)."""
        db = getattr(self._local, "db", None)
        if db is None or db.closed or db.broken or self._local.pid != os.getpid():
            conninfo = self._psycopg.conninfo.make_conninfo(self.url, **_KEEPALIVE)
            db = self._psycopg.connect(conninfo, autocommit=True)
            self._local.db, self._local.pid = db, os.getpid()
        try:
            yield db
        except self._psycopg.OperationalError:
            self._local.db = None  # the server restarted or the network dropped: a new one next
            raise

    def _statement(self, sql: str, args: Iterable[Any]) -> tuple[int, list[dict[str, Any]]]:
        """Run one statement: rows changed and rows returned. A connection that died since its
        last use (a database restart) is replaced once: a single statement either ran whole
        or not at all, and a claim that did run and is tried again is a duplicate whose pending
        row the sweepers pick up."""
        for last_try in (False, True):
            fresh = getattr(self._local, "db", None) is None
            try:
                with self._connection() as db:
                    cursor = db.execute(sql, tuple(args))
                    names = [c.name for c in cursor.description or ()]
                    rows = [_row(dict(zip(names, r))) for r in cursor.fetchall()] if names else []
                    return int(cursor.rowcount), rows
            except self._psycopg.OperationalError:
                if last_try or fresh:
                    raise
        raise AssertionError("unreachable")

    def _run(self, sql: str, args: Iterable[Any] = ()) -> int:
        return self._statement(sql, args)[0]

    def _rows(self, sql: str, args: Iterable[Any] = ()) -> list[dict[str, Any]]:
        return self._statement(sql, args)[1]

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
        return (
            self._run(
                f"INSERT INTO {TABLE} (pipeline_key, event, task_id, body, received_at, state, "
                "next_at, lease_until, owner_pid) VALUES (%s, %s, %s, %s, %s, 'pending', %s, %s, "
                "%s) ON CONFLICT (pipeline_key) DO NOTHING",
                (pipeline_key, event, task_id, body, now, now, now + lease, os.getpid()),
            )
            == 1
        )

    @contextmanager
    def attempt(self, pipeline_key: str, *, lease: float) -> Iterator[Attempt | None]:
        """Run one attempt inside a transaction holding the event's row; None when it is not
        pending or another receiver is running it. Finish or fail commit with the attempt."""
        with self._connection() as db, db.transaction():
            cursor = db.execute(
                f"SELECT * FROM {TABLE} WHERE pipeline_key = %s AND state = 'pending' "
                "FOR UPDATE SKIP LOCKED",
                (pipeline_key,),
            )
            found = cursor.fetchone()
            if found is None:
                yield None
                return
            # Nothing is written to the row until the outcome: a row only locked (not yet
            # updated) lets a retry's claim answer "duplicate" at once instead of waiting for
            # this transaction to end.
            row = _row(dict(zip([c.name for c in cursor.description or ()], found)))
            yield Attempt(
                row=row,
                connection=db,
                finish=lambda: _finish(db, pipeline_key),
                fail=lambda error, retry_at: _fail(db, pipeline_key, error, retry_at, lease),
                savepoint=db.transaction,
            )

    def extend(self, pipeline_key: str, lease: float) -> None:
        """The row lock of the running attempt is what holds an event here: nothing to renew."""

    def release(self, pipeline_keys: Iterable[str]) -> None:
        """Rows queued here but not started are not locked: any receiver may take them."""

    def take_orphans(self, *, lease: float, limit: int = 100) -> list[dict[str, Any]]:
        """Pending rows due for a while that no receiver is running (row not locked)."""
        with self._connection() as db, db.transaction():
            cursor = db.execute(
                f"SELECT * FROM {TABLE} WHERE state = 'pending' AND next_at < %s "
                "ORDER BY next_at LIMIT %s FOR UPDATE SKIP LOCKED",
                (time.time() - ORPHAN_GRACE, limit),
            )
            names = [c.name for c in cursor.description or ()]
            return [_row(dict(zip(names, r))) for r in cursor.fetchall()]

    # ------------------------------------------------------------------ inspection and upkeep

    def get(self, pipeline_key: str) -> dict[str, Any] | None:
        rows = self._rows(f"SELECT * FROM {TABLE} WHERE pipeline_key = %s", (pipeline_key,))
        return rows[0] if rows else None

    def finish(self, pipeline_key: str) -> None:
        with self._connection() as db:
            _finish(db, pipeline_key)

    def fail(self, pipeline_key: str, error: str, retry_at: float | None, *, lease: float) -> int:
        with self._connection() as db:
            return _fail(db, pipeline_key, error, retry_at, lease)

    def dead_letters(self) -> list[dict[str, Any]]:
        return self._rows(f"SELECT * FROM {TABLE} WHERE state = 'dead' ORDER BY received_at")

    def revive(self, pipeline_key: str | None = None) -> int:
        sql = (
            f"UPDATE {TABLE} SET state = 'pending', attempts = 0, lease_until = 0, next_at = 0, "
            "finished_at = NULL WHERE state = 'dead'"
        )
        if pipeline_key is None:
            return self._run(sql)
        return self._run(sql + " AND pipeline_key = %s", (pipeline_key,))

    def counts(self) -> dict[str, int]:
        rows = self._rows(f"SELECT state, COUNT(*) AS n FROM {TABLE} GROUP BY state")
        return {r["state"]: int(r["n"]) for r in rows}

    def forget(self, older_than: float = DEFAULT_RETENTION) -> int:
        return self._run(
            f"DELETE FROM {TABLE} WHERE state = 'done' AND finished_at < %s",
            (time.time() - older_than,),
        )

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None and self._local.pid == os.getpid():
            db.close()
        self._local.db = None


_SCHEMA_LOCK = 0x64756B69  # "duki": an advisory lock id for creating the table


def _row(row: dict[str, Any]) -> dict[str, Any]:
    body = row.get("body")
    if isinstance(body, memoryview):
        row["body"] = bytes(body)
    return row


def _finish(db: Any, pipeline_key: str) -> None:
    db.execute(
        f"UPDATE {TABLE} SET state = 'done', attempts = attempts + 1, last_error = NULL, "
        "finished_at = %s, owner_pid = %s WHERE pipeline_key = %s",
        (time.time(), os.getpid(), pipeline_key),
    )


def _fail(db: Any, pipeline_key: str, error: str, retry_at: float | None, lease: float) -> int:
    """Count a failed attempt: due again at ``retry_at``, or dead when None; attempts so far."""
    if retry_at is None:
        cursor = db.execute(
            f"UPDATE {TABLE} SET state = 'dead', attempts = attempts + 1, last_error = %s, "
            "finished_at = %s, owner_pid = %s WHERE pipeline_key = %s RETURNING attempts",
            (error, time.time(), os.getpid(), pipeline_key),
        )
    else:
        cursor = db.execute(
            f"UPDATE {TABLE} SET attempts = attempts + 1, last_error = %s, next_at = %s, "
            "lease_until = %s, owner_pid = %s WHERE pipeline_key = %s RETURNING attempts",
            (error, retry_at, retry_at + lease, os.getpid(), pipeline_key),
        )
    found = cursor.fetchone()
    return int(found[0]) if found else 0
