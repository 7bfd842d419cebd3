"""tasks/list, tasks/detail, tasks/delete (interface §2.5).

*choice* Lists are newest first; ``status`` filters by exact value; deleted tasks vanish from
list and detail (404) but their webhooks already queued still go out. A failed task's detail
carries ``result: {errorCode, errorMessage}`` so a poller learns why (the interface leaves the
failed shape open).
"""

from __future__ import annotations

from typing import Any

from ...schema import TaskDetail, TaskFailure, TaskIdBody, TaskListQuery, TaskPage, TaskSummary
from ..backend import Backend
from ..call import Call
from .common import page_window, task_result

# --------------------------------------------------------------------------- rules


def _page(backend: Backend, api_key: str, query: TaskListQuery) -> tuple[list[dict[str, Any]], int]:
    """Newest first; the total comes from the counts triggers keep (see the store's schema)."""
    filters = [("api_key", api_key)] + [
        (column, value)
        for column, value in (("task_type", query.task_type), ("status", query.status))
        if value
    ]
    where = " AND ".join(f"{column} = ?" for column, _ in filters)
    args = [value for _, value in filters]
    offset, size = page_window(query.current_page, query.page_size, default_size=20)
    rows = backend.db.all(
        f"SELECT * FROM tasks WHERE {where} AND deleted = 0 ORDER BY seq DESC LIMIT ? OFFSET ?",
        [*args, size, offset],
    )
    total = backend.db.one(f"SELECT COALESCE(SUM(n), 0) AS n FROM task_counts WHERE {where}", args)
    return [dict(r) for r in rows], total["n"]  # type: ignore[index]


# --------------------------------------------------------------------------- answers


def _summary(task: dict[str, Any]) -> TaskSummary:
    return TaskSummary(
        task_id=task["task_id"],
        task_type=task["task_type"],
        status=task["status"],
        created_at=task["created_at"],
        updated_at=task["updated_at"],
    )


def detail_of(task: dict[str, Any]) -> TaskDetail:
    """A task row as tasks/detail answers it."""
    result = task_result(task)
    if task["status"] == "failed":
        result = TaskFailure(error_code=task["error_code"], error_message=task["message"]).to_wire()
    return TaskDetail(
        task_id=task["task_id"], task_type=task["task_type"], status=task["status"], result=result
    )


# --------------------------------------------------------------------------- handlers


def list_tasks(call: Call[TaskListQuery]) -> dict[str, Any]:
    rows, total = _page(call.backend, call.api_key, call.body)
    return TaskPage(records=[_summary(r) for r in rows], total=total).to_wire()


def detail(call: Call[TaskIdBody]) -> dict[str, Any]:
    task = call.backend.record_poll(call.backend.find_task(call.api_key, call.body.task_id))
    return detail_of(task).to_wire()


def delete(call: Call[TaskIdBody]) -> None:
    task = call.backend.find_task(call.api_key, call.body.task_id)
    call.backend.db.execute("UPDATE tasks SET deleted = 1 WHERE task_id = ?", (task["task_id"],))
