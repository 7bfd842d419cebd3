"""A cast as a table: a row per role, a column per locale, each cell the voice and how it
speaks (and, in an audition, a player named by role and locale); a check's verdicts."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from .palette import MUTED, muted
from .players import line_player_html
from .shapes import SpeechLineShape


class RoleVoiceShape(Protocol):
    voice_id: str
    kind: str
    name: str
    emotion: str
    speed: float


class RoleShape(Protocol):
    name: str
    note: str
    voices: Mapping[str, Any]


def _voice_cell(voice: RoleVoiceShape | None) -> str:
    if voice is None:
        return muted("(falls back)")
    reading = [] if voice.emotion == "neutral" else [html.escape(voice.emotion)]
    if voice.speed != 1.0:
        reading.append(f"{voice.speed:g}x")
    name = f" {html.escape(voice.name)}" if voice.name else ""
    said = muted(" · ".join(reading), size="90%") if reading else ""
    return (
        f"<code>{html.escape(voice.voice_id)}</code>{name} {muted(voice.kind, size='90%')} {said}"
    )


def cast_html(cast: Any) -> str:
    """The cast file as a table (no sound: :meth:`Cast.audition` adds players)."""
    return _table(cast, lambda role, locale: _voice_cell(role.voices.get(locale)))


def audition_html(cast: Any, lines: Mapping[tuple[str, str], SpeechLineShape], text: str) -> str:
    def cell(role: RoleShape, locale: str) -> str:
        line = lines.get((role.name, locale))
        if line is None:
            return muted("no voice")
        voice = cast.voice(role.name, locale)
        player = line_player_html(line, label=f"{role.name}, {locale}: {voice.voice_id}")
        return f"{_voice_cell(voice)}<br>{player}"

    said = f"<p>&ldquo;{html.escape(text)}&rdquo;</p>"
    return said + _table(cast, cell)


def _table(cast: Any, cell: Any) -> str:
    locales = list(cast.locales)
    head = "".join(f"<th scope='col'>{html.escape(loc)}</th>" for loc in locales)
    rows = []
    for role in cast:
        note = f"<br>{muted(html.escape(role.note), size='90%')}" if role.note else ""
        cells = "".join(f"<td>{cell(role, loc)}</td>" for loc in locales)
        rows.append(f"<tr><th scope='row'>{html.escape(role.name)}{note}</th>{cells}</tr>")
    title = html.escape(cast.title or "Cast")
    caption = (
        f"<caption style='text-align:left'><b>{title}</b> "
        f"<span style='color:{MUTED}'>{len(cast)} roles · default {html.escape(cast.default_locale)}"
        "</span></caption>"
    )
    return (
        f"<table class='dubkit-cast'>{caption}<thead><tr><th scope='col'>role</th>{head}</tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def check_html(verdicts: Iterable[Any]) -> str:
    rows = []
    for v in verdicts:
        figure = "" if v.similarity is None else f"{v.similarity:.3f}"
        mark = {"same": "✓ ", "changed": "✗ ", "missing": "✗ "}.get(v.status, "")
        word = f"<b>{mark}{html.escape(v.status)}</b>"  # a mark and a word, never colour alone
        rows.append(
            f"<tr><th scope='row'>{html.escape(v.role)}</th><td>{html.escape(v.locale)}</td>"
            f"<td><code>{html.escape(v.voice_id)}</code></td><td>{word}</td>"
            f"<td class='dubkit-similarity'>{figure}</td></tr>"
        )
    return (
        "<table class='dubkit-cast-check'><caption style='text-align:left'><b>Sound check</b>"
        "</caption><thead><tr><th scope='col'>role</th><th scope='col'>locale</th>"
        "<th scope='col'>voice</th><th scope='col'>verdict</th><th scope='col'>similarity</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
