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
from .common import page, task_result


def summary(task: dict[str, Any]) -> dict[str, Any]:
    return {"taskId": task["task_id"], "taskType": task["task_type"], "status": task["status"],
            "createdAt": task["created_at"], "updatedAt": task["updated_at"]}


@handles("tasks.list")
def list_tasks(call: Call) -> dict[str, Any]:
    query: TaskListQuery = call.body  # type: ignore[assignment]
    sql = "SELECT * FROM tasks WHERE api_key = ? AND deleted = 0"
    args: list[Any] = [call.api_key]
    if query.task_type:
        sql += " AND task_type = ?"
        args.append(query.task_type)
    if query.status:
        sql += " AND status = ?"
        args.append(query.status)
    rows = [summary(dict(r)) for r in call.backend.store.all(sql + " ORDER BY seq DESC", args)]
    return page(rows, query.current_page, query.page_size, default_size=20)


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
