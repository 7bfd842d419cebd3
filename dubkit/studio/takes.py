"""Takes: one voice saying the line with one reading, loudness-matched, ready to show.

Each take is played loudness-matched (-23 LUFS, :mod:`dubkit.media.loudness`) and embedded as WAV,
so the comparison is fair and plays from any browser; the download is the take as the service
made it.

>>> takes = make_takes(audition.speech, voices, text="Hello", locale="en-US")
>>> takes[0].matched.label()          # '-17.2 LUFS → -23'
>>> takes[0].player_html()            # <audio> of the matched take
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from .._util.deprecation import renamed, renamed_keywords
from ..media import loudness
from ..media.audio import waveform_svg
from ..media.mime import mime_type
from ..views.buttons import download_button_html
from ..views.palette import MUTED, error_html
from ..views.players import player_html
from .voices import VoiceInfo

if TYPE_CHECKING:
    from ..results import SpeechLine

NEUTRAL = "neutral"


@dataclass(eq=False)
class Take:
    """``voice`` saying ``text`` in ``locale`` with ``emotion`` at ``speed`` (1.0: natural)."""

    voice: VoiceInfo
    line: SpeechLine
    text: str
    locale: str | None = None
    emotion: str = NEUTRAL
    speed: float = 1.0
    matched: loudness.Matched | None = None
    problem: str | None = field(default=None)  # why it could not be measured
    compared: bool = False  # one of a voice's readings: the reading is its title

    @property
    def key(self) -> str:
        """One voice with one reading: what the shortlist stars."""
        return f"{self.voice.voice_id}|{self.emotion}|{self.speed:g}"

    @property
    def ok(self) -> bool:
        return self.line.ok

    @property
    def settings(self) -> dict[str, Any]:
        return {"locale": self.locale, "emotion": self.emotion, "speed": self.speed}

    delivery = renamed("reading")

    def reading(self) -> str:
        """``'happy · 1.25x'``; empty for a neutral take at natural speed, unless it is one
        of a voice's readings (then ``'neutral · 1x'``)."""
        if self.compared:
            return f"{self.emotion} · {self.speed:g}x"
        parts = [self.emotion] if self.emotion != NEUTRAL else []
        if self.speed != 1.0:
            parts.append(f"{self.speed:g}x")
        return " · ".join(parts)

    def measure(self) -> Take:
        """Download, decode and loudness-match the take (once); a failure is kept as text."""
        if self.matched is None and self.problem is None and self.ok:
            try:
                self.matched = loudness.match(self.line.audio, self.line.sample_rate)
            except Exception as exc:  # shown on the card; the others still compare
                self.problem = f"{type(exc).__name__}: {exc}"
        return self

    @cached_property
    def src(self) -> str | None:
        """What the player plays: the matched WAV, else the take as it came."""
        return self.matched.data_uri() if self.matched is not None else self.line.uri

    # ----------------------------------------------------------------- the card's pieces

    def level_html(self, *, hidden: bool = False) -> str:
        """The level the take came at and the one it plays at; ``hidden`` (a blind take)
        keeps the first back: a voice's own level could give it away."""
        if not self.ok:
            return ""
        if hidden and self.matched is not None and not self.matched.silent:
            return (
                f"<div class='dubkit-loudness' style='font-size:90%'>plays at "
                f"{self.matched.loudness:.0f} LUFS; own level after pick</div>"
            )
        if self.matched is None:
            return (
                f"<div class='dubkit-loudness'>level unknown ({html.escape(self.problem or '')}"
                "); played as it came</div>"
            )
        return (
            f"<div class='dubkit-loudness' title='EBU R128 integrated loudness of the take; "
            f"it plays at {self.matched.target:g} LUFS so that no voice wins by being "
            f"louder' style='font-size:90%'>{html.escape(self.matched.label())}</div>"
        )

    def player_html(self, label: str = "") -> str:
        if not self.ok:
            return error_html(self.line.error_message or "no audio")
        wave = waveform_svg(self.matched.samples) if self.matched is not None else ""
        mime = "audio/wav" if self.matched is not None else mime_type(self.line.format)
        held = None if self.matched is not None else self.line.data_if_loaded()
        player = player_html(self.src, mime, data=held, label=label)
        return f"<div>{wave}</div><div>{player}</div>"

    def filename(self) -> str:
        """``<voice name>[-<reading>].<format>``, safe on every file system."""
        stem = self.voice.name + (f"-{self.reading()}" if self.reading() else "")
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem.replace(" · ", "-"))
        return f"{safe}.{self.line.format or 'audio'}"

    def download_html(self) -> str:
        if not self.ok:
            return ""
        return download_button_html(
            self.line.uri,
            f"{self.line.format or 'audio'}",
            data=self.line.data_if_loaded(),
            filename=self.filename(),
            mime=mime_type(self.line.format),
            title="the take as the service made it (not loudness-matched)",
        )

    def card_html(self, *, letter: str | None = None, hidden: bool = False) -> str:
        """The whole card as static HTML (saved notebooks); ``hidden``: a blind take."""
        return (
            "<div class='dubkit-take' style='border:1px solid #d0d7de;border-radius:6px;"
            "padding:6px;min-width:220px'>"
            + self.header_html(letter=letter, hidden=hidden)
            + self.level_html(hidden=hidden)
            + self.player_html()
            + ("" if hidden else self.download_html())
            + "</div>"
        )

    def header_html(
        self, *, letter: str | None = None, hidden: bool = False, badge: str = ""
    ) -> str:
        if hidden:
            return (
                f"<div class='dubkit-take-name' style='font-weight:600'>Take "
                f"{html.escape(letter or '?')}</div><div style='color:{MUTED};"
                "font-size:90%'>voice hidden until you pick</div>"
            )
        if self.compared:  # the voice is the section's; the reading tells cards apart
            return self.voice.label_html(title=self.reading(), by=True)
        prefix = f"{letter}: " if letter else ""
        reading = self.reading()
        extra = (
            (f"<div class='dubkit-take-reading' style='font-size:90%'>{html.escape(reading)}</div>")
            if reading
            else ""
        )
        return self.voice.label_html(prefix=prefix, badge=badge) + extra


@renamed_keywords(deliveries="readings")
def make_takes(
    lines: Iterable[SpeechLine],
    voices: Mapping[str, VoiceInfo],
    *,
    text: str,
    locale: str | None,
    readings: list[tuple[str, float]] | None = None,
    workers: int = 4,
) -> list[Take]:
    """One take a line (``readings``: the (emotion, speed) of each line), measured in
    parallel: each measurement downloads a file and runs ffmpeg, both mostly waiting."""
    takes = []
    for i, line in enumerate(lines):
        emotion, speed = readings[i] if readings else (NEUTRAL, 1.0)
        voice = voices.get(line.voice_id or "") or VoiceInfo.unknown(line.voice_id or "")
        takes.append(Take(voice, line, text, locale, emotion, speed, compared=readings is not None))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(Take.measure, takes))
    return takes
