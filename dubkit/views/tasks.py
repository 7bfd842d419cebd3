"""A table of tasks: id, type, status, elapsed, the outcome; one finished task's result below."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence

from .palette import muted, status_html
from .shapes import TaskShape

# Read by screen readers, not shown: the table beside it shows the same, and more.
_HIDDEN = "position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)"


def announcement_html(tasks: Sequence[TaskShape]) -> str:
    """A polite live region saying which tasks have ended (``'fr-FR dub finished, 11.8 s'``).

    Its words change only when a task ends (an ended task's time is frozen), so a screen
    reader hears each end once, not every refresh; the live channel keeps the region and
    changes its text (a region put in anew would not be read out).
    """
    ended = "; ".join(
        f"{task.subject} {task.status}, {task.elapsed:.1f} s"
        for task in tasks
        if task.status in ("finished", "failed")
    )
    return (
        f"<div role='status' class='dubkit-announce' data-dubkit-part='announce' "
        f"style='{_HIDDEN}'>{html.escape(ended)}</div>"
    )


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
        outcome = html.escape(task.error_message or "")
        if task.status == "finished":
            outcome = "result ready" if task.raw_result is not None else ""
        learnt = f"<td>{html.escape(via.get(task.task_id, ''))}</td>" if via is not None else ""
        rows.append(
            f"<tr><td><code>{html.escape(task.task_id)}</code></td>"
            f"<td>{html.escape(task.task_type or '')}</td>"
            f"<td data-status='{html.escape(status)}'>{status_html(status)}</td>"
            f"<td>{task.elapsed:.1f} s</td><td>{outcome}</td>{learnt}</tr>"
        )
    if len(tasks) == 1 and tasks[0].status == "finished":
        result = tasks[0].result_if_made()  # a view never fetches: only what is held
        if hasattr(result, "_repr_html_"):
            detail = result._repr_html_()
    note_html = muted(html.escape(note), tag="div", size="90%") if note else ""
    via_head = "<th>seen via</th>" if via is not None else ""
    return (
        announcement_html(tasks)
        + "<table class='dubkit-tasks'><thead><tr><th>task</th><th>type</th><th>status</th>"
        f"<th>elapsed</th><th>outcome</th>{via_head}</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + note_html
        + detail
    )
