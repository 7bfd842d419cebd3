"""A dub: original and dubs side by side, downloads, the script with a player per line, and
what the service could not do as asked.

Players never autoplay or loop. Dubbed video streams from where the front end reaches it (the
live channel gives the local sandbox's files their source) and shows an embedded poster frame,
so a saved notebook still shows the picture and its facts; each dubbed line's audio is
embedded when the result holds it (:mod:`dubkit.frontends.media`).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from .._util.words import count
from ..media.mime import format_of, mime_type
from .buttons import download_button_html, download_row_html
from .palette import MUTED, muted
from .players import picture_src, player_html
from .shapes import DubbingShape, MediaFileShape, ScriptLineShape
from .translation import PSEUDO_NOTE


def media_player_html(
    file: MediaFileShape | None,
    *,
    video: bool,
    poster: str | None = None,
    label: str = "",
    captions: tuple[str | None, str | None] = (None, None),
) -> str:
    """A ``<video>`` (or ``<audio>``) element for a result file; controls on, no autoplay/loop.

    ``poster`` is the picture's src (embedded, so the frame survives a saved notebook);
    ``captions`` the (WebVTT, locale) of what is said, a track a viewer can turn on (for
    sound alone, the transcript is the script's table below it).
    """
    if file is None or not file.url:
        return "<em>not available</em>"
    if not video:
        return player_html(file.url, mime_type(format_of(file.url)), label=label)
    vtt, locale = captions
    tracks = [(vtt, locale or "und", f"captions ({locale or 'as said'})")] if vtt else []
    return player_html(
        file.url, "video/mp4", kind="video", poster=poster, label=label, captions=tracks
    )


def _poster(result: DubbingShape) -> str | None:
    """The dub's picture (the service's build image); the original shows the same frame."""
    url = result.poster_url
    return picture_src(url, result.held(url)) if url else None


def _column(title: str, player: str, facts: str = "") -> str:
    return (
        f"<div style='flex:0 0 auto;margin-right:16px'><div><b>{html.escape(title)}</b>"
        f"</div>{player}{muted(facts, tag='div', size='85%')}</div>"
    )


def _facts(file: MediaFileShape | None) -> str:
    if file is None:
        return ""
    bits = [
        f"{file.duration:.1f} s" if file.duration else "",
        f"{file.width}x{file.height}" if file.width else "",
        f"{file.size / 1e6:.1f} MB" if file.size else "",
    ]
    return html.escape(" · ".join(b for b in bits if b))


def side_by_side_html(results: Sequence[DubbingShape]) -> str:
    """One row: the original, then each result's dub (same source assumed)."""
    first = results[0]
    video = first.video is not None
    columns = [
        _column(
            "original" + (f" ({first.source_locale})" if first.source_locale else ""),
            media_player_html(
                first.original,
                video=video,
                poster=_poster(first),
                label=f"original {first.source_locale or ''} of the {first.target_locale} dub",
                captions=(first.captions("source"), first.source_locale),
            ),
            _facts(first.original),
        )
    ]
    for result in results:
        columns.append(
            _column(
                f"{result.label} ({result.target_locale})",
                media_player_html(
                    result.video or result.audio,
                    video=video,
                    poster=_poster(result),
                    label=f"{result.label}, {result.target_locale}",
                    captions=(result.captions("dub"), result.target_locale),
                ),
                _facts(result.video or result.audio),
            )
        )
    return "<div style='display:flex;flex-wrap:wrap'>" + "".join(columns) + "</div>"


def downloads_html(result: DubbingShape) -> str:
    """Buttons: subtitles (SRT, VTT), the dubbed audio, and the compressed variants."""
    buttons = [
        download_button_html(url, label)
        for label, url in (
            ("subtitles .srt", result.subtitles.srt),
            ("subtitles .vtt", result.subtitles.vtt),
            ("dubbed audio", result.audio.url if result.audio else None),
        )
        if url
    ]
    buttons += [
        download_button_html(f.url, name) for name, f in result.compressed.items() if f is not None
    ]
    return download_row_html(buttons, "Downloads")


def line_player_html(result: DubbingShape, line: ScriptLineShape) -> str:
    """A player for one dubbed line: its bytes when the result holds them, else its URL."""
    if not line.audio_url:
        return ""
    mime = mime_type(format_of(line.audio_url))
    text = line.translation if len(line.translation) <= 40 else line.translation[:39] + "…"
    return player_html(
        line.audio_url,
        mime,
        data=result.held(line.audio_url),
        label=f"{result.target_locale} {result.label}, line {line.id}, {line.speaker}: {text}",
    )


def script_html(result: DubbingShape) -> str:
    """The script: time, speaker, source text, translation, voice, and the dubbed line."""
    rows = []
    for line in result.script:
        player = line_player_html(result, line)
        rows.append(
            f"<tr><td>{html.escape(line.id)}</td>"
            f"<td>{line.start:.2f}–{line.end:.2f}</td><td>{html.escape(line.speaker)}</td>"
            f"<td style='text-align:left;max-width:260px'>{html.escape(line.source_text)}</td>"
            f"<td style='text-align:left;max-width:260px'>{html.escape(line.translation)}</td>"
            f"<td><code>{html.escape(line.voice_id)}</code><br><small>"
            f"{html.escape(line.voice_name)} · {html.escape(line.provider)}</small></td>"
            f"<td>{player}</td></tr>"
        )
    return (
        "<table class='dubkit-script'><thead><tr><th>#</th><th>time (s)</th>"
        "<th>speaker</th><th>source</th><th>translation</th><th>voice</th><th>dub</th>"
        "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def notes_html(result: DubbingShape) -> str:
    notes = list(result.notices)
    if result.engine.startswith("sandbox"):
        notes.insert(0, PSEUDO_NOTE)
    if not notes:
        return ""
    return (
        f"<ul style='color:{MUTED};font-size:90%'>"
        + "".join(f"<li>{html.escape(n)}</li>" for n in notes)
        + "</ul>"
    )


def dubbing_html(result: DubbingShape) -> str:
    """Everything about one dub as static HTML."""
    return (
        f"<div class='dubkit-dubbing'><p><b>{html.escape(str(result.source_locale))} → "
        f"{html.escape(str(result.target_locale))}</b>: {count(len(result.script), 'line')}, "
        f"{count(len(result.voices), 'voice')}</p>"
        + side_by_side_html([result])
        + downloads_html(result)
        + script_html(result)
        + notes_html(result)
        + "</div>"
    )


def compare_html(results: Sequence[DubbingShape]) -> str:
    """The original and several dubs of it side by side, then each one's downloads."""
    parts = [side_by_side_html(results)]
    for result in results:
        parts.append(
            f"<p><b>{html.escape(f'{result.label} ({result.target_locale})')}</b></p>"
            + downloads_html(result)
        )
    return "<div class='dubkit-compare'>" + "".join(parts) + "</div>"
