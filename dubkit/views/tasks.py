"""A table of tasks: id, type, status, elapsed, the outcome; one finished task's result below."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping

from .shapes import TaskShape

_COLOURS = {"finished": "#1a7f37", "failed": "#cf222e", "running": "#9a6700"}


def task_table_html(
    tasks: Iterable[TaskShape], *, note: str = "", via: Mapping[str, str] | None = None
) -> str:
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
            f"<td>{task.elapsed:.1f} s</td><td>{outcome}</td>{learnt}</tr>"
        )
    if len(tasks) == 1 and tasks[0].status == "finished":
        result = tasks[0].result_if_made()  # a view never fetches: only what is held
        if hasattr(result, "_repr_html_"):
            detail = result._repr_html_()
    note_html = (
        f"<div style='color:#57606a;font-size:90%'>{html.escape(note)}</div>" if note else ""
    )
    via_head = "<th>seen via</th>" if via is not None else ""
    return (
        "<table class='dubkit-tasks'><thead><tr><th>task</th><th>type</th><th>status</th>"
        f"<th>elapsed</th><th>outcome</th>{via_head}</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + note_html
        + detail
    )
