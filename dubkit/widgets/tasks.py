"""Task cells that refresh themselves until every task has ended.

>>> task.monitor()                        # one task
>>> TaskMonitor([t1, t2, t3])             # several, one row each

A background thread polls with backoff (0.5 s growing to 5 s) and stops at a terminal state or
after ``timeout``. While a :class:`dubkit.webhooks.Receiver` runs in this process, events it
accepts update their row the instant they arrive and polling drops to a slow fallback
(``push_interval``, 30 s), in case an event never comes. Saved notebooks, nbviewer and nbval see
the static HTML table that travels in the same output (``text/html`` next to the widget view).
"""

from __future__ import annotations

import html
import threading
import time
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import ipywidgets as widgets

from ..webhooks import push
from ._threads import start_cell_thread

if TYPE_CHECKING:
    from ..resources.tasks import Task
    from ..webhooks import WebhookEvent

_COLOURS = {"finished": "#1a7f37", "failed": "#cf222e", "running": "#9a6700"}


def task_table_html(tasks: Iterable["Task"], *, note: str = "",
                    via: Mapping[str, str] | None = None) -> str:
    """A static table of tasks: id, type, status, elapsed, the result or error.

    ``via`` (task id -> ``webhook`` or ``poll``) adds a column saying how each end was learnt.
    """
    rows = []
    detail = ""
    tasks = list(tasks)
    for task in tasks:
        status = task.status or "unknown"
        colour = _COLOURS.get(status, "#57606a")
        outcome = html.escape(task.error_message or "")
        if task.status == "finished":
            outcome = "result ready" if task.raw_result is not None else ""
        learnt = f"<td>{html.escape(via.get(task.task_id, ''))}</td>" if via is not None else ""
        rows.append(
            f"<tr><td><code>{html.escape(task.task_id)}</code></td>"
            f"<td>{html.escape(task.task_type or '')}</td>"
            f"<td><b style='color:{colour}'>{html.escape(status)}</b></td>"
            f"<td>{task.elapsed:.1f} s</td><td>{outcome}</td>{learnt}</tr>")
    if len(tasks) == 1 and tasks[0].status == "finished":
        result = tasks[0].result
        if hasattr(result, "_repr_html_"):
            detail = result._repr_html_()
    note_html = f"<div style='color:#57606a;font-size:90%'>{html.escape(note)}</div>" \
        if note else ""
    via_head = "<th>seen via</th>" if via is not None else ""
    return ("<table class='dubkit-tasks'><thead><tr><th>task</th><th>type</th><th>status</th>"
            f"<th>elapsed</th><th>outcome</th>{via_head}</tr></thead><tbody>" + "".join(rows) +
            "</tbody></table>" + note_html + detail)


class TaskMonitor(widgets.VBox):
    """A live table of tasks: pushed by a local webhook receiver when one runs, else polled."""

    def __init__(self, tasks: "Task | Iterable[Task]", *, poll_interval: float = 0.5,
                 max_interval: float = 5.0, push_interval: float = 30.0,
                 timeout: float = 3600, start: bool = True) -> None:
        self.tasks = [tasks] if hasattr(tasks, "task_id") else list(tasks)  # type: ignore
        self._by_id = {t.task_id: t for t in self.tasks}
        self.via: dict[str, str] = {}     # task id -> how its end was learnt
        self._view = widgets.HTML(self._table())
        super().__init__([self._view])
        self.poll_interval, self.max_interval = poll_interval, max_interval
        self.push_interval, self.timeout = push_interval, timeout
        self.last_error: str | None = None
        self._timed_out = False
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        if start:
            self.start()

    @property
    def done(self) -> bool:
        return all(t.done for t in self.tasks)

    def start(self) -> None:
        if self._thread is None:
            unsubscribe = push.subscribe(self._on_event)
            self._thread = start_cell_thread(lambda: self._watch(unsubscribe),
                                             name="dubkit-task-monitor")

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the monitor has stopped refreshing; True if it did in time."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self._thread is None or not self._thread.is_alive()

    def apply_event(self, task_id: str, *, status: str | None, task_type: str | None = None,
                    result: dict[str, Any] | None = None, via: str = "webhook") -> bool:
        """Update a row from a pushed event at once; False if the task is not shown here."""
        task = self._by_id.get(task_id)
        if task is None:
            return False
        with self._lock:
            if not task.done:   # an end already seen is final; a late copy changes nothing
                task.apply(task_type, status, result)
                if task.done:
                    self.via[task_id] = via
        self._wake.set()        # the monitor's own thread renders (it owns the cell)
        if self._thread is None or not self._thread.is_alive():
            self._render()
        return True

    def _on_event(self, event: "WebhookEvent") -> None:
        if event.task_id:
            self.apply_event(event.task_id, status=event.status, task_type=event.task_type,
                             result=event.task_result())

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
                self._render()
                if self.done:
                    break
                self._wake.wait(max(0.0, min(next_poll, deadline) - time.monotonic()))
                self._wake.clear()
        finally:
            unsubscribe()
            self._timed_out = not self.done and not self._stop.is_set()
            self._render()

    def _poll_once(self) -> None:
        for task in [t for t in self.tasks if not t.done]:
            try:
                # A fresh copy, applied only if no pushed event ended the task meanwhile.
                fresh = task._client.tasks.detail(task.task_id)
                self.last_error = None
            except Exception as exc:   # keep watching through a flaky connection
                self.last_error = f"{type(exc).__name__}: {exc}"
                continue
            self.apply_event(task.task_id, status=fresh.status, task_type=fresh.task_type,
                             result=fresh.raw_result, via="poll")

    def _table(self, note: str = "") -> str:
        return task_table_html(self.tasks, note=note, via=self.via)

    def _note(self) -> str:
        if self._timed_out and not self.done:
            return f"stopped watching after {self.timeout:g} s; call .monitor() again"
        if self.last_error:
            return f"last poll failed: {self.last_error}"
        if not self.done and push.active():
            return ("live: updated by the local webhook receiver as events arrive (polling "
                    f"every {self.push_interval:g} s as a fallback)")
        return ""

    def _render(self) -> None:
        with self._lock:
            self._view.value = self._table(self._note())

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        self._render()   # the fallback a saved notebook shows: the table as it is now
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = self._view.value
        bundle["text/plain"] = f"TaskMonitor({len(self.tasks)} task{'' if len(self.tasks) == 1 else 's'})"
        return bundle
