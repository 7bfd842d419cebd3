"""Audio players, waveforms and the speech table.

Players never autoplay and never loop. Short clips the result holds are embedded (base64
``data:`` URI) so a remote browser plays them and a saved notebook still does after the
service's URL expired or the sandbox stopped; other clips play from a URL the browser can reach
(:mod:`dubkit.views.sources`). Waveforms are drawn from bytes the result already holds.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Iterable, Sequence

from ..media.audio import decode_many, waveform_svg
from ..media.mime import mime_type
from .shapes import SpeechLineShape
from .sources import browser_url, embedded

SHOWN_LINES = 20  # a table of a large batch shows its first lines only


def player_html(src: str, mime: str) -> str:
    """An ``<audio>`` element: controls on, autoplay and loop off; a URL is one the browser
    can reach from wherever it is (:func:`dubkit.views.sources.browser_url`)."""
    src = browser_url(src)
    fallback = "audio" if src.startswith("data:") else f"<a href='{html.escape(src)}'>audio</a>"
    return (
        f"<audio controls preload='none' style='height:32px;max-width:260px'>"
        f"<source src='{html.escape(src)}' type='{html.escape(mime)}'>{fallback}</audio>"
    )


def line_source(line: SpeechLineShape, embed: bool = True) -> str:
    """What a player plays: the embedded bytes when small and already fetched, else the URL."""
    return embedded(line.data_if_loaded() if embed else None, mime_type(line.format), line.uri)


def lines_cells(
    lines: Sequence[SpeechLineShape], *, embed: bool = True
) -> list[tuple[str, str, str]]:
    """(duration, waveform, player) cells of each line; failed lines show their error.

    The waveforms of all the lines are decoded together (:func:`dubkit.media.audio.decode_many`:
    one ffmpeg run for the M4A ones, not one per row)."""
    loaded = {
        i: data
        for i, line in enumerate(lines)
        if line.ok and (data := line.data_if_loaded()) is not None
    }
    try:
        clips = decode_many([(data, lines[i].format) for i, data in loaded.items()])
    except Exception as exc:  # a view renders even if decoding cannot run at all
        clips = [exc] * len(loaded)
    decoded = dict(zip(loaded, clips))
    cells = []
    for i, line in enumerate(lines):
        if not line.ok:
            error = f"<span style='color:#cf222e'>{html.escape(line.error_message or '')}</span>"
            cells.append(("", "", error))
            continue
        picture = ""
        if isinstance(found := decoded.get(i), Exception):
            picture = f"<small>no waveform ({html.escape(type(found).__name__)})</small>"
        elif found is not None:
            picture = waveform_svg(found[0])
        duration = f"<span class='dubkit-dur'>{line.duration or 0:.1f} s</span>"
        cells.append(
            (duration, picture, player_html(line_source(line, embed), mime_type(line.format)))
        )
    return cells


def speech_table_html(
    lines: Iterable[SpeechLineShape], *, total: int | None = None, note: str = ""
) -> str:
    """A table of speech lines: #, text, voice, duration, waveform, player (or error)."""
    rows = []
    shown_lines = list(itertools.islice(lines, SHOWN_LINES))
    shown = len(shown_lines)
    for line, (duration, picture, player) in zip(shown_lines, lines_cells(shown_lines)):
        rows.append(
            f"<tr><td>{line.index}</td><td style='text-align:left;max-width:360px'>"
            f"{html.escape(line.text or '')}</td><td><code>"
            f"{html.escape(line.voice_id or '')}</code></td><td>{duration}</td>"
            f"<td>{picture}</td><td>{player}</td></tr>"
        )
    more = (
        (
            f"<p><small>showing {shown} of {total} lines; iterate or use .to_frame() for "
            f"all</small></p>"
        )
        if total is not None and total > shown
        else ""
    )
    note_html = f"<p><small>{html.escape(note)}</small></p>" if note else ""
    return (
        "<table class='dubkit-speech'><thead><tr><th>#</th><th>text</th><th>voice</th>"
        "<th>duration</th><th>waveform</th><th>audio</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + more
        + note_html
    )
