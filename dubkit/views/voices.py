"""Voice tables (a play control per voice) and audition cards (one text, several voices).

Catalogue previews play from where the front end reaches them, loaded only when pressed; takes
are embedded when the result holds their bytes (:mod:`dubkit.views.players`).
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..media.mime import format_of, mime_type
from .palette import muted
from .players import lines_cells, picture_html, player_html
from .shapes import SpeechLineShape

if TYPE_CHECKING:
    from ..schema import ClonedVoice, PresetVoice


def _preview(url: str | None, label: str, said: str | None) -> str:
    """The catalogue's preview, named for its voice, with what it says beside it."""
    if not url:
        return ""
    words = f"<div>{muted(f'“{html.escape(said)}”', size='85%')}</div>" if said else ""
    return player_html(url, mime_type(format_of(url)), label=label) + words


def voice_row_html(voice: PresetVoice | ClonedVoice) -> str:
    """The cells of one voice: name, id, locale, who, tier, preview player."""
    record = voice.model_dump()
    name = str(record.get("display_name") or record.get("name") or voice.voice_id or "")
    cover = picture_html(record.get("cover"))
    where = record.get("locale") or record.get("example_language") or ""
    preview_label = f"{name} ({voice.voice_id or ''}), {where}, preview"
    who = " ".join(str(record[k]) for k in ("gender", "age", "style") if record.get(k))
    hd = " <b title='HD voice'>HD</b>" if record.get("is_hd") else ""
    return (
        f"<td style='text-align:left'>{cover}{html.escape(name)}</td>"
        f"<td><code>{html.escape(voice.voice_id or '')}</code></td>"
        f"<td>{html.escape(record.get('locale') or record.get('example_language') or '')}</td>"
        f"<td>{html.escape(who)}</td>"
        f"<td>{html.escape(record.get('provider') or '')}{hd}</td>"
        f"<td>{_preview(record.get('audio'), preview_label, record.get('preview_text'))}</td>"
    )


def voice_table_html(voices: Iterable[PresetVoice | ClonedVoice], *, limit: int = 50) -> str:
    """A table of voices with a play control each (first ``limit`` rows)."""
    voices = list(voices)
    rows = "".join(f"<tr>{voice_row_html(v)}</tr>" for v in voices[:limit])
    more = (
        (f"<p><small>showing {limit} of {len(voices)} voices; use .to_frame() for all</small></p>")
        if len(voices) > limit
        else ""
    )
    return (
        "<table class='dubkit-voices'><thead><tr><th>name</th><th>voice id</th>"
        "<th>locale</th><th>voice</th><th>provider</th><th>preview</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>{more}"
    )


def audition_html(text: str, lines: Iterable[SpeechLineShape], *, embed: bool = True) -> str:
    """Cards side by side, one a voice; ``embed=False`` plays from URLs (for live widgets)."""
    cards = []
    lines = list(lines)
    for line, (duration, picture, player) in zip(lines, lines_cells(lines, embed=embed)):
        cards.append(
            "<div style='border:1px solid #d0d7de;border-radius:6px;padding:6px;"
            "min-width:200px'>"
            f"<div><code>{html.escape(line.voice_id or '')}</code></div>"
            f"<div>{duration}</div><div>{picture}</div><div>{player}</div></div>"
        )
    return (
        f"<div><p>&ldquo;{html.escape(text)}&rdquo;</p>"
        "<div class='dubkit-audition' style='display:flex;flex-wrap:wrap;gap:8px'>"
        + "".join(cards)
        + "</div></div>"
    )
