"""The teacher's table: one row per student of a class sandbox (see :mod:`dubkit.classroom`).

Tasks are summed per product with their statuses, credits read as left and spent, the last
activity as a time ago, and the latest error's message; a disabled student's row says so.
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone

from ..schema.products import product_of_task_type
from .materials import human_bytes
from .palette import MARKS, error_html
from .shapes import StudentShape

_SHOWN = ("finished", "running", "failed")


def ago(stamp: float | None, now: float | None = None) -> str:
    """``'12 s ago'``, ``'4 min ago'``, ``'2 h ago'``; ``'never'`` without a stamp."""
    if stamp is None:
        return "never"
    seconds = max(0.0, (now or time.time()) - stamp)
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.0f} h ago"


def iso_time(stamp: float | None) -> str:
    """An epoch stamp as UTC ISO 8601 (for CSV); ``''`` without one."""
    if stamp is None:
        return ""
    return datetime.fromtimestamp(stamp, timezone.utc).isoformat(timespec="seconds")


def tasks_by_product(tasks: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    """Task type -> status -> n, summed per product (``vt`` and ``at`` are both dubbing)."""
    summed: dict[str, dict[str, int]] = {}
    for task_type, by_status in tasks.items():
        known = product_of_task_type(task_type)
        product = summed.setdefault(known.name if known else task_type, {})
        for status, n in by_status.items():
            product[status] = product.get(status, 0) + n
    return summed


def _tasks_cell(tasks: Mapping[str, Mapping[str, int]]) -> str:
    parts = []
    for product, by_status in sorted(tasks_by_product(tasks).items()):
        marks = " ".join(
            # an image with its words: a name on a bare span is one screen readers ignore
            f"<span role='img' title='{by_status[status]} {status}' aria-label="
            f"'{by_status[status]} {status}'>{by_status[status]}{MARKS[status]}</span>"
            for status in _SHOWN
            if by_status.get(status)
        )
        parts.append(f"{html.escape(product)} {marks}")
    return "<br>".join(parts) or "—"


def class_changes(before: Sequence[StudentShape], after: Sequence[StudentShape]) -> str:
    """What ended since the last reading, in words (``'bob: 1 dubbing finished'``); empty
    when nothing did. The teacher's view says it once, in a polite status line, instead of
    having a screen reader read the whole table at every refresh."""
    was = {s.name: tasks_by_product(s.tasks) for s in before}
    said = []
    for student in after:
        old = was.get(student.name, {})
        for product, by_status in sorted(tasks_by_product(student.tasks).items()):
            for status in ("finished", "failed"):
                more = by_status.get(status, 0) - old.get(product, {}).get(status, 0)
                if more > 0:
                    said.append(f"{student.name}: {more} {product} {status}")
    return "; ".join(said)


def class_table_html(
    students: Sequence[StudentShape], *, selected: str | None = None, now: float | None = None
) -> str:
    """The table; ``selected`` highlights one student's row."""
    rows = []
    for s in students:
        error = ""
        if s.errors:
            said = s.errors[0].error_message[:120]
            error = error_html(said)
        # The picked row is framed and marked (not only tinted); a disabled one says so.
        style = "outline:2px solid #0969da;outline-offset:-2px;" if s.name == selected else ""
        picked = " <span class='dubkit-picked'>(picked)</span>" if s.name == selected else ""
        state = " <b>(disabled)</b>" if s.disabled else ""
        rows.append(
            f"<tr class='dubkit-student' data-student='{html.escape(s.name)}' style='{style}'>"
            f"<td><b>{html.escape(s.name)}</b>{state}{picked}</td>"
            f"<td style='text-align:right'>{s.credits:g}</td>"
            f"<td style='text-align:right'>{s.spent:g}</td>"
            f"<td>{_tasks_cell(s.tasks)}</td>"
            f"<td style='text-align:right'>{human_bytes(s.stored)}</td>"
            f"<td>{ago(s.last_seen, now)}</td><td>{error}</td></tr>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("student", "credits left", "spent", "tasks", "uploads", "last seen", "last error")
    )
    body = "".join(rows) or "<tr><td colspan='7'>no students yet</td></tr>"
    # Inside a widget no notebook stylesheet applies: the padding and rules come inline.
    return (
        "<style>table.dubkit-class th, table.dubkit-class td {padding:3px 10px;"
        "border-bottom:1px solid #d0d7de;text-align:left;vertical-align:top}</style>"
        "<table class='dubkit-class' style='border-collapse:collapse'>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )
