"""Tasks: ``client.tasks`` lists, looks up and deletes the jobs of every product.

>>> client.tasks.list(task_type="textTranslation").to_frame()
>>> task = client.tasks.get("task_…")             # a Task as it is now: .wait(), .result
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from .._util.deprecation import renamed, warn_renamed
from ..results import AsyncTask, Task, TaskList
from ..schema import TaskSummary
from ._base import PageWalk, Resource


class TasksResource(Resource):
    """``client.tasks``: records of jobs made by any product, scoped to the API key."""

    def list(
        self,
        *,
        task_type: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        page_size: int = 100,
    ) -> TaskList:
        """All matching tasks, newest first, fetched page by page (``limit`` caps the count)."""
        return TaskList(
            self._transport.read(TaskSummary, r, "tasks.list")
            for r in self.iterate(
                task_type=task_type, status=status, limit=limit, page_size=page_size
            )
        )

    def iterate(
        self,
        *,
        task_type: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        page_size: int = 100,
    ) -> Iterator[dict[str, Any]]:
        """The matching task records (wire dicts), page by page as they are read."""

        query = {"task_type": task_type, "status": status}
        return self._pages("tasks.list", query, page_size, limit)

    def get(self, task_id: str, task_type: str | None = None, *, fetch: bool = True) -> Task:
        """The task ``task_id`` as the service sees it now (``NotFoundError`` if this key has
        none); ``fetch=False`` gives a handle without asking yet (``.wait()`` asks).

        ``task_type`` is how ``get`` was called when it only made a handle: that call still
        does (with a DeprecationWarning); the service's answer says the type."""
        if task_type is not None:
            warn_renamed(
                "client.tasks.get(task_id, task_type)", "client.tasks.get(task_id, fetch=False)"
            )
            return Task(self._transport, task_id, task_type=task_type)
        task = Task(self._transport, task_id)
        return task.refresh() if fetch else task

    def delete(self, task_id: str) -> None:
        """Delete the record of task ``task_id`` (it leaves ``list``)."""
        self.get(task_id, fetch=False).delete()

    detail = renamed("get")


class AsyncTasksResource(TasksResource):
    """``client.tasks`` of :class:`dubkit.AsyncClient`: the same lookups, awaited; tasks are
    :class:`~dubkit.results.AsyncTask` (``await task.wait()``).

    >>> async for record in client.tasks.iterate(status="running"):
    ...     print(record["taskId"])
    """

    async def list(  # type: ignore[override]
        self,
        *,
        task_type: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        page_size: int = 100,
    ) -> TaskList:
        """All matching tasks, newest first, fetched page by page (``limit`` caps the count)."""
        query = {"task_type": task_type, "status": status}
        records = await self._arun(self._all_pages("tasks.list", query, page_size, limit))
        return TaskList(self._transport.read(TaskSummary, r, "tasks.list") for r in records)

    async def iterate(  # type: ignore[override]
        self,
        *,
        task_type: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        page_size: int = 100,
    ) -> AsyncIterator[dict[str, Any]]:
        """The matching task records (wire dicts), page by page as they are read."""
        walk = PageWalk({"task_type": task_type, "status": status}, page_size, limit)
        while (asked := walk.next_query()) is not None:
            for record in walk.take(await self._arun(self._page_of("tasks.list", asked))):
                yield record

    async def get(self, task_id: str, *, fetch: bool = True) -> AsyncTask:  # type: ignore[override]
        """The task ``task_id`` as the service sees it now (``NotFoundError`` if this key has
        none); ``fetch=False`` gives a handle without asking yet."""
        task = AsyncTask(self._transport, task_id)
        return await task.refresh() if fetch else task

    async def delete(self, task_id: str) -> None:  # type: ignore[override]
        """Delete the record of task ``task_id`` (see :meth:`TasksResource.delete`)."""
        await (await self.get(task_id, fetch=False)).delete()
