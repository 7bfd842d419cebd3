"""A whole batch checked before anyone listens: ``course.check()``.

Each dubbed row's dub is checked as ``dub.check()`` checks one (the same limits, the cast's
glossary across every dub), and its verdict is kept in the ledger for the table's QA column,
so a restarted kernel's table still shows it. A row re-dubbed here (a ``redub`` revision) keeps
only files, not a script to measure: it is listed as not checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..results.quality import DubCheck, Limits, worst
from ..views.quality import verdict_text
from .ledger import Ledger
from .rows import Row

if TYPE_CHECKING:
    import pandas as pd


class BatchCheck:
    """Per row (its key): the dub's :class:`~dubkit.results.quality.DubCheck`."""

    def __init__(self, reports: dict[str, DubCheck], rows: dict[str, Row], skipped: list[str]):
        self.reports, self.rows, self.skipped = reports, rows, skipped

    @property
    def verdict(self) -> str:
        return worst(r.verdict for r in self.reports.values())

    @property
    def flagged(self) -> list[tuple[str, str]]:
        """(row key, line id) of every line to listen to or fix."""
        return [(key, line) for key, report in self.reports.items() for line in report.flagged]

    def to_frame(self) -> pd.DataFrame:
        """Every line of every checked dub, with its file and locale first."""
        import pandas as pd

        frames = []
        for key, made in self.reports.items():
            frame = made.to_frame()
            frame.insert(0, "locale", self.rows[key].locale)
            frame.insert(0, "file", self.rows[key].file_name)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def __repr__(self) -> str:
        return (
            f"BatchCheck({len(self.reports)} dubs: {self.verdict}, "
            f"{len(self.flagged)} lines flagged, {len(self.skipped)} not checked)"
        )

    def _repr_html_(self) -> str:
        import html

        body = "".join(
            f"<tr><td>{html.escape(self.rows[k].file_name)}</td>"
            f"<td>{html.escape(self.rows[k].locale)}</td><td>{verdict_text(r.verdict)}</td>"
            f"<td>{html.escape(', '.join(r.flagged) or '')}</td></tr>"
            for k, r in self.reports.items()
        )
        return (
            f"<p><b>Check of {len(self.reports)} dubs</b>: {html.escape(self.verdict)}, "
            f"{len(self.flagged)} lines flagged</p><table><thead><tr><th scope='col'>file</th>"
            "<th scope='col'>locale</th><th scope='col'>verdict</th>"
            f"<th scope='col'>lines flagged</th></tr></thead><tbody>{body}</tbody></table>"
        )


def check_rows(
    rows: Iterable[Row],
    ledger: Ledger,
    dub_of: Callable[[Row], Any],
    limits: Limits | None,
    cast: Any,
) -> BatchCheck:
    """Check each dubbed row's dub (``dub_of``), keeping each verdict in ``ledger``."""
    reports, kept, skipped = {}, {}, []
    for row in rows:
        if row.status != "done" or not row.task_id or row.kind != "dub":
            skipped.append(row.key)
            continue
        made = dub_of(row).check(limits, cast=cast)
        ledger.set_checked(row.key, row.revision, made.summary())  # "fix: 1 to fix, ..."
        reports[row.key], kept[row.key] = made, row
    return BatchCheck(reports, kept, skipped)


def qa_of(rows: Iterable[Row], ledger: Ledger) -> dict[str, str]:
    """Each row's kept verdict (its current revision's), by row key."""
    kept = ledger.checked()
    return {
        row.key: kept[(row.key, row.revision)] for row in rows if (row.key, row.revision) in kept
    }
