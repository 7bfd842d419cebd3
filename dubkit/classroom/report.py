"""The class report as a table: one row per student, as CSV, a DataFrame or HTML."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from ..schema.sandbox_admin import StudentReport
from ..views.classroom import class_table_html, iso_time

CSV_COLUMNS = (
    "name",
    "credits_left",
    "credits_spent",
    "tasks",
    "running",
    "failed",
    "stored_bytes",
    "last_seen",
    "disabled",
    "last_error",
)


class ClassTable(list[StudentReport]):
    """The class report: one row per student; ``to_csv()``, ``to_frame()``, shown as a table."""

    def rows(self) -> list[dict[str, Any]]:
        return [_row(s) for s in self]

    def to_csv(self, path: str | Path | None = None) -> str:
        """The table as CSV (written to ``path`` too when given)."""
        out = io.StringIO()
        writer = csv.DictWriter(out, CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.rows())
        text = out.getvalue()
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=list(CSV_COLUMNS))

    def _repr_html_(self) -> str:
        return class_table_html(self)


def _row(student: StudentReport) -> dict[str, Any]:
    counts = [n for by_status in student.tasks.values() for n in by_status.values()]
    return {
        "name": student.name,
        "credits_left": student.credits,
        "credits_spent": student.spent,
        "tasks": sum(counts),
        "running": sum(s.get("running", 0) for s in student.tasks.values()),
        "failed": sum(s.get("failed", 0) for s in student.tasks.values()),
        "stored_bytes": student.stored,
        "last_seen": iso_time(student.last_seen),
        "disabled": student.disabled,
        "last_error": student.errors[0].error_message if student.errors else "",
    }
