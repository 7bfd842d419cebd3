"""Separation, mixing, muxing, compressed variants and subtitle files.

*choice* The sandbox has no source-separation model. Its "separation" is time-based: the
speech stem is the original audio inside the detected speech lines, the background stem
(``mnsUrl``: music and sound) is the original with those lines removed, and the dub is mixed
over the original ducked (or with speech removed, or kept) under the speech lines, so music
and ambience between and around lines survive. ``musicUrl``, ``sfxUrl`` and ``otherUrl`` are
empty strings: the sandbox cannot split them apart.

*choice* Compressed variants (``compress``): for video, 480p and 360p below the source height
(a source of 360p or less gets one variant at its own height, re-encoded smaller), all made
from one decode with x264's ``veryfast`` preset; for audio, an ``mp3`` variant.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...media import mixing, mp4
from ...media.subtitles import Cue, to_srt, to_vtt
from ...media.track import Track
from ...schema import MediaFile, SubtitleFiles
from .outputs import WINDOW, Outputs
from .settings import Settings
from .transcript import Line

DUCK_DB = -18.0
COMPRESS_HEIGHTS = (480, 360)


@dataclass
class Stems:
    """The stems of ``original`` (already on the output timeline, stretched by ``scale``),
    made a window at a time (:meth:`windows`), so no whole-length copy is ever held."""

    original: Track
    spans: list[tuple[float, float]]  # the speech lines
    separation: str  # settings.separation: duck, remove or keep

    @property
    def channels(self) -> int:
        return self.original.channels

    @property
    def rate(self) -> int:
        return self.original.rate

    def part(self, stem: str, start: int, stop: int) -> np.ndarray:
        """Samples ``start:stop`` of ``stem``: ``speech`` (the original inside the lines),
        ``background`` (the original with them removed) or ``bed`` (what the dub is mixed over,
        per ``separation``)."""
        length, rate = self.original.frames, self.rate
        if stem == "speech":
            gaps = _complement(self.spans, length / rate)
            gain = mixing.envelope(length, rate, gaps, remove=True, start=start, stop=stop)
        elif stem == "background" or self.separation == "remove":
            gain = mixing.envelope(length, rate, self.spans, remove=True, start=start, stop=stop)
        elif self.separation == "keep":
            return self.original.read(start, stop)
        else:
            gain = mixing.envelope(length, rate, self.spans, DUCK_DB, start=start, stop=stop)
        part = self.original.read(start, stop)
        return part * (gain if part.ndim == 1 else gain[:, None])

    def whole(self, stem: str) -> np.ndarray:
        return self.part(stem, 0, self.original.frames)

    def windows(self, stem: str) -> Iterator[np.ndarray]:
        length = self.original.frames
        for start in range(0, length, WINDOW):
            yield self.part(stem, start, min(length, start + WINDOW))


def separate(original: Track, lines: list[Line], settings: Settings, scale: float = 1.0) -> Stems:
    """Stems of ``original`` (already on the output timeline, stretched by ``scale``)."""
    spans = [(line.start * scale, line.end * scale) for line in lines]
    return Stems(original, spans, settings.separation)


def dub_mix(stems: Stems, lines: list[Line], rate: int) -> Iterator[np.ndarray]:
    """The dubbed lines mixed over the bed, a window at a time (:func:`mixing.mixed_windows`):
    the same samples :func:`mixing.mix` of the whole bed and :func:`mixing.lay_lines` makes."""
    clips = [(line.at, line.clip) for line in lines if line.clip is not None]
    length = stems.original.frames
    ready: dict[int, np.ndarray] = {}  # lines resampled for a window, kept for the next one

    def window(start: int, stop: int) -> list[np.ndarray]:
        # Only the lines heard in this window are read and resampled (all of them would be the
        # length of the speech); a line across two windows is resampled once. Windows move
        # forward, so a line that ends before this one starts is not heard again.
        heard = [
            i
            for i, (at, clip) in enumerate(clips)
            if at * rate < stop and (at + clip.duration) * rate > start
        ]
        for i in list(ready):
            if i not in heard:
                del ready[i]
        for i in heard:
            if i not in ready:
                clip = clips[i][1]
                ready[i] = mixing.resample(clip.read(), clip.rate, rate)
        placed = [(clips[i][0], ready[i]) for i in heard if len(ready[i])]
        track = mixing.place(placed, rate, length / rate, start=start, stop=stop)
        return [stems.part("bed", start, stop), mixing.on_channels(track, stems.channels)]

    return mixing.mixed_windows(length, window, blocks=WINDOW // 441)


def cues(lines: list[Line]) -> list[Cue]:
    """Subtitle cues of the dub: each translation while its dubbed line is heard."""
    out = []
    for line in lines:
        heard = line.clip.duration if line.clip is not None else 0.0
        out.append(Cue(line.at, round(line.at + max(heard, 0.5), 3), line.translation))
    return out


def write_subtitles(out: Outputs, lines: list[Line], target: str) -> SubtitleFiles:
    found = cues(lines)
    return SubtitleFiles(
        srt=out.text(f"subtitles.{target}.srt", to_srt(found)),
        vtt=out.text(f"subtitles.{target}.vtt", to_vtt(found)),
        language=target,
        cues=len(found),
    )


def video(
    out: Outputs,
    source: str,
    audio_name: str,
    settings: Settings,
    scale: float,
    subtitle_name: str,
    variants: dict[int, str] | None = None,
) -> str:
    """Mux the dub onto the picture (stretched by ``scale`` first when above 1); ``variants``
    (``{height: name}``) are made in the same run (:func:`dubkit.media.mp4.mux`)."""
    picture = source
    if scale > 1:
        picture = str(out.path("work/stretched.mp4"))
        mp4.stretch_video(source, picture, scale)
    text = settings.text
    wants_subtitles = text.burn or text.soft
    mp4.mux(
        picture,
        out.path(audio_name),
        out.path("dubbed.mp4"),
        subtitles_path=out.path(subtitle_name) if wants_subtitles else None,
        burn=text.burn,
        soft=text.soft,
        style=text.style or None,
        fontsdir=mp4.default_fontsdir(),
        variants={h: out.path(name) for h, name in (variants or {}).items()},
    )
    return "dubbed.mp4"


def variant_names(height: int) -> dict[int, str]:
    """``{height: file name}`` of a video's compressed variants (see the module's *choice*)."""
    heights = [h for h in COMPRESS_HEIGHTS if h < height] or [height]
    return {h: f"dubbed-{h}p.mp4" for h in heights}


def pictures(out: Outputs, source: str, names: dict[int, str]) -> dict[int, str]:
    """The variants' pictures alone, encoded from the source: with no subtitles to burn and no
    stretch they do not depend on the dub, so this runs while the dub is being made."""
    made = {h: f"work/picture-{name}" for h, name in names.items()}
    mp4.compress(source, {h: out.path(name) for h, name in made.items()}, tracks=False)
    return made


def dress(
    out: Outputs, made: dict[int, str], names: dict[int, str], audio_name: str, subs: str | None
) -> None:
    """Give each variant picture the dub's audio and soft subtitles (copied, not encoded)."""
    mp4.add_sound(
        {out.path(picture): out.path(names[h]) for h, picture in made.items()},
        out.path(audio_name),
        subtitles_path=out.path(subs) if subs else None,
    )


def compress(out: Outputs, built: str, height: int | None, scratch: Path) -> None:
    """Make the ``compress`` variants of a built video (``height`` given) or audio (``None``);
    an audio is decoded into ``scratch`` and encoded a window at a time."""
    if height is None:
        out.transcoded("dubbed.mp3", out.path(built), scratch)
        return
    names = variant_names(height)
    # One run, one decode of the built video for all variants; mp4.compress says why veryfast.
    mp4.compress(out.path(built), {h: out.path(name) for h, name in names.items()})


def compressed_files(out: Outputs, height: int | None) -> dict[str, MediaFile]:
    """The ``compress`` map (§3.6) of the variants made for a video or (``None``) an audio."""
    if height is None:
        return {"mp3": out.media_file("dubbed.mp3", MediaFile)}
    return {f"{h}p": out.media_file(name, MediaFile) for h, name in variant_names(height).items()}


def _complement(spans: list[tuple[float, float]], total: float) -> list[tuple[float, float]]:
    gaps, cursor = [], 0.0
    for start, end in sorted(spans):
        if start > cursor:
            gaps.append((cursor, start))
        cursor = max(cursor, end)
    if cursor < total:
        gaps.append((cursor, total))
    return gaps
