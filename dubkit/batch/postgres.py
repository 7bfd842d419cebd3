"""The batch's ledger on PostgreSQL (``ledger="postgresql://…"``): one batch shared by several
processes or hosts.

The same tables as the SQLite ledger (:mod:`dubkit.batch.ledger`). A process claims a row
with a session advisory lock held on a connection of its own: PostgreSQL frees it the moment
that connection ends, so when a process dies (SIGKILL, a lost host: the keepalives notice in
about 25 s) another takes its rows over on its next look. Writes go through a second
connection in autocommit, so each is durable as soon as it returns: a claim lost with its
process never takes a ``sending`` mark with it.

Needs ``psycopg`` 3 (``pip install 'dubkit[postgres]'``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import ValidationError
from .ledger import SCHEMA, Ledger

# Connections notice a peer gone silent (a host lost without closing its sockets) in ~25 s.
_KEEPALIVE = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
}
_SCHEMA_LOCK = 0x64756B62  # "dukb": one process creates the tables at a time


class PostgresLedger(Ledger):
    """The ledger in PostgreSQL; claims are advisory locks of this process's lock session."""

    def __init__(self, url: str, batch: str = "batch") -> None:
        super().__init__()
        try:
            import psycopg
            import psycopg.conninfo
        except ImportError:
            raise ValidationError(
                "ledger", "a PostgreSQL ledger needs psycopg: pip install 'dubkit[postgres]'"
            ) from None
        self._psycopg = psycopg
        self.url, self.batch = url, batch
        parts = urlsplit(url)
        host = parts.netloc.rsplit("@", 1)[-1]
        self.where = urlunsplit((parts.scheme, host, parts.path, "", ""))  # no password
        # the batch's half of every lock id (the row's is the other half)
        self._space = int.from_bytes(hashlib.sha1(batch.encode()).digest()[:4], "big") >> 1
        self._io = threading.Lock()
        self._writes = self._connect()
        self._locks = self._connect()  # holds the claims: they end with it
        self._creator = self._connect()  # holds the create lock while a create is in flight
        self._writes.execute("SELECT pg_advisory_lock(%s)", (_SCHEMA_LOCK,))
        try:
            for statement in SCHEMA:
                self._writes.execute(statement)
        finally:
            self._writes.execute("SELECT pg_advisory_unlock(%s)", (_SCHEMA_LOCK,))

    def _connect(self) -> Any:
        conninfo = self._psycopg.conninfo.make_conninfo(self.url, **_KEEPALIVE)
        return self._psycopg.connect(conninfo, autocommit=True)

    def _statement(self, sql: str, args: tuple[Any, ...]) -> tuple[int, list[dict[str, Any]]]:
        """One statement on the write connection (made again if it broke): rows changed, rows
        returned."""
        with self._io:
            if self._writes.closed or self._writes.broken:
                self._writes = self._connect()
            cursor = self._writes.execute(sql.replace("?", "%s"), args)
            names = [c.name for c in cursor.description or ()]
            rows = [dict(zip(names, r)) for r in cursor.fetchall()] if names else []
            return int(cursor.rowcount), rows

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        return self._statement(sql, args)[0]

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        return self._statement(sql, args)[1]

    def _try_lock(self, number: int) -> bool:
        with self._io:
            got = self._locks.execute(
                "SELECT pg_try_advisory_lock(%s, %s)", (self._space, number)
            ).fetchone()
        return bool(got and got[0])

    def _unlock(self, number: int) -> None:
        with self._io:
            self._locks.execute("SELECT pg_advisory_unlock(%s, %s)", (self._space, number))

    @contextmanager
    def _create_lock(self) -> Iterator[None]:
        # its own connection: waiting for it must not hold up claims and writes
        self._creator.execute("SELECT pg_advisory_lock(%s, 0)", (self._space,))
        try:
            yield
        finally:
            self._creator.execute("SELECT pg_advisory_unlock(%s, 0)", (self._space,))

    def close(self) -> None:
        for connection in (self._locks, self._creator, self._writes):
            try:
                connection.close()
            except Exception:
                pass
        self._claimed.clear()
