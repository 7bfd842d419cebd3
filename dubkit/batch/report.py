"""A batch's rows as a table and as the course report (CSV or HTML): every file and locale,
the voices used, quote and charge, status, outputs and review."""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ValidationError
from ..views.batch import batch_table_html, shown_first, status_words
from .rows import Row

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = (
    "file",
    "locale",
    "revision",
    "status",
    "quote",
    "charged",
    "elapsed_s",
    "voices",
    "task_id",
    "outputs",
    "review",
    "note",
    "qa",
    "error",
)


def records(
    rows: list[Row], out: Path, qa: Mapping[str, str] | None = None
) -> list[dict[str, object]]:
    qa = qa or {}
    return [
        {
            "file": row.file_name,
            "locale": row.locale,
            "revision": row.revision,
            "status": status_words(row.status)[1],
            "quote": row.quote,
            "charged": row.charged,
            "elapsed_s": round(row.elapsed, 1) if row.elapsed is not None else None,
            "voices": " ".join(v for v in row.settings.get("voices") or [] if v)
            or "chosen by the service",
            "task_id": row.task_id,
            "outputs": " ".join(str(out / row.outputs[k]) for k in shown_first(row.outputs)),
            "review": row.review or "",
            "note": row.note or "",
            "qa": qa.get(row.key, ""),
            "error": row.error if row.status in ("failed", "unresolved") else "",
        }
        for row in rows
    ]


def frame(rows: list[Row], out: Path, qa: Mapping[str, str] | None = None) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(records(rows, out, qa), columns=list(COLUMNS))


def write(rows: list[Row], out: Path, path: Path, qa: Mapping[str, str] | None = None) -> Path:
    """``path`` ending in .csv or .html; the path written."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".html", ".htm"):
        raise ValidationError("path", f"a .csv or .html file, got {path.name!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".csv":
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=list(COLUMNS))
        writer.writeheader()
        writer.writerows(records(rows, out, qa))
        path.write_text(text.getvalue(), encoding="utf-8")
        return path
    quoted = sum(r.quote for r in rows)
    charged = sum(r.charged or 0 for r in rows)
    table = frame(rows, out, qa).to_html(index=False, na_rep="", escape=True)
    path.write_text(
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>Course report: {html.escape(out.name)}</title></head><body>"
        f"<h1>Course report: {html.escape(out.name)}</h1>"
        f"<p>Quoted {quoted:g} credits; charged {charged:g} where the service reported it.</p>"
        + batch_table_html(rows, live=False, title="Dubbing batch", qa=qa)
        + f"<h2>Every row</h2>{table}</body></html>",
        encoding="utf-8",
    )
    return path
