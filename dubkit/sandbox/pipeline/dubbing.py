"""Translate the lines, speak them, and fit each dub into its place on the timeline.

Fitting rules (*choice*; the interface leaves them open):

* A dub longer than its source line is sped up, down to 0.7x its length (1.43x faster); if it
  would then still run into the next line (or past the end) it is squeezed harder, down to
  0.5x; beyond that it is cut with a short fade and marked ``truncated``.
* A dub much shorter than its line is slowed by at most 1.15x; the rest is silence.
* With ``dynamicVideoLength`` the speech keeps its natural pace: the whole timeline (picture
  and background) is stretched by the one factor that gives every line room, at most 2x; only
  what still does not fit after that is squeezed as above.
* Each line starts where its source line starts (scaled by that factor).

Given a folder, the spoken and the fitted clips are kept there, one file a line, and read
back one line at a time: a long dub's speech is never held whole.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ...media import av, mixing, speech
from ...media.track import Track
from ..engines import translate as engine
from .settings import Settings
from .transcript import Line

SOFT_FASTEST, HARD_FASTEST, SLOWEST = 0.7, 0.5, 1.15
MAX_TIMELINE_STRETCH = 2.0
GAP = 0.05  # seconds kept free before the next line
FADE = 0.03
WORKERS = 2  # the machine's cores; each time stretch is one short ffmpeg run


def translate(lines: list[Line], settings: Settings) -> None:
    """Fill ``line.translation`` with the sandbox's translation engine.

    Lines with nothing to translate (digits only) pass through unchanged: a dub needs words.
    """
    neighbours = settings.translate_mode == "default"
    outcomes = engine.translate_segments(
        [line.text for line in lines],
        settings.source,
        settings.target,
        mode="neighbor" if neighbours else "independent",
        window=2,
        scene="video",
        skip_missing_check=True,
    )
    for line, outcome in zip(lines, outcomes):
        line.translation = outcome.text or line.text


def synthesize(lines: list[Line], speaking: str, folder: Path | None = None) -> list[Track]:
    """Each line's translation spoken in its voice, silence trimmed, at ``speech.SAMPLE_RATE``
    (kept in ``folder`` when given)."""
    clips = []
    for line in lines:
        audio = line.voice.speaking.speak(line.translation, espeak=speaking)
        clips.append(
            _kept(mixing.trim_silence(audio, speech.SAMPLE_RATE), folder, f"said-{line.id}")
        )
    return clips


def timeline_stretch(lines: list[Line], clips: list[Track], total: float) -> float:
    """The factor ``dynamicVideoLength`` stretches the timeline by so every dub has room."""
    need = 1.0
    for clip, room in zip(clips, _rooms(lines, total)):
        need = max(need, clip.duration / room)
    return min(math.ceil(need * 1000) / 1000, MAX_TIMELINE_STRETCH)  # up: never short


def fit(
    lines: list[Line],
    clips: list[Track],
    total: float,
    scale: float,
    *,
    natural_pace: bool,
    folder: Path | None = None,
) -> None:
    """Stretch each clip into its slot and set ``clip``, ``at``, ``stretch``, ``truncated``.

    ``total`` is the source duration; slots are scaled by ``scale``. With ``natural_pace``
    (dynamic video length) speech is only squeezed when the scaled room is still too short.
    The fitted clips are kept in ``folder`` when given.
    """
    rate = speech.SAMPLE_RATE
    plans = []
    for line, clip, room in zip(lines, clips, _rooms(lines, total)):
        length = clip.duration
        slot, room = line.duration * scale, room * scale
        factor = 1.0
        if length > slot and not natural_pace:
            factor = max(slot / length, SOFT_FASTEST)
        if length * factor > room:
            factor = max(room / length, HARD_FASTEST)
        elif length < slot * 0.9:
            factor = min(slot / length, SLOWEST)
        plans.append((factor, room))
        line.raw_duration = round(length, 3)
        line.at = round(line.start * scale, 3)

    def settle(item: tuple[Line, Track, tuple[float, float]]) -> tuple[Track, bool, float]:
        # in the worker: only the kept clip comes back, so finished lines do not pile up
        line, said, (factor, room) = item
        clip = said.read()
        clip = clip if abs(factor - 1) < 0.01 else av.time_stretch(clip, rate, factor)
        limit = round(room * rate)
        truncated = len(clip) > limit
        if truncated:
            clip = clip[:limit].copy()
            fade = min(len(clip), round(FADE * rate))
            clip[len(clip) - fade :] *= np.linspace(1, 0, fade, dtype=np.float32)
        stretch = round(len(clip) / max(1, round(line.raw_duration * rate)), 3)
        return _kept(clip, folder, f"line-{line.id}"), truncated, stretch

    with ThreadPoolExecutor(WORKERS, thread_name_prefix="dub-fit") as pool:
        settled = pool.map(settle, zip(lines, clips, plans))
        for line, (clip, truncated, stretch) in zip(lines, settled):
            line.clip, line.truncated, line.stretch = clip, truncated, stretch


def apply_gains(lines: list[Line], gains: dict[str, float]) -> None:
    """Lay the lines named in ``gains`` (the admin's ``lineGainDb`` fault) that many dB off."""
    for line in lines:
        if line.id in gains and line.clip is not None:
            samples = line.clip.read() * np.float32(10 ** (gains[line.id] / 20))
            line.clip = Track.of(np.clip(samples, -1, 1).astype(np.float32), speech.SAMPLE_RATE)


def _kept(samples: np.ndarray, folder: Path | None, name: str) -> Track:
    if folder is None:
        return Track.of(samples, speech.SAMPLE_RATE)
    folder.mkdir(parents=True, exist_ok=True)
    return Track.write(samples, speech.SAMPLE_RATE, folder / f"{name}.f32")


def _rooms(lines: list[Line], total: float) -> list[float]:
    """Seconds from each line's start to the next line's start (or the end), less a gap."""
    starts = [line.start for line in lines[1:]] + [total]
    return [max(line.duration, nxt - line.start - GAP) for line, nxt in zip(lines, starts)]
