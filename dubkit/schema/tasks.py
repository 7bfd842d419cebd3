"""Tasks: their records, statuses and list query (§2.5, §3.4); their types come from the
product table."""

from __future__ import annotations

from typing import Any

from pydantic import Field, StrictStr

from .base import Page, SandboxExtra, Wire
from .products import TaskType

TERMINAL_STATUSES = frozenset({"finished", "failed"})
# Task status is a free string (§6.2). "complete" is the interface's own word for a task whose
# results are in (§7.2 #4): the same as "finished".
STATUS_SYNONYMS = {"complete": "finished"}
KNOWN_STATUSES = TERMINAL_STATUSES | {"running"}


class TaskListQuery(Wire):
    task_type: TaskType | None = None
    status: str | None = None
    current_page: int | None = None
    page_size: int | None = None


class TaskSummary(Wire):
    task_id: str | None = None
    task_type: str | None = None
    status: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


class TaskPage(Page):
    records: list[TaskSummary] = Field(default_factory=list)  # type: ignore[assignment]


class TaskDetail(Wire):
    task_id: str | None = None
    task_type: str | None = None
    status: str | None = None
    result: dict[str, Any] | None = None


class TaskFailure(SandboxExtra):
    """A failed task's ``result`` as the sandbox's tasks/detail shows it, and as dubkit keeps a
    failure a webhook announced (the interface does not specify it)."""

    # Any: the interface leaves a failure's shape open, and reading it must never fail.
    error_code: Any = None
    error_message: Any = None


class TaskIdBody(Wire):
    task_id: StrictStr
