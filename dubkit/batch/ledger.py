"""The batch's ledger: every row, revision, quote, charge, task and output, in one database.

SQLite in the output folder by default (``<out>/dubkit-batch.sqlite3``); a PostgreSQL URL
for a team or several machines (:mod:`dubkit.batch.postgres`). Both keep the same tables and
answer to the same calls; what differs is how a process holds what it works on:

* a **claim** on a row: only its holder works on it. It dies with its process (a POSIX record
  lock on a lock file beside the SQLite file; a session advisory lock in PostgreSQL), so a row
  whose worker was killed is taken over by the next process that looks, at once, with no
  lease to wait out;
* the **create lock**: one create of the batch in flight at a time, across every process.
  A create takes milliseconds, so this costs nothing, and it is what lets a task whose answer
  was lost be found again among the key's tasks (:mod:`dubkit.batch.recovery`).

Every write commits at once: a row's ``sending`` mark is on disk before its create leaves.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .rows import COLUMNS, ENDED, IN_FLIGHT, Row

LEDGER_FILE = "dubkit-batch.sqlite3"
LOCK_FILE = ".dubkit-batch.lock"

# Shared by both stores: written with ``?`` placeholders (PostgreSQL's store swaps them).
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS dubkit_batch_rows (
    batch TEXT NOT NULL, row_key TEXT NOT NULL, revision INTEGER NOT NULL, seq INTEGER NOT NULL,
    file_name TEXT NOT NULL, file_path TEXT NOT NULL, file_hash TEXT NOT NULL,
    locale TEXT NOT NULL, fingerprint TEXT NOT NULL, settings TEXT NOT NULL,
    status TEXT NOT NULL, attempt INTEGER NOT NULL, idempotency_key TEXT, tag TEXT,
    sent_at DOUBLE PRECISION, task_id TEXT, task_type TEXT, quote DOUBLE PRECISION NOT NULL,
    estimate INTEGER NOT NULL, charged DOUBLE PRECISION, error TEXT, transient INTEGER NOT NULL,
    started_at DOUBLE PRECISION, ended_at DOUBLE PRECISION, outputs TEXT NOT NULL,
    worker TEXT, review TEXT, note TEXT, kind TEXT NOT NULL,
    PRIMARY KEY (batch, row_key, revision))""",
    """CREATE TABLE IF NOT EXISTS dubkit_batch_files (
    batch TEXT NOT NULL, file_hash TEXT NOT NULL, name TEXT NOT NULL, material_id TEXT,
    seconds DOUBLE PRECISION, video INTEGER, PRIMARY KEY (batch, file_hash))""",
    """CREATE TABLE IF NOT EXISTS dubkit_batch_facts (
    path TEXT NOT NULL, size BIGINT NOT NULL, mtime_ns BIGINT NOT NULL, md5 TEXT NOT NULL,
    seconds DOUBLE PRECISION NOT NULL, video INTEGER NOT NULL, PRIMARY KEY (path))""",
    """CREATE TABLE IF NOT EXISTS dubkit_batch_tasks (
    batch TEXT NOT NULL, task_id TEXT NOT NULL, row_key TEXT NOT NULL,
    PRIMARY KEY (batch, task_id))""",
    """CREATE TABLE IF NOT EXISTS dubkit_batch_meta (
    batch TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (batch, name))""",
)
_STORED = tuple("row_key" if c == "key" else c for c in COLUMNS)
_CURRENT = (
    "SELECT * FROM dubkit_batch_rows r WHERE batch = ? AND revision = (SELECT MAX(revision) "
    "FROM dubkit_batch_rows WHERE batch = r.batch AND row_key = r.row_key)"
)


def lock_number(batch: str, key: str) -> int:
    """A row's lock id, from its batch and key (1 .. 2**31-1; 0 is the create lock). Two rows
    that collide only take turns: a claim is never shared."""
    digest = hashlib.sha1(f"{batch}\0{key}".encode()).digest()
    return 1 + int.from_bytes(digest[:4], "big") % (2**31 - 1)


def worker_id() -> str:
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


class Ledger:
    """What both stores share: the rows, files and facts, over two primitives (``_run``,
    ``_rows``), and the claims a subclass holds."""

    batch: str
    where: str

    def __init__(self) -> None:
        self._claimed: set[str] = set()  # claims of this process (both locks are per process)
        self._claims_lock = threading.Lock()
        self._creating = threading.Lock()  # the create lock, among this process's threads

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.where!r}, batch={self.batch!r})"

    # -- primitives a store provides
    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        raise NotImplementedError

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _try_lock(self, number: int) -> bool:
        raise NotImplementedError

    def _unlock(self, number: int) -> None:
        raise NotImplementedError

    @contextmanager
    def _create_lock(self) -> Iterator[None]:
        raise NotImplementedError
        yield

    def close(self) -> None:
        """Let go of every claim (closing the connection or file does it too)."""

    # -- claims
    def claim(self, key: str) -> bool:
        """Hold row ``key`` for this process; False if a live process holds it."""
        with self._claims_lock:
            if key in self._claimed:
                return False
            if not self._try_lock(lock_number(self.batch, key)):
                return False
            self._claimed.add(key)
            return True

    def release(self, key: str) -> None:
        with self._claims_lock:
            if key in self._claimed:
                self._claimed.discard(key)
                self._unlock(lock_number(self.batch, key))

    def holds(self, key: str) -> bool:
        with self._claims_lock:
            return key in self._claimed

    @contextmanager
    def creating(self) -> Iterator[None]:
        """The create lock: one create of this batch in flight, across processes."""
        with self._creating, self._create_lock():
            yield

    # -- rows
    def rows(self) -> list[Row]:
        """Every row at its newest revision, in the batch's order."""
        return [_row(r) for r in self._rows(_CURRENT + " ORDER BY seq", (self.batch,))]

    def open_rows(self) -> list[Row]:
        """The rows not yet ended, at their newest revision, in order: what a runner looks at
        each time (a long course's ended rows are not read again and again)."""
        ended = ", ".join(f"'{s}'" for s in sorted(ENDED))
        return [
            _row(r)
            for r in self._rows(
                f"SELECT * FROM ({_CURRENT}) c WHERE status NOT IN ({ended}) ORDER BY seq",
                (self.batch,),
            )
        ]

    def in_flight(self) -> int:
        """How many of the batch's rows have a task that may be running (every process's)."""
        flying = ", ".join(f"'{s}'" for s in sorted(IN_FLIGHT))
        found = self._rows(
            f"SELECT COUNT(*) AS n FROM ({_CURRENT}) c WHERE status IN ({flying})", (self.batch,)
        )
        return int(found[0]["n"])

    def row(self, key: str) -> Row | None:
        found = self._rows(_CURRENT + " AND row_key = ?", (self.batch, key))
        return _row(found[0]) if found else None

    def history(self, key: str | None = None) -> list[Row]:
        """Every revision (of ``key``, or of every row), oldest first."""
        where, args = ("AND row_key = ? ", (self.batch, key)) if key else ("", (self.batch,))
        return [
            _row(r)
            for r in self._rows(
                f"SELECT * FROM dubkit_batch_rows WHERE batch = ? {where}ORDER BY seq, revision",
                args,
            )
        ]

    def add(self, row: Row) -> Row:
        """Write a new row, or a new revision of one; a revision that exists is kept as it is
        (a second process planning the same change)."""
        record = row.to_record()
        record["row_key"] = record.pop("key")
        names = ("batch",) + _STORED
        values = (self.batch,) + tuple(record[n] for n in _STORED)
        self._run(
            f"INSERT INTO dubkit_batch_rows ({', '.join(names)}) VALUES "
            f"({', '.join('?' for _ in names)}) ON CONFLICT DO NOTHING",
            values,
        )
        return self.row(row.key) or row

    def update(self, row: Row, **changes: Any) -> Row:
        """Write ``changes`` to ``row`` (its key and revision) and return it changed."""
        for name, value in changes.items():
            setattr(row, name, value)
        record = row.to_record()
        names = [n for n in changes if n != "key"]
        if names:
            self._run(
                f"UPDATE dubkit_batch_rows SET {', '.join(f'{n} = ?' for n in names)} "
                "WHERE batch = ? AND row_key = ? AND revision = ?",
                tuple(record[n] for n in names) + (self.batch, row.key, row.revision),
            )
        return row

    def fresh(self, row: Row) -> Row:
        """``row`` as the ledger has it now (another process may have moved it on)."""
        found = self._rows(
            "SELECT * FROM dubkit_batch_rows WHERE batch = ? AND row_key = ? AND revision = ?",
            (self.batch, row.key, row.revision),
        )
        return _row(found[0]) if found else row

    def known_task_ids(self) -> set[str]:
        """Every task id any row of this batch ever recorded, every attempt's."""
        found = self._rows("SELECT task_id FROM dubkit_batch_tasks WHERE batch = ?", (self.batch,))
        return {r["task_id"] for r in found}

    def add_task(self, key: str, task_id: str) -> None:
        """Keep a row's task id for good (a later attempt's replaces it on the row)."""
        self._run(
            "INSERT INTO dubkit_batch_tasks (batch, task_id, row_key) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (self.batch, task_id, key),
        )

    # -- files and what was measured of them
    def material(self, file_hash: str) -> dict[str, Any] | None:
        found = self._rows(
            "SELECT * FROM dubkit_batch_files WHERE batch = ? AND file_hash = ?",
            (self.batch, file_hash),
        )
        return found[0] if found else None

    def put_material(
        self, file_hash: str, name: str, material_id: str, seconds: float, video: bool
    ) -> None:
        self._run(
            "INSERT INTO dubkit_batch_files (batch, file_hash, name, material_id, seconds, "
            "video) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (batch, file_hash) DO UPDATE SET "
            "material_id = excluded.material_id",
            (self.batch, file_hash, name, material_id, seconds, int(video)),
        )

    def facts(self, path: str, size: int, mtime_ns: int) -> dict[str, Any] | None:
        """What was measured of a file as it was (its MD5, length, whether it has a picture)."""
        found = self._rows(
            "SELECT * FROM dubkit_batch_facts WHERE path = ? AND size = ? AND mtime_ns = ?",
            (path, size, mtime_ns),
        )
        return found[0] if found else None

    def put_facts(
        self, path: str, size: int, mtime_ns: int, md5: str, seconds: float, video: bool
    ) -> None:
        self._run(
            "INSERT INTO dubkit_batch_facts (path, size, mtime_ns, md5, seconds, video) VALUES "
            "(?, ?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET size = excluded.size, "
            "mtime_ns = excluded.mtime_ns, md5 = excluded.md5, seconds = excluded.seconds, "
            "video = excluded.video",
            (path, size, mtime_ns, md5, seconds, int(video)),
        )

    @property
    def batch_id(self) -> str:
        """The batch's own id, made once (the tag a create carries names it): two batches of
        the same name in two folders are told apart."""
        self._run(
            "INSERT INTO dubkit_batch_meta (batch, name, value) VALUES (?, 'id', ?) "
            "ON CONFLICT (batch, name) DO NOTHING",
            (self.batch, uuid.uuid4().hex),
        )
        found = self._rows(
            "SELECT value FROM dubkit_batch_meta WHERE batch = ? AND name = 'id'", (self.batch,)
        )
        return str(found[0]["value"])

    def set_checked(self, key: str, revision: int, verdict: str) -> None:
        """Keep a row revision's check verdict (``"fix: 2 to fix, ..."``) for its QA column."""
        self._run(
            "INSERT INTO dubkit_batch_meta (batch, name, value) VALUES (?, ?, ?) "
            "ON CONFLICT (batch, name) DO UPDATE SET value = excluded.value",
            (self.batch, f"qa|{key}|{revision}", verdict),
        )

    def checked(self) -> dict[tuple[str, int], str]:
        """Every kept check verdict, by (row key, revision)."""
        found = {}
        for record in self._rows(
            "SELECT name, value FROM dubkit_batch_meta WHERE batch = ? AND name LIKE 'qa|%'",
            (self.batch,),
        ):
            key, revision = str(record["name"]).split("|", 1)[1].rsplit("|", 1)
            found[(key, int(revision))] = str(record["value"])
        return found


def _row(record: dict[str, Any]) -> Row:
    record = dict(record)
    record["key"] = record.pop("row_key")
    return Row.from_record(record)


class _LockFile:
    """One process's record locks on a lock file, shared by every ledger of that file in the
    process: POSIX record locks belong to the process (two threads, or two ledgers, would both
    "get" one) and all go when any descriptor of the file is closed, so there is one
    descriptor per file and the process keeps its own count of who holds what."""

    _open: dict[Path, _LockFile] = {}
    _guard = threading.Lock()

    def __init__(self, path: Path) -> None:
        import fcntl  # POSIX: a claim is a record lock that dies with its process

        self._fcntl = fcntl
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self.held: set[int] = set()
        self.lock = threading.Lock()
        self.creating = threading.Lock()

    @classmethod
    def of(cls, path: Path) -> _LockFile:
        with cls._guard:
            key = path.resolve()
            if key not in cls._open:
                cls._open[key] = cls(key)
            return cls._open[key]

    def try_lock(self, number: int) -> bool:
        with self.lock:
            if number in self.held:
                return False
            try:
                self._fcntl.lockf(self.fd, self._fcntl.LOCK_EX | self._fcntl.LOCK_NB, 1, number)
            except OSError:
                return False
            self.held.add(number)
            return True

    def unlock(self, number: int) -> None:
        with self.lock:
            if number in self.held:
                self.held.discard(number)
                self._fcntl.lockf(self.fd, self._fcntl.LOCK_UN, 1, number)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Range 0: the create lock (waits for it)."""
        with self.creating:
            self._fcntl.lockf(self.fd, self._fcntl.LOCK_EX, 1, 0)
            try:
                yield
            finally:
                self._fcntl.lockf(self.fd, self._fcntl.LOCK_UN, 1, 0)


class SQLiteLedger(Ledger):
    """The ledger in one SQLite file; claims are record locks on a lock file beside it."""

    def __init__(self, path: str | os.PathLike[str], batch: str = "batch") -> None:
        super().__init__()
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.batch, self.where = batch, str(self.path)
        self._connection: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._io = threading.Lock()
        self._locks = _LockFile.of(self.path.parent / LOCK_FILE)
        for statement in SCHEMA:
            self._run(statement)

    def _db(self) -> sqlite3.Connection:
        """One connection for the process's threads, taken in turn (the caller holds
        ``_io``): one per row's thread would be a page cache made and dropped per row."""
        if self._connection is None or self._pid != os.getpid():
            db = sqlite3.connect(
                self.path, timeout=60, isolation_level=None, check_same_thread=False
            )
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._connection, self._pid = db, os.getpid()
        return self._connection

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        with self._io:
            return self._db().execute(sql, args).rowcount

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self._io:
            return [dict(r) for r in self._db().execute(sql, args).fetchall()]

    def _try_lock(self, number: int) -> bool:
        return self._locks.try_lock(number)

    def _unlock(self, number: int) -> None:
        self._locks.unlock(number)

    @contextmanager
    def _create_lock(self) -> Iterator[None]:
        with self._locks.exclusive():
            yield

    def close(self) -> None:
        with self._claims_lock:
            for key in list(self._claimed):
                self._unlock(lock_number(self.batch, key))
            self._claimed.clear()
        with self._io:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
