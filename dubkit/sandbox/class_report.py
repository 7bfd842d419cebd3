"""The teacher's view of a class sandbox (``GET /_sandbox/class``): every student's key with
what it has done, read from the sandbox's own records.

Per key: credits left and spent (tasks' charged less refunded), the quotas, uploaded bytes
kept, the last call's time, tasks by type and status (the ``task_counts`` table, so a row
costs the same at 20 tasks as at 20,000), the latest failed tasks with their messages, and the
latest finished speech and dubs as ``tasks/detail`` answers them (a view plays them without
calling the service with the student's key).
"""

from __future__ import annotations

import json
from typing import Any

from .._util.masking import mask_key
from ..schema.products import DUBBING, TTS
from ..schema.sandbox_admin import ClassReport, StudentReport, TaskSeen
from . import accounts
from .backend import Backend
from .products.tasks import detail_of

LATEST = 3  # finished results and errors shown per student
PLAYABLE = TTS.task_types + DUBBING.task_types


def report(backend: Backend, *, everyone: bool = False) -> ClassReport:
    """The class: keys a roster made (every key with ``everyone``), in the order made."""
    keys = [k for k in backend.keys() if everyone or k["class_name"]]
    return ClassReport(students=[_student(backend, k) for k in keys])


def _student(backend: Backend, key: dict[str, Any]) -> StudentReport:
    api_key = key["api_key"]
    tasks: dict[str, dict[str, int]] = {}
    for row in backend.db.all(
        "SELECT task_type, status, n FROM task_counts WHERE api_key = ? AND n > 0", (api_key,)
    ):
        tasks.setdefault(row["task_type"], {})[row["status"]] = row["n"]
    return StudentReport(
        name=key["class_name"] or key["name"],
        api_key=mask_key(api_key),
        credits=key["credits"],
        spent=backend.spent(api_key),
        disabled=bool(key["disabled"]),
        max_tasks=key["max_tasks"],
        max_storage=key["max_storage"],
        stored=accounts.stored_bytes(backend, api_key),
        last_seen=key["last_seen"],
        tasks=tasks,
        errors=_latest(backend, api_key, "failed", ()),
        latest=_latest(backend, api_key, "finished", PLAYABLE),
    )


def _latest(
    backend: Backend, api_key: str, status: str, task_types: tuple[str, ...]
) -> list[TaskSeen]:
    of_type = f"AND task_type IN ({', '.join('?' * len(task_types))})" if task_types else ""
    rows = backend.db.all(
        f"SELECT * FROM tasks WHERE api_key = ? AND deleted = 0 AND status = ? {of_type} "
        "ORDER BY seq DESC LIMIT ?",
        (api_key, status, *task_types, LATEST),
    )
    return [
        TaskSeen(
            **detail_of(dict(r)).model_dump(),
            created_at=r["created_at"],
            updated_at=r["updated_at"],
            request=json.loads(r["request"]) if r["request"] else None,
        )
        for r in rows
    ]
