"""A dub's check drawn: its verdict, a timeline (inline SVG, so it lives in saved notebooks and
on GitHub), and the table of every line that is the timeline's accessible twin.

On the timeline each speaker has a lane of two rows: where the source speaks (the line's slot)
and where the dub speaks (its audio from the line's start). A flagged line is marked by shape
and word, never by colour alone: a triangle and "listen", a square and "fix".
"""

from __future__ import annotations

import html
import math

from .._util.words import count
from .palette import muted
from .shapes import DubCheckShape, LineCheckShape

VERDICT_MARKS = {"ok": "✓", "listen": "▲", "fix": "■"}
WIDTH, LABEL, ROW, LANE_GAP = 860, 120, 18, 26
_FILL = {"ok": "#8fb8de", "listen": "#f2c14e", "fix": "#e07a5f"}
_SOURCE = "#d0d7de"


def verdict_text(verdict: str) -> str:
    """``'▲ listen'``: the mark (hidden from screen readers) and the word."""
    return (
        f"<span aria-hidden='true'>{VERDICT_MARKS.get(verdict, '')}</span> {html.escape(verdict)}"
    )


def check_html(report: DubCheckShape, *, live: bool = False) -> str:
    """The verdict, the timeline and the table; ``live``: each line a control (Enter or a
    click plays it and opens it in the script editor: :class:`dubkit.CheckView`)."""
    return (
        f"<div class='dubkit-check'><p><b>Check of the {html.escape(report.label)}"
        f"{' (' + html.escape(report.locale) + ')' if report.locale else ''}</b>: "
        f"{html.escape(report.summary())}</p>{timeline_svg(report, live=live)}</div>"
    )


def timeline_svg(report: DubCheckShape, *, live: bool = False) -> str:
    """The timeline, with the line table below it (the same facts, for every reader)."""
    lines = list(report.lines)
    speakers = list(dict.fromkeys(line.speaker or "speaker" for line in lines))
    total = max([1.0, *(max(ln.end, ln.start + (ln.spoken or 0)) for ln in lines)])
    scale = (WIDTH - LABEL - 16) / total
    height = 30 + len(speakers) * (2 * ROW + LANE_GAP)
    parts = [_axis(total, scale, height)]
    for lane, speaker in enumerate(speakers):
        top = 26 + lane * (2 * ROW + LANE_GAP)
        parts.append(
            f"<text x='4' y='{top + 12}' font-size='12'>{html.escape(speaker)}</text>"
            f"<text x='4' y='{top + ROW + 12}' font-size='11' fill='#57606a'>dub</text>"
        )
        for line in lines:
            if (line.speaker or "speaker") == speaker:
                parts.append(_line(line, top, scale, live))
    flagged = sum(1 for line in lines if line.verdict != "ok")
    label = (
        f"Timeline of {count(len(lines), 'line')}, {flagged} flagged; "
        "the table below lists each line"
    )
    role = "group" if live else "img"  # live: its lines are controls, so not one picture
    svg = (
        f"<svg xmlns='http://www.w3.org/2000/svg' role='{role}' aria-label='{html.escape(label)}' "
        f"width='{WIDTH}' height='{height}' viewBox='0 0 {WIDTH} {height}' "
        "style='max-width:100%;height:auto;font-family:sans-serif'>"
        f"<title>{html.escape(label)}</title>{''.join(parts)}</svg>"
    )
    return f"<figure style='margin:0'>{svg}</figure>{lines_table(lines, live=live)}"


def _axis(total: float, scale: float, height: int) -> str:
    step = next(s for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600) if total / s <= 12)
    ticks = []
    for i in range(int(math.floor(total / step)) + 1):
        x = LABEL + i * step * scale
        ticks.append(
            f"<line x1='{x:.1f}' y1='14' x2='{x:.1f}' y2='{height}' stroke='#eaeef2'/>"
            f"<text x='{x:.1f}' y='11' font-size='10' text-anchor='middle'>{i * step} s</text>"
        )
    return "".join(ticks)


def _line(line: LineCheckShape, top: int, scale: float, live: bool) -> str:
    """The slot on the source row, the speech on the dub row, and the mark of its verdict."""
    x = LABEL + line.start * scale
    slot = max(1.0, (line.end - line.start) * scale)
    said = max(1.0, (line.spoken or 0) * scale)
    verdict = line.verdict
    problems = "; ".join(f"{f.problem} ({f.detail})" for f in line.findings)
    tip = f"line {line.id}, {verdict}" + (f": {problems}" if problems else "")
    outline = {
        "ok": "",
        "listen": " stroke='#7a5a00' stroke-dasharray='3 2'",
        "fix": " stroke='#8a1c00' stroke-width='2'",
    }[verdict if verdict in _FILL else "ok"]
    mark = ""
    if verdict != "ok":
        mx, my = x + said + 4, top + ROW + 9
        shape = (
            f"<polygon points='{mx:.1f},{my + 5} {mx + 5:.1f},{my - 5} {mx + 10:.1f},{my + 5}'/>"
            if verdict == "listen"
            else f"<rect x='{mx:.1f}' y='{my - 5}' width='10' height='10'/>"
        )
        mark = f"{shape}<text x='{mx + 13:.1f}' y='{my + 4}' font-size='11'>{verdict} {html.escape(line.id)}</text>"
    control = target = ""
    if live:
        control = (
            f" role='button' tabindex='0' data-dubkit-action='line' data-dubkit-key='"
            f"{html.escape(line.id)}' aria-label='{html.escape(tip)}; play it and open it in "
            "the script editor' style='cursor:pointer'"
        )
        # one target over both rows and the gap between them: a click anywhere on the line
        width = max(slot, said)
        target = f"<rect x='{x:.1f}' y='{top}' width='{width:.1f}' height='{2 * ROW}' fill='transparent'/>"
    return (
        f"<g data-dubkit-line='{html.escape(line.id)}' data-verdict='{verdict}'{control}>"
        f"<title>{html.escape(tip)}</title>"
        f"<rect x='{x:.1f}' y='{top + 2}' width='{slot:.1f}' height='{ROW - 4}' fill='{_SOURCE}'/>"
        f"<rect x='{x:.1f}' y='{top + ROW + 2}' width='{said:.1f}' height='{ROW - 4}' "
        f"fill='{_FILL.get(verdict, _FILL['ok'])}'{outline}/>{mark}{target}</g>"
    )


def lines_table(lines: list[LineCheckShape], *, live: bool = False) -> str:
    """Every line: time, speaker, verdict, what was found, pace, loudness, reading speed;
    ``live``: a button per line that plays it and opens it in the script editor."""
    head = "".join(
        f"<th scope='col'>{h}</th>"
        for h in (
            "line",
            "time",
            "speaker",
            "verdict",
            "found",
            "pace",
            "loudness",
            "reading",
            "dub says",
        )
    )
    rows = []
    for line in lines:
        found = "; ".join(f"{f.problem} ({f.detail})" for f in line.findings)
        pace = f"{line.speed:.2f}x" if line.speed is not None else ""
        level = f"{line.loudness_delta:+.1f} LU" if line.loudness_delta is not None else ""
        cps = f"{line.cps:.1f} cps" if line.cps is not None else ""
        button = (
            f" <button type='button' data-dubkit-action='line' data-dubkit-key='"
            f"{html.escape(line.id)}' aria-label='Play line {html.escape(line.id)} and open it "
            "in the script editor'>Play, edit</button>"
            if live
            else ""
        )
        rows.append(
            f"<tr data-verdict='{html.escape(line.verdict)}'><th scope='row'>{html.escape(line.id)}{button}</th>"
            f"<td style='white-space:nowrap'>{line.start:.2f}–{line.end:.2f} s</td>"
            f"<td style='white-space:nowrap'>{html.escape(line.speaker)}</td><td style='white-space:nowrap'>"
            f"{verdict_text(line.verdict)}</td><td>{html.escape(found)}</td><td>{pace}</td>"
            f"<td style='white-space:nowrap'>{level}</td><td style='white-space:nowrap'>{cps}</td>"
            f"<td>{html.escape(line.translation)}</td></tr>"
        )
    return (
        "<style>table.dubkit-check th, table.dubkit-check td {padding:2px 8px;"
        "border-bottom:1px solid #d0d7de;text-align:left !important;vertical-align:top}</style>"
        "<table class='dubkit-check' style='border-collapse:collapse'>"
        f"<caption style='text-align:left'>{muted('Each line of the timeline above')}</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
