"""Rules several products share: locales, pages, async task plumbing."""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence

from ... import locales
from ..backend import ServiceError
from ..operations import Call, handles
from ..store import Store

Plan = Callable[[Call], Callable[[str], dict[str, Any]]]


def check_locale(field: str, code: str | None, allowed: frozenset[str], *,
                 allow_auto: bool = False) -> None:
    if code is None or (allow_auto and code == locales.AUTO) or code in allowed:
        return
    hint = locales.closest(code, allowed)
    raise ServiceError(400, f"invalid request: {field}: unsupported locale {code!r}"
                            + (f"; did you mean {', '.join(hint)}?" if hint else ""))


MAX_PAGE_SIZE = 1000


def page_window(current_page: int | None, page_size: int | None,
                default_size: int) -> tuple[int, int]:
    """``(offset, size)`` of a page. *choice* (the interface states no bounds): a page below 1
    is page 1, a size below 1 is the default, and a size above :data:`MAX_PAGE_SIZE` is capped."""
    current = min(max(1, current_page or 1), 2**40)   # beyond any store, within SQLite's int
    size = page_size if page_size and page_size > 0 else default_size
    size = min(size, MAX_PAGE_SIZE)
    return (current - 1) * size, size


def page(rows: list[Any], current_page: int | None, page_size: int | None,
         default_size: int) -> dict[str, Any]:
    """One page of rows already in memory (the voice catalogue)."""
    start, size = page_window(current_page, page_size, default_size)
    return {"records": rows[start:start + size], "total": len(rows)}


def page_rows(store: Store, sql: str, args: Sequence[Any], current_page: int | None,
              page_size: int | None, default_size: int) -> tuple[list[Any], int]:
    """One page of ``sql``'s rows and how many rows it has in all, both from the database.

    ``sql`` is ``SELECT ... FROM ... WHERE ... ORDER BY ...``: the page is read with LIMIT and
    OFFSET and the total with COUNT over the same WHERE, so neither loads every row.
    """
    offset, size = page_window(current_page, page_size, default_size)
    head, _, _ = sql.partition(" ORDER BY ")
    total = store.one("SELECT COUNT(*) AS n FROM (" + head + ")", args)["n"]  # type: ignore[index]
    rows = store.all(sql + " LIMIT ? OFFSET ?", [*args, size, offset])
    return rows, total


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
            with call.backend.working_on(task_id):
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
