"""Rules several products share: locales, pages, running a task now or in the background."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ... import locales
from ...schema import AsyncAcceptance, product_of_operation
from ..call import Call
from ..database import Database
from ..service_error import ServiceError

Work = Callable[[str], dict[str, Any]]  # work(task_id) -> the task's result, as answered


def check_locale(
    field: str, code: str | None, allowed: frozenset[str], *, allow_auto: bool = False
) -> None:
    if code is None or (allow_auto and code == locales.AUTO) or code in allowed:
        return
    hint = locales.closest(code, allowed)
    raise ServiceError(
        400,
        f"invalid request: {field}: unsupported locale {code!r}"
        + (f"; did you mean {', '.join(hint)}?" if hint else ""),
    )


MAX_PAGE_SIZE = 1000


def page_window(
    current_page: int | None, page_size: int | None, default_size: int
) -> tuple[int, int]:
    """``(offset, size)`` of a page. *choice* (the interface states no bounds): a page below 1
    is page 1, a size below 1 is the default, and a size above :data:`MAX_PAGE_SIZE` is capped."""
    current = min(max(1, current_page or 1), 2**40)  # beyond any store, within SQLite's int
    size = page_size if page_size and page_size > 0 else default_size
    size = min(size, MAX_PAGE_SIZE)
    return (current - 1) * size, size


def page(
    rows: list[Any], current_page: int | None, page_size: int | None, default_size: int
) -> tuple[list[Any], int]:
    """One page of rows already in memory (the voice catalogue) and how many there are."""
    start, size = page_window(current_page, page_size, default_size)
    return rows[start : start + size], len(rows)


def page_rows(
    store: Database,
    sql: str,
    args: Sequence[Any],
    current_page: int | None,
    page_size: int | None,
    default_size: int,
    total: int | None = None,
) -> tuple[list[Any], int]:
    """One page of ``sql``'s rows and how many rows it has in all, both from the database.

    ``sql`` is ``SELECT ... FROM ... WHERE ... ORDER BY ...``: the page is read with LIMIT and
    OFFSET (an index on the order makes that a short walk) and, unless the caller knows
    ``total`` already (a kept count), the total with COUNT over the same WHERE.
    """
    offset, size = page_window(current_page, page_size, default_size)
    if total is None:
        head, _, _ = sql.partition(" ORDER BY ")
        total = store.one("SELECT COUNT(*) AS n FROM (" + head + ")", args)["n"]  # type: ignore[index]
    rows = store.all(sql + " LIMIT ? OFFSET ?", [*args, size, offset])
    return rows, total


def run_sync(call: Call[Any], work: Work) -> dict[str, Any]:
    """Make the task record, run ``work(task_id)`` now and answer its result."""
    task_id = _new_task(call, _task_type(call), is_async=False)["task_id"]
    try:
        with call.backend.working_on(task_id):
            result = work(task_id)
    except BaseException:  # refused or crashed: no half-made task is left behind
        call.backend.db.execute("DELETE FROM tasks WHERE task_id = ?", (task_id,))
        raise
    call.backend.finish_sync(task_id, result)
    return result


def start_async(call: Call[Any], work: Work, task_type: str | None = None) -> dict[str, Any]:
    """Make the task record and run ``work(task_id)`` in the background; the task's row.

    The task's type is the operation's product's (:data:`dubkit.schema.PRODUCTS`) unless the
    request chose one (media translation: ``vt`` or ``at``)."""
    task = _new_task(call, task_type or _task_type(call), is_async=True)
    call.backend.run_async(task["task_id"], call.api_key, lambda: work(task["task_id"]))
    return task


def accepted(task: dict[str, Any]) -> dict[str, Any]:
    """What an async create answers: ``{taskId, createdAt}``."""
    return AsyncAcceptance(task_id=task["task_id"], created_at=task["created_at"]).to_wire()


def _task_type(call: Call[Any]) -> str:
    product = product_of_operation(call.op.name)
    if product is None:
        raise RuntimeError(f"{call.op.name} makes no task")
    return product.task_type


def _new_task(call: Call[Any], task_type: str, *, is_async: bool) -> dict[str, Any]:
    extra = call.raw.get("extraData") if is_async else None
    return call.backend.create_task(
        call.api_key, task_type, is_async=is_async, request=call.raw, extra_data=extra
    )


def task_result(task: dict[str, Any]) -> dict[str, Any] | None:
    """The result a tasks/detail shows: only once the task has ended."""
    if task["status"] == "running" or not task["result"]:
        return None
    return json.loads(task["result"])
