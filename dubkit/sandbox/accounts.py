"""A key as a class's account: its quotas, what it has used, and the teacher's levers.

A class sandbox gives each student a key (``dubkit class create``). Besides credits, a key may
carry three limits, all off unless set (``POST /_sandbox/keys/update``):

* ``disabled``: every call is ``401``, the service's answer to a key it does not take.
* ``maxTasks``: async tasks running at once. One more create is ``402`` before the handler
  runs, so nothing is charged and the idempotency key stays unused. *choice* 402 is the
  interface's code for "not enough credits/quota to run a task"; a 429 would be retried by
  clients after seconds, while a slot frees only when a task ends (minutes for a dub).
* ``maxStorage``: uploaded bytes kept in the object store. A PUT that would go over is ``413``
  before its bytes are read.

Every refusal names the quota, what the key has used, and who can raise it (:func:`~dubkit.sandbox.backend.who_can_raise`).
*choice* The check and the create of one key's async task hold that key's lock, so two cells
sent at once cannot both take the last slot; other keys never wait on it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .backend import Backend, now_iso, who_can_raise
from .service_error import ServiceError

LAST_SEEN_STEP = 5.0  # seconds between writes of a key's last activity

_slot_locks: dict[tuple[int, str], threading.Lock] = {}
_slot_locks_guard = threading.Lock()
# Upload bytes on their way, per (sandbox, key): held by storage_room until they are stored.
_arriving: dict[tuple[int, str], int] = {}
_arriving_guard = threading.Lock()


def admitted(backend: Backend, api_key: str | None) -> dict[str, Any]:
    """The key's row, or ``401`` for a missing, unknown or disabled key; notes its activity."""
    key = backend.key(api_key) if api_key else None
    if key is None:
        raise ServiceError(401, "Invalid or missing API Key")  # the guide's words
    if key["disabled"]:
        raise ServiceError(
            401,
            "Invalid or missing API Key: this key is disabled; "
            + who_can_raise(key, "enable {name}", verb="enable"),
        )
    now = time.time()
    if (key["last_seen"] or 0) < now - LAST_SEEN_STEP:
        backend.db.execute("UPDATE keys SET last_seen = ? WHERE api_key = ?", (now, api_key))
    return key


def running_tasks(backend: Backend, api_key: str) -> int:
    """Async tasks of the key whose work is under way: a sync call is not one, and a deleted
    task still is until its work ends (deleting does not stop the pipeline)."""
    row = backend.db.one(
        "SELECT COUNT(*) AS n FROM tasks WHERE api_key = ? AND status = 'running' AND is_async = 1",
        (api_key,),
    )
    return int(row["n"]) if row else 0


@contextmanager
def task_slot(backend: Backend, api_key: str) -> Iterator[None]:
    """Hold one of the key's ``maxTasks`` slots while an async create runs, or ``402``."""
    key = backend.key(api_key) or {}
    limit = key.get("max_tasks")
    if limit is None:
        yield
        return
    with _slot_locks_guard:
        lock = _slot_locks.setdefault((id(backend), api_key), threading.Lock())
    with lock:
        running = running_tasks(backend, api_key)
        if running >= limit:
            raise ServiceError(
                402,
                f"Too many tasks running: the tasks quota of this key is {limit} at once and "
                f"{running} are running; wait for one to finish, or "
                + who_can_raise(key, "limits {name} --tasks N"),
            )
        yield


def stored_bytes(backend: Backend, api_key: str) -> int:
    """Uploaded bytes the key keeps: its live materials' files, objects stored but not yet
    registered, and the parts of its open multipart uploads. (Products make their tables on
    first use, so a table not made yet holds nothing.)"""
    tables = set(backend.db.tables())
    total = 0
    if "materials" in tables:
        total += _sum(
            backend,
            "SELECT SUM(json_extract(record, '$.filesize')) AS n FROM materials "
            "WHERE api_key = ? AND deleted = 0",
            api_key,
        )
    if "material_uploads" not in tables:
        return total
    if "storage_objects" in tables:
        total += _sum(
            backend,
            "SELECT SUM(o.size) AS n FROM storage_objects o JOIN material_uploads u "
            "ON o.key = u.object_key WHERE u.api_key = ?",
            api_key,
        )
    if "storage_parts" in tables:
        total += _sum(
            backend,
            "SELECT SUM(p.size) AS n FROM storage_parts p JOIN material_uploads u "
            "ON p.upload_id = u.upload_id WHERE u.api_key = ? AND u.state = 'open'",
            api_key,
        )
    return total


def _sum(backend: Backend, sql: str, api_key: str) -> int:
    row = backend.db.one(sql, (api_key,))
    return int(row["n"] or 0) if row else 0


@contextmanager
def storage_room(backend: Backend, object_key: str, adding: int) -> Iterator[str | None]:
    """Hold ``adding`` bytes of the storage quota of ``object_key``'s key while they arrive;
    yields why they would pass it instead (nothing held then), or None. Bytes on their way
    count with those kept, so uploads and parts sent at once cannot pass the quota together."""
    owner = backend.db.one(
        "SELECT k.* FROM material_uploads m JOIN keys k ON k.api_key = m.api_key "
        "WHERE m.object_key = ?",
        (object_key,),
    )
    if owner is None or owner["max_storage"] is None:
        yield None
        return
    held = (id(backend), owner["api_key"])
    with _arriving_guard:
        limit = owner["max_storage"]
        used = stored_bytes(backend, owner["api_key"]) + _arriving.get(held, 0)
        if used + adding > limit:
            refusal = (
                f"Storage quota exceeded: this key keeps {used} of its {limit} bytes and this "
                f"upload adds {adding}; delete a material, or "
                + who_can_raise(dict(owner), "limits {name} --storage SIZE")
            )
        else:
            refusal = None
            _arriving[held] = _arriving.get(held, 0) + adding
    if refusal:
        yield refusal
        return
    try:
        yield None
    finally:
        with _arriving_guard:
            _arriving[held] -= adding


def forget_work(backend: Backend, api_key: str) -> None:
    """A fresh start for one key: its tasks, materials, clones and uploads are forgotten (the
    key, its webhook settings and other keys' work stay)."""
    tables = backend.db.tables()
    with backend.db.transaction() as db:
        for table in tables:
            columns = {r["name"] for r in db.execute(f"PRAGMA table_info({table})")}
            if "api_key" not in columns or table == "keys":
                continue
            if "deleted" in columns:  # soft-deleted, as the service's own deletes are
                db.execute(f"UPDATE {table} SET deleted = 1 WHERE api_key = ?", (api_key,))
            elif table in ("material_uploads", "idempotency"):
                db.execute(f"DELETE FROM {table} WHERE api_key = ?", (api_key,))
        db.execute("UPDATE keys SET reset_at = ? WHERE api_key = ?", (now_iso(), api_key))
