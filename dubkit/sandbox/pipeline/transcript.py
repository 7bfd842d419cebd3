"""Speech lines from the signal: where speech is, what was said, and who said it.

* Timings come from the audio alone (``vad.segment_speech``), never from subtitles.
* Text comes from the material's embedded subtitle track when it has one: each cue goes to
  the segment it overlaps most (or the nearest one within 1 s); a segment no cue reaches, and
  every segment of a material without subtitles, gets a labelled placeholder (*choice*: the
  sandbox has no speech recogniser and says so rather than invent words).
* Speakers: each line's median pitch is measured (``voiceprint.measure``) and lines are grouped
  on a log-pitch scale. ``auto`` starts a new speaker wherever sorted pitches jump by more than
  0.35 octave (about 4 semitones: more than one voice drifts, less than two people differ); a
  number N cuts at the N-1 widest jumps. Lines too short or unvoiced to measure join the speaker
  of the nearest measured line. There is always at least one speaker.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...media.subtitles import Cue
from ...media.track import Track
from ..engines import vad, voiceprint
from ..engines.voiceprint import Voiceprint

PLACEHOLDER = "[no transcript: speech segment {n}]"
AUTO_GAP_OCTAVES = 0.35
CUE_REACH = 1.0  # seconds: a cue this close to a segment still belongs to it


@dataclass
class Line:
    """One dubbed line; later stages fill in translation, voice and the fitted clip."""

    index: int  # 0-based, in time order
    start: float  # seconds on the source timeline
    end: float
    text: str
    placeholder: bool
    speaker: int = 0  # 0-based speaker number
    measured: Voiceprint | None = None  # pitch and pace of the source line
    translation: str = ""
    voice: Any = None  # casting.Voice
    clip: Track | None = None  # the fitted dub, at speech.SAMPLE_RATE
    at: float = 0.0  # where the clip starts on the output timeline
    raw_duration: float = 0.0  # synthesized length before fitting
    stretch: float = 1.0  # fitted length / synthesized length
    truncated: bool = False

    @property
    def id(self) -> str:
        return str(self.index + 1)

    @property
    def duration(self) -> float:
        return self.end - self.start

    def speaker_label(self) -> str:
        return f"Speaker {self.speaker + 1}"


def find_lines(audio: Track, cues: list[Cue], *, min_silence: float) -> list[Line]:
    """Segment the speech in ``audio`` and give every segment its text."""
    segments = vad.segment_speech(audio, audio.rate, min_silence=min_silence)
    texts: list[list[str]] = [[] for _ in segments]
    for cue in cues:
        target = _segment_for(cue, segments)
        if target is not None and cue.text.strip():
            texts[target].append(" ".join(cue.text.split()))
    return [
        Line(
            i,
            round(s.start, 3),
            round(s.end, 3),
            " ".join(texts[i]) or PLACEHOLDER.format(n=i + 1),
            placeholder=not texts[i],
        )
        for i, s in enumerate(segments)
    ]


def _segment_for(cue: Cue, segments: list[vad.Segment]) -> int | None:
    best, best_overlap, best_gap = None, 0.0, CUE_REACH
    for i, s in enumerate(segments):
        overlap = min(cue.end, s.end) - max(cue.start, s.start)
        if overlap > best_overlap:
            best, best_overlap = i, overlap
        elif best_overlap == 0.0 and -overlap < best_gap:
            best, best_gap = i, -overlap
    return best


def assign_speakers(lines: list[Line], audio: Track, speaker_num: int | None) -> int:
    """Label each line with a speaker; returns the number of speakers."""
    for line in lines:
        line.measured = measure_speech(audio.seconds(line.start, line.end), audio.rate)
    measured = [i for i, line in enumerate(lines) if line.measured is not None]
    if not measured:
        for line in lines:
            line.speaker = 0
        return 1
    values = [math.log2(lines[i].measured.median_pitch_hz) for i in measured]  # type: ignore[union-attr]
    groups = cluster(values, speaker_num)
    for i, group in zip(measured, groups):
        lines[i].speaker = group
    for line in lines:
        if line.measured is None:
            nearest = min(measured, key=lambda i: abs(lines[i].start - line.start))
            line.speaker = lines[nearest].speaker
    # Number speakers by first appearance: "Speaker 1" is the one heard first.
    order: dict[int, int] = {}
    for line in lines:
        order.setdefault(line.speaker, len(order))
    for line in lines:
        line.speaker = order[line.speaker]
    return len(order)


def measure_speech(mono: np.ndarray, sample_rate: int) -> Voiceprint | None:
    """The voiceprint of some speech, or None when it has too little voice to measure."""
    try:
        return voiceprint.measure(mono, sample_rate)
    except ValueError:
        return None


def cluster(values: list[float], count: int | None) -> list[int]:
    """Group 1-D values by cutting the sorted list at wide gaps; labels in sorted order.

    >>> cluster([7.0, 7.05, 8.0, 6.95], None)
    [0, 0, 1, 0]
    >>> cluster([7.0, 7.05, 8.0, 6.95], 3)
    [1, 1, 2, 0]
    """
    order = sorted(range(len(values)), key=values.__getitem__)
    gaps = [(values[order[j + 1]] - values[order[j]], j) for j in range(len(order) - 1)]
    if count is None:
        cuts = {j for gap, j in gaps if gap > AUTO_GAP_OCTAVES}
    else:
        cuts = {j for _, j in sorted(gaps, reverse=True)[: max(0, count - 1)]}
    labels = [0] * len(values)
    group = 0
    for position, index in enumerate(order):
        labels[index] = group
        if position in cuts:
            group += 1
    return labels


def speaker_audio(lines: list[Line], speaker: int, audio: Track, limit: float = 30.0) -> np.ndarray:
    """A speaker's own speech, lines joined with short pauses, at most ``limit`` seconds."""
    sample_rate = audio.rate
    gap = np.zeros(round(0.2 * sample_rate), dtype=np.float32)
    parts: list[np.ndarray] = []
    total, wanted = 0, round(limit * sample_rate)
    for line in lines:
        if line.speaker != speaker:
            continue
        start = round(line.start * sample_rate)  # never more of a long line than is kept
        part = audio.read(
            start, min(round(line.end * sample_rate), start + wanted - total), mono=True
        )
        parts += [part, gap]
        total += len(part) + len(gap)
        if total >= limit * sample_rate:
            break
    joined = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    return joined[:wanted]
