"""Audio and video players, pictures, waveforms and the speech table.

Players never autoplay and never loop. Where each gets its bytes is
:func:`dubkit.frontends.media.element_source`'s one rule: bytes the result holds are embedded
(a saved notebook still plays them on GitHub or nbviewer), the service's URLs are used as they
are, and the local sandbox's files get only a key and a note, "plays while the notebook runs",
until the live channel gives them a source the front end reaches. Waveforms are drawn from
bytes the result already holds.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Iterable, Sequence
from typing import Literal

from ..frontends.media import LIVE_NOTE, data_uri, element_source
from ..media.mime import format_of, known_mime_type, mime_type
from .palette import MUTED, error_html
from .shapes import SpeechLineShape

SHOWN_LINES = 20  # a table of a large batch shows its first lines only
VIDEO_WIDTH = 320


def player_html(
    url: str | None,
    mime: str,
    *,
    data: bytes | None = None,
    kind: Literal["audio", "video"] = "audio",
    label: str = "",
    poster: str | None = None,
    width: int = VIDEO_WIDTH,
    captions: Sequence[tuple[str, str, str]] = (),
) -> str:
    """An ``<audio>`` (or ``<video>``) element: controls on, autoplay and loop off.

    ``url`` may be a ``data:`` URI; ``data`` are the bytes the result holds (embedded when
    small). ``poster`` is a picture's source (embed it: the frame survives a saved notebook).
    ``captions``: (WebVTT text, language, label) tracks, embedded so that every front end and
    a saved notebook have them; none is on until chosen in the player (its CC button).
    """
    source = element_source(url, mime, data=data, kind=kind)
    attributes = ["controls", f"preload='{'metadata' if kind == 'video' else 'none'}'"]
    if kind == "video":
        # Its own stacking context: Chromium 150 misses a video's control bar under a scrolled,
        # contained panel (JupyterLab's windowed notebook), so a click on play did nothing.
        attributes += [f"width='{width}'", "style='position:relative;z-index:0'"]
        if poster:
            attributes.append(f"poster='{html.escape(poster)}'")
    else:
        attributes.append("style='height:32px;max-width:260px'")
    if label:
        attributes.append(f"aria-label='{html.escape(label)}'")
    attributes += [f"data-dubkit-mime='{html.escape(mime)}'", source.attributes()]
    tracks = "".join(
        f"<track kind='captions' src='{data_uri(vtt.encode(), 'text/vtt')}' "
        f"srclang='{html.escape(language)}' label='{html.escape(name)}'>"
        for vtt, language, name in captions
    )
    element = f"<{kind} {' '.join(attributes)}>{tracks}</{kind}>"
    return element + (live_note(source.media.key) if source.live else "")


def live_note(key: str) -> str:
    """The note beside a player that only plays while the notebook runs (the live channel
    hides it once the player has its source, or says there why it cannot play)."""
    return (
        f"<small class='dubkit-live-note' data-dubkit-note-for='{key}' "
        f"style='color:{MUTED}'>{LIVE_NOTE}</small>"
    )


def picture_html(
    url: str | None, *, data: bytes | None = None, mime: str = "", size: int = 24
) -> str:
    """A small picture (a voice's cover): embedded when held, from the service's URL, else
    drawn only while the notebook runs (a saved copy leaves it out)."""
    if not url and data is None:
        return ""
    mime = mime or known_mime_type(format_of(url or ""), "image") or "image/jpeg"
    source = element_source(url, mime, data=data, kind="image")
    return (
        f"<img {source.attributes()} width='{size}' height='{size}' alt='' "
        "style='vertical-align:middle'> "
    )


def picture_src(url: str | None, data: bytes | None, mime: str = "image/jpeg") -> str | None:
    """A poster's ``src``: the held bytes embedded, or the service's URL (a frame on this
    machine's loopback is left out: it would not survive a saved notebook)."""
    if not url and data is None:
        return None
    return element_source(url, mime, data=data, kind="image").src


def line_player_html(line: SpeechLineShape, *, embed: bool = True, label: str = "") -> str:
    """A line's player: its bytes when small and already fetched, else its URL."""
    return player_html(
        line.uri,
        mime_type(line.format),
        data=line.data_if_loaded() if embed else None,
        label=label or _line_label(line),
    )


def _line_label(line: SpeechLineShape) -> str:
    """``'sv_s1_en_us_clear_f, line 2: Good evening…'``: who, which line (unique in its
    table), and the start of what it says."""
    text = (line.text or "").strip()
    text = text if len(text) <= 40 else text[:39] + "…"
    said = f": {text}" if text else ""
    return f"{line.voice_id or 'speech'}, line {line.index + 1}{said}"


def lines_cells(
    lines: Sequence[SpeechLineShape], *, embed: bool = True
) -> list[tuple[str, str, str]]:
    """(duration, waveform, player) cells of each line; failed lines show their error.

    The waveforms of all the lines are decoded together (:func:`dubkit.media.audio.decode_many`:
    one ffmpeg run for the M4A ones, not one per row)."""
    from ..media.audio import decode_many, waveform_svg  # numpy loads with the first waveform

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
            error = error_html(line.error_message or "")
            cells.append(("", "", error))
            continue
        picture = ""
        if isinstance(found := decoded.get(i), Exception):
            picture = f"<small>no waveform ({html.escape(type(found).__name__)})</small>"
        elif found is not None:
            picture = waveform_svg(found[0])
        duration = f"<span class='dubkit-dur'>{line.duration or 0:.1f} s</span>"
        cells.append((duration, picture, line_player_html(line, embed=embed)))
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
