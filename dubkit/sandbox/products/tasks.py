"""tasks/list, tasks/detail, tasks/delete (interface §2.5).

*choice* Lists are newest first; ``status`` filters by exact value; deleted tasks vanish from
list and detail (404) but their webhooks already queued still go out. A failed task's detail
carries ``result: {errorCode, errorMessage}`` so a poller learns why (the interface leaves the
failed shape open).
"""

from __future__ import annotations

from typing import Any

from ...schema import TaskIdBody, TaskListQuery
from ..operations import Call, handles
from .common import page_window, task_result


def summary(task: dict[str, Any]) -> dict[str, Any]:
    return {"taskId": task["task_id"], "taskType": task["task_type"], "status": task["status"],
            "createdAt": task["created_at"], "updatedAt": task["updated_at"]}


@handles("tasks.list")
def list_tasks(call: Call) -> dict[str, Any]:
    """Newest first; the total comes from the counts triggers keep (see the store's schema)."""
    query: TaskListQuery = call.body  # type: ignore[assignment]
    filters = [("api_key", call.api_key)] + [(column, value) for column, value in (
        ("task_type", query.task_type), ("status", query.status)) if value]
    where = " AND ".join(f"{column} = ?" for column, _ in filters)
    args = [value for _, value in filters]
    offset, size = page_window(query.current_page, query.page_size, default_size=20)
    store = call.backend.store
    rows = store.all(f"SELECT * FROM tasks WHERE {where} AND deleted = 0 ORDER BY seq DESC "
                     f"LIMIT ? OFFSET ?", [*args, size, offset])
    total = store.one(f"SELECT COALESCE(SUM(n), 0) AS n FROM task_counts WHERE {where}", args)
    return {"records": [summary(dict(r)) for r in rows], "total": total["n"]}  # type: ignore


@handles("tasks.detail")
def detail(call: Call) -> dict[str, Any]:
    body: TaskIdBody = call.body  # type: ignore[assignment]
    task = call.backend.record_poll(call.backend.find_task(call.api_key, body.task_id))
    result = task_result(task)
    if task["status"] == "failed":
        result = {"errorCode": task["error_code"], "errorMessage": task["message"]}
    return {"taskId": task["task_id"], "taskType": task["task_type"], "status": task["status"],
            "result": result}


@handles("tasks.delete")
def delete(call: Call) -> None:
    body: TaskIdBody = call.body  # type: ignore[assignment]
    task = call.backend.find_task(call.api_key, body.task_id)
    call.backend.store.execute("UPDATE tasks SET deleted = 1 WHERE task_id = ?",
                               (task["task_id"],))
    return None
