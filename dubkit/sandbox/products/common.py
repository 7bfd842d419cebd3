"""Rules several products share: locales, pages, async task plumbing."""

from __future__ import annotations

import json
from typing import Any, Callable

from ... import locales
from ..backend import ServiceError
from ..operations import Call, handles

Plan = Callable[[Call], Callable[[str], dict[str, Any]]]


def check_locale(field: str, code: str | None, allowed: frozenset[str], *,
                 allow_auto: bool = False) -> None:
    if code is None or (allow_auto and code == locales.AUTO) or code in allowed:
        return
    hint = locales.closest(code, allowed)
    raise ServiceError(400, f"invalid request: {field}: unsupported locale {code!r}"
                            + (f"; did you mean {', '.join(hint)}?" if hint else ""))


def page(rows: list[Any], current_page: int | None, page_size: int | None,
         default_size: int) -> dict[str, Any]:
    current = current_page or 1
    size = page_size or default_size
    start = (current - 1) * size
    return {"records": rows[start:start + size], "total": len(rows)}


def create(call: Call, task_type: str, work: Callable[[str], dict[str, Any]], *,
           is_async: bool) -> dict[str, Any]:
    """Make the task record, then run ``work(task_id)`` now (sync) or in the background (async).

    Sync answers ``work``'s result; async answers the acceptance ``{taskId, createdAt}``.
    """
    extra = call.raw.get("extraData") if is_async else None
    task = call.backend.create_task(call.api_key, task_type, is_async=is_async,
                                    request=call.raw, extra_data=extra)
    task_id = task["task_id"]
    if not is_async:
        try:
            result = work(task_id)
        except BaseException:   # refused or crashed: no half-made task is left behind
            call.backend.store.execute("DELETE FROM tasks WHERE task_id = ?", (task_id,))
            raise
        call.backend.finish_sync(task_id, result)
        return result
    call.backend.run_async(task_id, lambda: work(task_id))
    return {"taskId": task_id, "createdAt": task["created_at"]}


def task_result(task: dict[str, Any]) -> dict[str, Any] | None:
    """The result a tasks/detail shows: only once the task has ended."""
    if task["status"] == "running" or not task["result"]:
        return None
    return json.loads(task["result"])


def sync_and_async(product: str, task_type: str, plan: Plan) -> None:
    """Register ``<product>.create`` and ``<product>.create_async`` with one plan.

    ``plan(call)`` checks the request and charges for it (refusals raise before any task
    exists), then returns the work ``work(task_id) -> result`` that both forms run.
    """
    handles(f"{product}.create")(
        lambda call: create(call, task_type, plan(call), is_async=False))
    handles(f"{product}.create_async")(
        lambda call: create(call, task_type, plan(call), is_async=True))
