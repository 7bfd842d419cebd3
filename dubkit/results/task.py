"""A task the service is (or was) running: poll it, wait for it, read its typed result.

>>> task = client.translate.create_async(["Hello"], source="en-US", target="fr-FR")
>>> task.wait(timeout=60).result.to_frame()
>>> dubkit.monitor(task)                # a cell that refreshes itself until the task ends
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .._transport import AsyncTransport, Transport
from .._transport.plans import Call, Offload, Plan, Sleep
from ..errors import APITimeoutError, DubkitError, TaskFailedError, TaskTimeoutError
from ..schema import (
    CLONE,
    DUBBING,
    KNOWN_STATUSES,
    STATUS_SYNONYMS,
    TERMINAL_STATUSES,
    TRANSLATION,
    TTS,
    TaskContext,
    TaskDetail,
    TaskFailure,
    TaskSummary,
    product_of_task_type,
)
from ..views.tasks import task_table_html
from ._display import ShowsMedia
from .clone import Clone
from .dubbing import DubbingResult
from .speech import Speech
from .translation import Translation

if TYPE_CHECKING:
    import pandas as pd  # imported where a table is made: pandas is slow to import

Converter = Callable[[Transport, dict[str, Any], Any], Any]
# Task type -> how a finished task's raw ``result`` becomes a typed object, given its product's
# task context (what the creating call knew that the result lacks, e.g. the source texts): each
# product's class, under each of its task types. A product without a class here gets its result
# model (``Product.result``).
RESULT_TYPES: dict[str, Converter] = {
    task_type: convert
    for product, convert in (
        (TTS, Speech.from_task),
        (TRANSLATION, Translation.from_task),
        (CLONE, Clone.from_task),
        (DUBBING, DubbingResult.from_task),
    )
    for task_type in product.task_types
}


def result_of(
    transport: Transport, task_type: str | None, raw: dict[str, Any], context: TaskContext | None
) -> Any:
    """A finished task's typed result (the raw dict for a task type dubkit does not know)."""
    product = product_of_task_type(task_type)
    if product is None:
        return raw
    convert = RESULT_TYPES.get(task_type or "")
    if convert is None:
        return transport.read(product.result, raw)
    return convert(transport, raw, context if isinstance(context, product.context) else None)


class Task(ShowsMedia):
    """A task the service is (or was) running. Cheap to hold; :meth:`refresh` asks again."""

    def __init__(
        self,
        transport: Transport | AsyncTransport,
        task_id: str,
        *,
        task_type: str | None = None,
        status: str | None = None,
        created_at: str | None = None,
        idempotency_key: str | None = None,
        context: TaskContext | None = None,
    ) -> None:
        self._transport = transport
        self.context = context
        self.task_id = task_id
        self.task_type = task_type
        self.status = status
        self.created_at = created_at
        self.idempotency_key = idempotency_key
        self.raw_result: dict[str, Any] | None = None
        self._pushed = False  # the raw result came by webhook (documented fields only)
        self._result: Any = None
        self._started = parse_time(created_at) or time.time()
        self._ended: float | None = None
        self._watchers: list[Callable[[Task], object]] = []

    def __repr__(self) -> str:
        return f"Task({self.task_id!r}, type={self.task_type!r}, status={self.status!r})"

    @property
    def done(self) -> bool:
        """True once the task has ended (finished or failed)."""
        return self.status in TERMINAL_STATUSES

    @property
    def subject(self) -> str:
        """What the task makes, in a few words (``'fr-FR dub'``, ``'speech'``): what a task
        cell says when it ends."""
        product = product_of_task_type(self.task_type)
        word = _SUBJECTS.get(product.name if product else "", self.task_type or "task")
        target = getattr(self.context, "target", None)
        return f"{target} {word}" if target else word

    @property
    def elapsed(self) -> float:
        """Seconds since creation, frozen once the task is seen ended."""
        return (self._ended or time.time()) - self._started

    @property
    def result(self) -> Any:
        """The typed result once finished (``None`` before); raw dict for unknown types.

        Made once: a result that embeds its media fetches them here, never when shown.
        """
        if self.raw_result is None or self.status != "finished":
            return None
        if self._result is None:
            self._transport.blocking.run(self._make_result())
        return self._result

    def _make_result(self) -> Plan[None]:
        if self._result is None and self._pushed and self._transport.talks_to_sandbox:
            pushed, self._pushed, self.raw_result = self.raw_result, False, None
            try:
                yield from self._refresh()  # the sandbox's extras come with tasks/detail's answer
            except DubkitError:
                pass  # the pushed copy is the result, without the extras
            if self.raw_result is None:
                self.raw_result = pushed
        if self._result is None and self.raw_result is not None:
            # made off the event loop for the async client: it may fetch the result's media
            self._result = yield Offload(
                result_of, (self._transport.blocking, self.task_type, self.raw_result, self.context)
            )

    def result_if_made(self) -> Any:
        """The typed result if it was made already (views never fetch), else None."""
        return self._result

    @property
    def error_message(self) -> str | None:
        """What the service said of a failed task; None unless it failed."""
        if self.status == "failed" and self.raw_result:
            said = TaskFailure.model_validate(self.raw_result).error_message
            return said if isinstance(said, str) and said else str(self.raw_result)
        return None

    def refresh(self, *, deadline: float | None = None) -> Task:
        """Ask the service how the task stands now; this task, updated."""
        return self._transport.run(self._refresh(deadline))  # type: ignore[return-value]

    def _refresh(self, deadline: float | None = None) -> Plan[Task]:
        data = yield Call("tasks.detail", {"task_id": self.task_id}, deadline=deadline)
        detail = self._transport.read(TaskDetail, data)
        self.apply(detail.task_type, detail.status, detail.result)
        return self

    def watch(self, seen_ended: Callable[[Task], object]) -> Callable[[], None]:
        """Call ``seen_ended(task)`` in whichever thread first sees this task end (a wait, a
        poll, a webhook); returns what stops it. A task cell watching the same task learns
        the end from ``wait()`` at once, in the cell that waited."""
        self._watchers.append(seen_ended)
        return lambda: self._watchers.remove(seen_ended) if seen_ended in self._watchers else None

    def fresh(self) -> Task:
        """A new copy as the service sees the task now (this one is left as it is)."""
        return task_for(
            self._transport,
            self.task_id,
            task_type=self.task_type,
            created_at=self.created_at,
            context=self.context,
        ).refresh()

    def polled(self) -> Task:
        """A fresh copy asked from this thread, whatever the client: what a task cell's own
        thread polls with (an :class:`AsyncTask`'s calls belong to its event loop)."""
        return Task(
            self._transport.blocking,
            self.task_id,
            task_type=self.task_type,
            created_at=self.created_at,
            context=self.context,
        ).refresh()

    def apply(
        self,
        task_type: str | None,
        status: str | None,
        result: dict[str, Any] | None,
        *,
        pushed: bool = False,
    ) -> None:
        """Take a newer state (from a poll, or a webhook event when ``pushed``).

        An end once seen is final: a late poll answered before a pushed event cannot move a
        finished or failed task back to running. A pushed result carries the documented fields
        only; from a dubkit sandbox the typed result is read once from ``tasks/detail``, whose
        answer brings the sandbox's labelled extras too.
        """
        if pushed and result is not None and self.raw_result is None:
            self._pushed = True
        was_done = self.done
        self.task_type = task_type or self.task_type
        if not self.done:
            self.status = canonical_status(status) or self.status
        if result is not None and self.raw_result is None:
            self.raw_result = result
        if self.done and self._ended is None:
            self._ended = time.time()
        if self.done and not was_done:
            for seen_ended in list(self._watchers):
                seen_ended(self)

    def wait(
        self, timeout: float = 600, *, poll_interval: float = 0.5, max_interval: float = 5.0
    ) -> Task:
        """Poll with backoff until the task ends; raise if it failed or the deadline passed."""
        plan = self._wait(timeout, poll_interval, max_interval)
        return self._transport.run(plan)  # type: ignore[return-value]

    def _wait(self, timeout: float, poll_interval: float, max_interval: float) -> Plan[Task]:
        deadline = time.monotonic() + timeout
        interval = poll_interval
        while True:
            try:
                yield from self._refresh(deadline)
            except APITimeoutError as exc:
                if time.monotonic() < deadline:
                    raise
                raise TaskTimeoutError(  # unanswered, or still being retried: say which
                    f"task {self.task_id} ({self.task_type}): its last poll did not end before "
                    f"the {timeout:g}s deadline ({exc.message}); last seen {self.status!r}",
                    task=self,
                    last_status=self.status,
                ) from None
            if self.status == "failed":
                said = self.error_message or "the service gave no reason"
                raise TaskFailedError(  # with the req_id of the poll that saw it fail
                    f"task {self.task_id} ({self.task_type}) failed: {said}",
                    task=self,
                    **self._transport.answered(),
                )
            if self.done:
                if self.status == "finished":  # made here, where waiting is expected
                    yield from self._make_result()
                return self
            left = deadline - time.monotonic()
            if left > 0:
                # a poll needs time to be answered: when the next would start with less than
                # one poll_interval left, sleep out the deadline instead of sending a poll
                # that the deadline cuts off before it can be answered
                yield Sleep(left if left - interval < poll_interval else interval)
                interval = min(max_interval, interval * 1.5)
            if time.monotonic() >= deadline:  # answered, and still not ended: say so
                raise TaskTimeoutError(
                    f"task {self.task_id} ({self.task_type}) was still {self.status!r} after "
                    f"{timeout:g}s (every poll was answered); call .wait() again or "
                    f"dubkit.monitor(task) to keep watching",
                    task=self,
                    last_status=self.status,
                )

    def delete(self) -> None:
        """Delete the task's record on the service (it leaves ``client.tasks.list()``)."""
        self._transport.run(self._delete())

    def _delete(self) -> Plan[None]:
        yield Call("tasks.delete", {"task_id": self.task_id})

    def _repr_html_(self) -> str:
        return task_table_html([self])


class AsyncTask(Task):
    """A task of the async client (:class:`dubkit.AsyncClient`): the same task, whose calls
    are awaited. Its result, table and cell are a :class:`Task`'s.

    >>> task = await client.translate.create_async(["Hello"], source="en-US", target="fr-FR")
    >>> (await task.wait(timeout=60)).result.to_frame()
    """

    _transport: AsyncTransport

    @classmethod
    def of(cls, task: Task, transport: AsyncTransport) -> AsyncTask:
        """The async client's handle on ``task``, one a sync call made (a dub or a clone
        started off the loop): what is known of it carries over."""
        if isinstance(task, AsyncTask):
            return task
        made = cls(
            transport,
            task.task_id,
            task_type=task.task_type,
            status=task.status,
            created_at=task.created_at,
            idempotency_key=task.idempotency_key,
            context=task.context,
        )
        made.raw_result, made._pushed, made._result = task.raw_result, task._pushed, task._result
        made._started, made._ended = task._started, task._ended
        return made

    async def refresh(self, *, deadline: float | None = None) -> AsyncTask:  # type: ignore[override]
        """Ask the service how the task stands now; this task, updated."""
        await self._transport.run(self._refresh(deadline))
        return self

    async def wait(  # type: ignore[override]
        self, timeout: float = 600, *, poll_interval: float = 0.5, max_interval: float = 5.0
    ) -> AsyncTask:
        """Poll with backoff until the task ends (the event loop runs meanwhile); raise if it
        failed or the deadline passed."""
        await self._transport.run(self._wait(timeout, poll_interval, max_interval))
        return self

    async def delete(self) -> None:  # type: ignore[override]
        """Delete the task's record on the service (it leaves ``client.tasks.list()``)."""
        await self._transport.run(self._delete())

    async def fresh(self) -> AsyncTask:  # type: ignore[override]
        """A new copy as the service sees the task now (this one is left as it is)."""
        copy = AsyncTask(
            self._transport,
            self.task_id,
            task_type=self.task_type,
            created_at=self.created_at,
            context=self.context,
        )
        return await copy.refresh()


def task_for(transport: Transport | AsyncTransport, task_id: str, **facts: Any) -> Task:
    """A :class:`Task` handle for the sync client's transport, an :class:`AsyncTask` for the
    async client's."""
    if isinstance(transport, AsyncTransport):
        return AsyncTask(transport, task_id, **facts)
    return Task(transport, task_id, **facts)


class TaskList(list[TaskSummary]):
    """Task records (:class:`dubkit.schema.TaskSummary`) from ``client.tasks.list``;
    ``.to_frame()`` for a table."""

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(
            [t.model_dump() for t in self],
            columns=["task_id", "task_type", "status", "created_at", "updated_at"],
        )

    def _repr_html_(self) -> str:
        table: str = self.to_frame()._repr_html_()
        return table


_unknown_seen: set[str] = set()
_SUBJECTS = {
    "tts": "speech",
    "translation": "translation",
    "clone": "voice clone",
    "dubbing": "dub",
}


def canonical_status(status: str | None) -> str | None:
    """The status as dubkit reasons about it: ``complete`` means ``finished``.

    A status the interface does not name is kept as it is and treated as not yet final (a
    newer service may add ``queued`` or ``processing``); dubkit warns once per such name.
    """
    if status is None:
        return None
    status = STATUS_SYNONYMS.get(status, status)
    if status not in KNOWN_STATUSES and status not in _unknown_seen:
        _unknown_seen.add(status)
        warnings.warn(
            f"the service reported task status {status!r}, which dubkit does not "
            f"know; treating it as not yet final",
            stacklevel=3,
        )
    return status


def parse_time(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return (
            datetime.fromisoformat(stamp.replace("Z", "+00:00"))
            .astimezone(timezone.utc)
            .timestamp()
        )
    except ValueError:
        return None


__all__ = [
    "Task",
    "AsyncTask",
    "task_for",
    "TaskList",
    "RESULT_TYPES",
    "result_of",
    "canonical_status",
]
