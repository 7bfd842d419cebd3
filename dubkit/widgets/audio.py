"""Inline audio players for speech results: text, duration, a small waveform, one player a line.

Players never autoplay and never loop. Short clips are embedded (base64 ``data:`` URI) so a
remote browser plays them and a saved notebook still does after the service's URL expired or
the sandbox stopped; longer clips play from a URL the browser can reach
(:mod:`dubkit.widgets.sources`).

>>> speech = client.tts.create(["Hello", "Goodbye"], voice="sv_s1_en_us_clear_f")
>>> speech                      # the table below, one player per line
>>> speech[0]                   # one line: text, duration, waveform, player
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Iterable

from ..media.audio import mime_type, waveform_svg
from .sources import EMBED_LIMIT, browser_url, data_uri

if TYPE_CHECKING:
    from ..resources.tts import SpeechLine

SHOWN_LINES = 20           # a table of a large batch shows its first lines only


def player_html(src: str, mime: str) -> str:
    """An ``<audio>`` element: controls on, autoplay and loop off; a URL is one the browser
    can reach from wherever it is (:func:`dubkit.widgets.sources.browser_url`)."""
    src = browser_url(src)
    fallback = "audio" if src.startswith("data:") else f"<a href='{html.escape(src)}'>audio</a>"
    return (f"<audio controls preload='none' style='height:32px;max-width:260px'>"
            f"<source src='{html.escape(src)}' type='{html.escape(mime)}'>{fallback}</audio>")


def line_source(line: "SpeechLine", embed: bool = True) -> str:
    """What a player plays: the embedded bytes when small and already fetched, else the URL."""
    data = line.data_if_loaded() if embed else None
    if data is not None and len(data) <= EMBED_LIMIT:
        return data_uri(data, mime_type(line.format))
    return browser_url(line.uri or "")


def line_cells(line: "SpeechLine", *, waveform: bool = True,
               embed: bool = True) -> tuple[str, str, str]:
    """(duration, waveform, player) cells of one line; failed lines show their error."""
    if not line.ok:
        error = f"<span style='color:#cf222e'>{html.escape(line.error_message or '')}</span>"
        return "", "", error
    picture = ""
    if waveform:
        try:
            picture = waveform_svg(line.audio)
        except Exception as exc:      # a view must render even if one clip cannot be fetched
            picture = f"<small>no waveform ({html.escape(type(exc).__name__)})</small>"
    duration = f"<span class='dubkit-dur'>{line.duration or 0:.1f} s</span>"
    return duration, picture, player_html(line_source(line, embed), mime_type(line.format))


def speech_table_html(lines: Iterable["SpeechLine"], *, total: int | None = None,
                      note: str = "") -> str:
    """A table of speech lines: #, text, voice, duration, waveform, player (or error)."""
    rows = []
    shown = 0
    for line in lines:
        if shown == SHOWN_LINES:
            break
        duration, picture, player = line_cells(line)
        rows.append(f"<tr><td>{line.index}</td><td style='text-align:left;max-width:360px'>"
                    f"{html.escape(line.text or '')}</td><td><code>"
                    f"{html.escape(line.voice_id or '')}</code></td><td>{duration}</td>"
                    f"<td>{picture}</td><td>{player}</td></tr>")
        shown += 1
    more = (f"<p><small>showing {shown} of {total} lines; iterate or use .to_frame() for "
            f"all</small></p>") if total is not None and total > shown else ""
    note_html = f"<p><small>{html.escape(note)}</small></p>" if note else ""
    return ("<table class='dubkit-speech'><thead><tr><th>#</th><th>text</th><th>voice</th>"
            "<th>duration</th><th>waveform</th><th>audio</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>" + more + note_html)
