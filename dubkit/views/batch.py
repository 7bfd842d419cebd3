"""A dubbing batch as a table: one row per file and locale, its status as a mark and a word,
credits (quote and charge), elapsed time, review, and (live) buttons to open the dub.

The summary line above it ("12 of 36 dubbed, 1 failed") is a polite live region: its words
change only when a row's status does, so a screen reader hears each change once, not every
refresh; the rows below it are read when the reader goes there.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence

from .palette import error_html, muted
from .quality import verdict_text
from .shapes import BatchRowShape

# status -> (mark, the word a person reads)
STATUS_WORDS: dict[str, tuple[str, str]] = {
    "planned": ("○", "waiting"),
    "sending": ("…", "starting"),
    "unresolved": ("?", "accepted, finding its task"),
    "running": ("…", "dubbing"),
    "saving": ("…", "saving"),
    "done": ("✓", "dubbed"),
    "failed": ("✗", "failed"),
    "cancelled": ("–", "cancelled"),
    "over budget": ("–", "over budget"),
}
SHOWN_ROWS = 200  # a longer batch shows its first rows; to_frame() has them all


OUTPUT_ORDER = ("video", "audio", "srt", "vtt")


def shown_first(outputs: Mapping[str, str]) -> list[str]:
    """A row's output kinds, the dub first, then its subtitles."""
    return sorted(outputs, key=lambda k: OUTPUT_ORDER.index(k) if k in OUTPUT_ORDER else 9)


def status_words(status: str) -> tuple[str, str]:
    return STATUS_WORDS.get(status, ("", status))


def summary(rows: Sequence[BatchRowShape]) -> str:
    """``'12 of 36 dubbed, 1 failed'``: what the live region says when it changes."""
    seen: dict[str, int] = {}
    for row in rows:
        seen[row.status] = seen.get(row.status, 0) + 1
    said = [f"{seen.get('done', 0)} of {len(rows)} dubbed"]
    running = sum(seen.get(s, 0) for s in ("sending", "running", "saving"))
    if running:
        said.append(f"{running} in progress")
    for status in ("failed", "unresolved", "over budget", "cancelled"):
        if seen.get(status):
            said.append(f"{seen[status]} {STATUS_WORDS[status][1]}")
    return ", ".join(said)


def credits_text(row: BatchRowShape) -> str:
    """``'60'`` quoted; ``'60 (quoted 60)'`` once charged; ``'≈ 120'`` for an estimate."""
    quoted = f"{'≈ ' if row.estimate else ''}{row.quote:g}"
    if row.charged is not None:
        return f"{row.charged:g} (quoted {quoted})"
    return quoted


def _buttons(row: BatchRowShape, me: str) -> str:
    """Compare and Edit script, named by the row they open (unique in the table)."""
    if row.status != "done" or not row.task_id:
        return ""
    name = html.escape(row.name)
    key = html.escape(row.key)
    return "".join(
        f"<button type='button' class='dubkit-batch-{action}' data-dubkit-action='{action}' "
        f"data-dubkit-key='{key}' aria-label='{label} {name}'>{label}</button> "
        for action, label in (("compare", "Compare"), ("edit", "Edit script"))
    )


def _row_html(row: BatchRowShape, i: int, me: str, live: bool, qa: str) -> str:
    mark, word = status_words(row.status)
    elapsed = f"{row.elapsed:.0f} s" if row.elapsed is not None else ""
    problem = error_html(row.error[:160]) if row.status == "failed" and row.error else ""
    if row.status == "unresolved" and row.error:
        problem = muted(html.escape(row.error[:160]))
    files = " ".join(
        f"<code>{html.escape(row.outputs[kind].split('/')[-1])}</code>"
        for kind in shown_first(row.outputs)
    )
    review = html.escape(row.review or "")
    if row.note:
        review += (": " if review else "") + muted(html.escape(row.note))
    revision = muted(f" r{row.revision}") if row.revision > 1 else ""
    return (
        f"<tr data-dubkit-part='{me}-row-{i}' data-status='{html.escape(row.status)}'>"
        f"<td>{html.escape(row.file_name)}{revision}</td><td>{html.escape(row.locale)}</td>"
        f"<td><span aria-hidden='true'>{mark}</span> {html.escape(word)} {problem}</td>"
        f"<td style='text-align:right'>{html.escape(credits_text(row))}</td>"
        f"<td style='text-align:right'>{elapsed}</td><td>{review}</td><td>{qa_html(qa)}</td>"
        f"<td>{_buttons(row, me) if live else files}</td></tr>"
    )


def qa_html(qa: str) -> str:
    """A row's check (``"fix: 1 to fix, 0 to listen to, 5 ok"``): its verdict's mark and
    word, then the counts; blank until ``batch.check()`` has run."""
    if not qa:
        return ""
    verdict, _, counts = qa.partition(":")
    return f"{verdict_text(verdict)} {muted(html.escape(counts.strip()))}"


def batch_table_html(
    rows: Iterable[BatchRowShape],
    *,
    live: bool,
    me: str = "batch",
    title: str = "Dubbing batch",
    note: str = "",
    qa: Mapping[str, str] | None = None,
) -> str:
    """The table, below its summary (a polite live region) and ``note``; ``qa``: each row's
    check verdict by row key."""
    rows = list(rows)
    qa = qa or {}
    body = "".join(
        _row_html(r, i, me, live, qa.get(r.key, "")) for i, r in enumerate(rows[:SHOWN_ROWS])
    )
    if len(rows) > SHOWN_ROWS:
        body += (
            f"<tr><td colspan='8'>{muted(f'and {len(rows) - SHOWN_ROWS} more rows: to_frame() has them all')}"
            "</td></tr>"
        )
    quoted = sum(r.quote for r in rows if r.status != "over budget")
    head = "".join(
        f"<th scope='col'>{h}</th>"
        for h in (
            "file",
            "locale",
            "status",
            "credits",
            "elapsed",
            "review",
            "QA",
            "dub" if live else "files",
        )
    )
    return (
        "<style>table.dubkit-batch th, table.dubkit-batch td {padding:3px 10px;"
        "border-bottom:1px solid #d0d7de;text-align:left;vertical-align:top}"
        "table.dubkit-batch td:nth-child(-n+2), table.dubkit-batch td:nth-child(4),"
        "table.dubkit-batch td:nth-child(5) {white-space:nowrap}</style>"
        f"<div role='status' class='dubkit-batch-summary dubkit-announce' "
        f"data-dubkit-part='{me}-summary'>"
        f"<b>{html.escape(title)}</b>: {html.escape(summary(rows))}</div>"
        + (muted(note, tag="div", size="90%") if note else "")
        + "<table class='dubkit-batch' style='border-collapse:collapse'>"
        f"<caption style='text-align:left'>{muted(f'{len(rows)} rows, quoted {quoted:g} credits')}"
        f"</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )
