"""SQLite persistence for the sandbox: one file in the data dir, so state survives restarts.

One connection guarded by a re-entrant lock: the sandbox's writes are small and quick, and a
single connection keeps SQLite's locking out of the picture. Product modules add their own tables
with :meth:`Database.ensure`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_CORE_SCHEMA = """
CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS keys (
    api_key TEXT PRIMARY KEY, name TEXT NOT NULL, credits REAL NOT NULL, created_at TEXT NOT NULL,
    webhook_url TEXT, webhook_secret TEXT NOT NULL, previous_secret TEXT, rotated_at REAL);
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY, api_key TEXT NOT NULL, task_type TEXT NOT NULL,
    status TEXT NOT NULL, is_async INTEGER NOT NULL, request TEXT, result TEXT, message TEXT,
    error_code INTEGER, extra_data TEXT, pipeline_key TEXT, ready INTEGER NOT NULL DEFAULT 0,
    release_at REAL, release_polls INTEGER, polls INTEGER NOT NULL DEFAULT 0,
    deleted INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    seq INTEGER NOT NULL, charged REAL NOT NULL DEFAULT 0, refunded REAL NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS tasks_by_key ON tasks (api_key, deleted, seq);
CREATE INDEX IF NOT EXISTS tasks_by_type ON tasks (api_key, deleted, task_type, seq);
CREATE INDEX IF NOT EXISTS tasks_by_status ON tasks (api_key, deleted, status, seq);
CREATE INDEX IF NOT EXISTS tasks_by_seq ON tasks (seq);
CREATE INDEX IF NOT EXISTS tasks_running ON tasks (ready) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS tasks_running_by_key ON tasks (api_key)
    WHERE status = 'running' AND is_async = 1;
CREATE INDEX IF NOT EXISTS tasks_async_by_update ON tasks (updated_at) WHERE is_async = 1;
-- How many live tasks each key has by type and status, kept by triggers: tasks/list answers
-- its total without counting rows, so a page costs the same at 20 tasks as at 20,000.
CREATE TABLE IF NOT EXISTS task_counts (
    api_key TEXT NOT NULL, task_type TEXT NOT NULL, status TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (api_key, task_type, status));
CREATE TRIGGER IF NOT EXISTS task_counts_insert AFTER INSERT ON tasks WHEN NEW.deleted = 0
BEGIN
    INSERT INTO task_counts VALUES (NEW.api_key, NEW.task_type, NEW.status, 1)
    ON CONFLICT (api_key, task_type, status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS task_counts_delete AFTER DELETE ON tasks WHEN OLD.deleted = 0
BEGIN
    UPDATE task_counts SET n = n - 1 WHERE api_key = OLD.api_key
        AND task_type = OLD.task_type AND status = OLD.status;
END;
CREATE TRIGGER IF NOT EXISTS task_counts_update AFTER UPDATE OF status, deleted ON tasks
BEGIN
    UPDATE task_counts SET n = n - 1 WHERE OLD.deleted = 0 AND api_key = OLD.api_key
        AND task_type = OLD.task_type AND status = OLD.status;
    INSERT INTO task_counts SELECT NEW.api_key, NEW.task_type, NEW.status, 1
        WHERE NEW.deleted = 0
    ON CONFLICT (api_key, task_type, status) DO UPDATE SET n = n + 1;
END;
-- How many live rows each key has in a table that asked for it (Database.count_live_rows).
CREATE TABLE IF NOT EXISTS live_counts (
    tbl TEXT NOT NULL, api_key TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (tbl, api_key));
CREATE TABLE IF NOT EXISTS idempotency (
    api_key TEXT NOT NULL, path TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL,
    created_at REAL NOT NULL, PRIMARY KEY (api_key, path, key));
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT, api_key TEXT NOT NULL, task_id TEXT NOT NULL,
    event TEXT NOT NULL, pipeline_key TEXT NOT NULL, body BLOB NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, next_at REAL NOT NULL, state TEXT NOT NULL,
    last_error TEXT, created_at REAL NOT NULL, delivered_at REAL);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (state, next_at);
CREATE INDEX IF NOT EXISTS outbox_by_task ON outbox (task_id);
CREATE TABLE IF NOT EXISTS deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT, outbox_id INTEGER NOT NULL, attempt INTEGER NOT NULL,
    at REAL NOT NULL, url TEXT NOT NULL, status_code INTEGER, error TEXT,
    duration_ms REAL NOT NULL);
"""

# Added after the first release; see Database._add_columns.
_TASK_COLUMNS = {  # what each task charged and gave back
    "charged": "REAL NOT NULL DEFAULT 0",
    "refunded": "REAL NOT NULL DEFAULT 0",
}
_KEY_COLUMNS = {  # a key as a class's account (see dubkit.sandbox.accounts)
    "class_name": "TEXT",  # the student's name when a class roster made the key
    "disabled": "INTEGER NOT NULL DEFAULT 0",
    "max_tasks": "INTEGER",  # tasks running at once; NULL: no limit
    "max_storage": "INTEGER",  # uploaded bytes kept; NULL: no limit
    "last_seen": "REAL",
    "reset_at": "TEXT",  # when the teacher last reset the key (its older tasks are forgotten)
}


class Database:
    """A thread-safe SQLite file with a few conveniences."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        # Owner-only from the first byte (SQLite gives its -wal and -shm files the same mode).
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        os.chmod(self.path, 0o600)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._ensured: set[str] = set()
        self._counted: set[str] = set()
        self.ensure(_CORE_SCHEMA)
        self._add_columns("tasks", _TASK_COLUMNS)
        self._add_columns("keys", _KEY_COLUMNS)
        self._count_existing_tasks()

    def _count_existing_tasks(self) -> None:
        """A data dir made before task_counts existed: count its tasks once."""
        if (
            self.one("SELECT 1 FROM task_counts LIMIT 1") is None
            and self.one("SELECT 1 FROM tasks LIMIT 1") is not None
        ):
            self.execute(
                "INSERT INTO task_counts SELECT api_key, task_type, status, COUNT(*) "
                "FROM tasks WHERE deleted = 0 GROUP BY api_key, task_type, status"
            )

    def _add_columns(self, table: str, wanted: dict[str, str]) -> None:
        """Columns added after a table was first made: older data dirs gain them."""
        columns = {r["name"] for r in self.all(f"PRAGMA table_info({table})")}
        for column, declaration in wanted.items():
            if column not in columns:
                self.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")

    def ensure(self, schema: str) -> Database:
        """Create a product's tables and indexes if missing; cheap to call on every use."""
        if schema not in self._ensured:
            with self._lock:
                self._db.executescript(schema)
                self._ensured.add(schema)
        return self

    def count_live_rows(self, table: str) -> Database:
        """Keep, by triggers, how many live rows (``deleted = 0``) each ``api_key`` has in
        ``table``, so a list's total costs the same at 20 rows as at 300,000 (:meth:`live_rows`).
        Rows stored before the triggers existed are counted once, when they are made."""
        if table not in self._counted:
            with self.transaction() as db:
                new = not db.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?",
                    (f"{table}_count_insert",),
                ).fetchone()
                for statement in _live_count_triggers(table):
                    db.execute(statement)
                if new:
                    db.execute("DELETE FROM live_counts WHERE tbl = ?", (table,))
                    db.execute(
                        f"INSERT INTO live_counts SELECT ?, api_key, COUNT(*) FROM {table} "
                        "WHERE deleted = 0 GROUP BY api_key",
                        (table,),
                    )
            self._counted.add(table)
        return self

    def live_rows(self, table: str, api_key: str) -> int:
        """How many live rows ``api_key`` has in ``table`` (see :meth:`count_live_rows`)."""
        row = self.one("SELECT n FROM live_counts WHERE tbl = ? AND api_key = ?", (table, api_key))
        return row["n"] if row else 0

    def tables(self) -> list[str]:
        """The tables made so far (products make theirs on first use)."""
        return [
            r["name"]
            for r in self.all(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]

    def execute(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        with self._lock:
            return self._db.execute(sql, args)

    def store_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._lock:
            self._db.executemany(sql, rows)

    def all(self, sql: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def one(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Row | None:
        with self._lock:
            return self._db.execute(sql, args).fetchone()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All-or-nothing writes; holds the lock, so keep the body short."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def setting(self, name: str, default: Any = None) -> Any:
        row = self.one("SELECT value FROM settings WHERE name = ?", (name,))
        return json.loads(row["value"]) if row else default

    def set_setting(self, name: str, value: Any) -> None:
        self.execute(
            "INSERT INTO settings (name, value) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET value = excluded.value",
            (name, json.dumps(value)),
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _live_count_triggers(table: str) -> list[str]:
    add = (
        "INSERT INTO live_counts SELECT '{t}', NEW.api_key, 1 WHERE NEW.deleted = 0 "
        "ON CONFLICT (tbl, api_key) DO UPDATE SET n = n + 1;"
    )
    remove = (
        "UPDATE live_counts SET n = n - 1 WHERE OLD.deleted = 0 AND tbl = '{t}' "
        "AND api_key = OLD.api_key;"
    )
    return [
        f"CREATE TRIGGER IF NOT EXISTS {table}_count_insert AFTER INSERT ON {table} "
        f"BEGIN {add.format(t=table)} END",
        f"CREATE TRIGGER IF NOT EXISTS {table}_count_delete AFTER DELETE ON {table} "
        f"BEGIN {remove.format(t=table)} END",
        f"CREATE TRIGGER IF NOT EXISTS {table}_count_update AFTER UPDATE OF deleted, api_key "
        f"ON {table} BEGIN {remove.format(t=table)} {add.format(t=table)} END",
    ]
