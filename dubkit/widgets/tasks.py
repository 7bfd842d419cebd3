"""Task cells that refresh themselves until every task has ended.

>>> dubkit.monitor(task)                  # one task
>>> dubkit.monitor([t1, t2, t3])          # several, one row each

A background thread polls with backoff (0.5 s growing to 5 s) and stops at a terminal state or
after ``timeout``. While a :class:`dubkit.webhooks.Receiver` runs in this process, events it
accepts update their row the instant they arrive and polling drops to a slow fallback
(``push_interval``, 30 s), in case an event never comes.

The cell is the live channel's widget (an anywidget: it refreshes in JupyterLab, Notebook 7,
Voila, VS Code, Colab and marimo). Saved notebooks, nbviewer and nbval see the static HTML
table that travels in the same output; when the watch ends it is written again, so a saved
notebook shows the last state ("finished"), not the first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..frontends.channel import LiveHTML
from ..results import Task
from ..views.tasks import task_table_html
from ..webhooks import push
from ._threads import CellContext, settle_later, start_cell_thread

if TYPE_CHECKING:
    from ..webhooks import WebhookEvent


class TaskMonitor(LiveHTML):
    """A live table of tasks: pushed by a local webhook receiver when one runs, else polled."""

    def __init__(
        self,
        tasks: Task | Iterable[Task],
        *,
        poll_interval: float = 0.5,
        max_interval: float = 5.0,
        push_interval: float = 30.0,
        timeout: float = 3600,
        start: bool = True,
    ) -> None:
        self.tasks = [tasks] if isinstance(tasks, Task) else list(tasks)
        self._cell = CellContext()  # where renders from other threads are sent
        self._by_id = {t.task_id: t for t in self.tasks}
        self.via: dict[str, str] = {}  # task id -> how its end was learnt
        super().__init__(self._table())
        self.poll_interval, self.max_interval = poll_interval, max_interval
        self.push_interval, self.timeout = push_interval, timeout
        self.last_error: str | None = None
        self._timed_out = False
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._applying: int | None = None  # the thread inside apply_event, if any
        self._unwatch = [task.watch(self._seen_ended) for task in self.tasks]
        if start:
            self.start()

    @property
    def done(self) -> bool:
        return all(t.done for t in self.tasks)

    def start(self) -> None:
        if self._thread is None:
            unsubscribe = push.subscribe(self._on_event)
            self._thread = start_cell_thread(
                lambda: self._watch(unsubscribe), name="dubkit-task-monitor"
            )

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the monitor has stopped refreshing; True if it did in time."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self._thread is None or not self._thread.is_alive()

    def apply_event(
        self,
        task_id: str,
        *,
        status: str | None,
        task_type: str | None = None,
        result: dict[str, Any] | None = None,
        via: str = "webhook",
    ) -> bool:
        """Update a row from a pushed event at once; False if the task is not shown here."""
        task = self._by_id.get(task_id)
        if task is None:
            return False
        with self._lock:
            if not task.done:  # an end already seen is final; a late copy changes nothing
                self._applying = threading.get_ident()  # our own news: _seen_ended stays out
                try:
                    task.apply(task_type, status, result, pushed=True)
                finally:
                    self._applying = None
                if task.done:
                    self.via[task_id] = via
        self._wake.set()  # the monitor's own thread renders (it owns the cell)
        if self._thread is None or not self._thread.is_alive():
            # Its thread has ended: render from this one (a webhook worker) as the cell.
            self._cell.run(self._render_ended)
            self._settle_soon()
        return True

    def _seen_ended(self, task: Task) -> None:
        """A task ended, seen by someone else (``task.wait()`` in a later cell): show it now,
        from that thread, so the running cell carries the final picture into the saved
        notebook even if the notebook ends before the next poll."""
        if self._applying == threading.get_ident():
            return  # apply_event's own update: it renders and says how it learnt the end
        self.via.setdefault(task.task_id, "poll")  # a wait is a poll, by someone else
        self._wake.set()
        if threading.current_thread() is not self._thread and self.done:
            self._render_ended()
            self._settle_soon()

    def _on_event(self, event: WebhookEvent) -> None:
        if event.task_id:
            self.apply_event(
                event.task_id,
                status=event.status,
                task_type=event.task_type,
                result=event.task_result(),
            )

    def _watch(self, unsubscribe: Any) -> None:
        deadline = time.monotonic() + self.timeout
        interval = self.poll_interval
        next_poll = 0.0
        try:
            while not self._stop.is_set() and not self.done and time.monotonic() < deadline:
                if time.monotonic() >= next_poll:
                    self._poll_once()
                    pushed = push.active()
                    next_poll = time.monotonic() + (self.push_interval if pushed else interval)
                    interval = min(self.max_interval, interval * 1.5)
                self._render_ended()
                if self.done:
                    break
                self._wake.wait(max(0.0, min(next_poll, deadline) - time.monotonic()))
                self._wake.clear()
        finally:
            unsubscribe()
            for unwatch in self._unwatch:
                unwatch()
            self._timed_out = not self.done and not self._stop.is_set()
            self._render_ended()
            self._settle_soon()

    def _settle_soon(self) -> None:
        settle_later(self, self._cell)

    def _poll_once(self) -> None:
        for task in [t for t in self.tasks if not t.done]:
            try:
                # A fresh copy, applied only if no pushed event ended the task meanwhile.
                fresh = task.polled()
                self.last_error = None
            except Exception as exc:  # keep watching through a flaky connection
                self.last_error = f"{type(exc).__name__}: {exc}"
                continue
            self.apply_event(
                task.task_id,
                status=fresh.status,
                task_type=fresh.task_type,
                result=fresh.raw_result,
                via="poll",
            )

    def _table(self, note: str = "") -> str:
        return task_table_html(self.tasks, note=note, via=self.via)

    def _note(self) -> str:
        if self._timed_out and not self.done:
            return f"stopped watching after {self.timeout:g} s; call dubkit.monitor() again"
        if self.last_error:
            return f"last poll failed: {self.last_error}"
        if not self.done and push.active():
            return (
                "live: updated by the local webhook receiver as events arrive (polling "
                f"every {self.push_interval:g} s as a fallback)"
            )
        return ""

    def _render(self) -> None:
        with self._lock:
            self.value = self._table(self._note())

    def _render_ended(self) -> None:
        """Render, first making the results of tasks that finished (fetching what they embed
        here, off the display path: a view never fetches)."""
        for task in self.tasks:
            if task.status == "finished" and task.result_if_made() is None:
                try:
                    task.result  # noqa: B018
                except Exception as exc:  # the row still shows the task finished
                    self.last_error = f"{type(exc).__name__}: {exc}"
        self._render()

    def __repr__(self) -> str:
        return f"TaskMonitor({len(self.tasks)} task{'' if len(self.tasks) == 1 else 's'})"

    def fallback_html(self) -> str:
        self._render()  # the fallback a saved notebook shows: the table as it is now
        return self.value
