"""Task cells that refresh themselves until every task has ended.

>>> task.monitor()                        # one task
>>> TaskMonitor([t1, t2, t3])             # several, one row each

A background thread polls with backoff (0.5 s growing to 5 s) and stops at a terminal state or
after ``timeout``. Events pushed by a local webhook receiver update a row at once through
:meth:`TaskMonitor.apply_event`. Saved notebooks, nbviewer and nbval see the static HTML table
that travels in the same output (``text/html`` next to the widget view).
"""

from __future__ import annotations

import html
import threading
import time
from typing import TYPE_CHECKING, Any, Iterable

import ipywidgets as widgets

from ._threads import start_cell_thread

if TYPE_CHECKING:
    from ..resources.tasks import Task

_COLOURS = {"finished": "#1a7f37", "failed": "#cf222e", "running": "#9a6700"}


def task_table_html(tasks: Iterable["Task"], *, note: str = "") -> str:
    """A static table of tasks: id, type, status, elapsed, and the result or error."""
    rows = []
    detail = ""
    tasks = list(tasks)
    for task in tasks:
        status = task.status or "unknown"
        colour = _COLOURS.get(status, "#57606a")
        outcome = html.escape(task.error_message or "")
        if task.status == "finished":
            outcome = "result ready" if task.raw_result is not None else ""
        rows.append(
            f"<tr><td><code>{html.escape(task.task_id)}</code></td>"
            f"<td>{html.escape(task.task_type or '')}</td>"
            f"<td><b style='color:{colour}'>{html.escape(status)}</b></td>"
            f"<td>{task.elapsed:.1f} s</td><td>{outcome}</td></tr>")
    if len(tasks) == 1 and tasks[0].status == "finished":
        result = tasks[0].result
        if hasattr(result, "_repr_html_"):
            detail = result._repr_html_()
    note_html = f"<div style='color:#57606a;font-size:90%'>{html.escape(note)}</div>" \
        if note else ""
    return ("<table class='dubkit-tasks'><thead><tr><th>task</th><th>type</th><th>status</th>"
            "<th>elapsed</th><th>outcome</th></tr></thead><tbody>" + "".join(rows) +
            "</tbody></table>" + note_html + detail)


class TaskMonitor(widgets.VBox):
    """A live table of tasks; polls in the background until all have ended."""

    def __init__(self, tasks: Iterable["Task"], *, poll_interval: float = 0.5,
                 max_interval: float = 5.0, timeout: float = 3600, start: bool = True) -> None:
        self.tasks = list(tasks)
        self._by_id = {t.task_id: t for t in self.tasks}
        self._view = widgets.HTML(task_table_html(self.tasks))
        super().__init__([self._view])
        self.poll_interval, self.max_interval, self.timeout = poll_interval, max_interval, timeout
        self.last_error: str | None = None
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
            self._thread = start_cell_thread(self._poll, name="dubkit-task-monitor")

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the monitor has stopped refreshing; True if it did in time."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self._thread is None or not self._thread.is_alive()

    def apply_event(self, task_id: str, *, status: str | None, task_type: str | None = None,
                    result: dict[str, Any] | None = None) -> bool:
        """Update a row from a pushed event at once; False if the task is not shown here."""
        task = self._by_id.get(task_id)
        if task is None:
            return False
        with self._lock:
            task.apply(task_type, status, result)
            self._render()
        self._wake.set()
        return True

    def _poll(self) -> None:
        deadline = time.monotonic() + self.timeout
        interval = self.poll_interval
        while not self._stop.is_set() and not self.done and time.monotonic() < deadline:
            for task in [t for t in self.tasks if not t.done]:
                try:
                    task.refresh()
                    self.last_error = None
                except Exception as exc:   # keep watching through a flaky connection
                    self.last_error = f"{type(exc).__name__}: {exc}"
            with self._lock:
                self._render()
            if self.done:
                break
            self._wake.wait(interval)
            self._wake.clear()
            interval = min(self.max_interval, interval * 1.5)
        with self._lock:
            self._render(final=True)

    def _render(self, final: bool = False) -> None:
        note = f"last poll failed: {self.last_error}" if self.last_error else ""
        if final and not self.done and not self._stop.is_set():
            note = f"stopped watching after {self.timeout:g} s; call .monitor() again"
        self._view.value = task_table_html(self.tasks, note=note)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = self._view.value   # what a saved notebook shows
        return bundle
