"""Speech segmentation from the signal alone (numpy; a long track is read a block at a time).

Energy based, but measured against a per-frequency noise floor: each STFT bin's floor is a
low percentile of its power over the whole clip, and a frame's activity is the power it has
*above* those floors. A steady hum, tone or fan therefore cancels out bin by bin even when
it is almost as loud as the speech, which a plain frame-RMS threshold cannot do.
Digital silence (zero padding, a muted stretch: frames under -80 dBFS) is left out of the
floor estimate, so a background that stops where the padding starts still cancels.
Known limit: a music bed whose loudness swings widely (several dB within a second) at
-25 dB under the speech can bridge the pauses between sentences.

>>> import numpy as np
>>> sr = 16000
>>> t = np.arange(2 * sr) / sr
>>> bursts = np.sin(2 * np.pi * 200 * t) * ((t % 1.0) < 0.5)  # 0.5 s on, 0.5 s off, twice
>>> [(round(s.start, 1), round(s.end, 1)) for s in segment_speech(bursts, sr, pad=0)]
[(0.0, 0.5), (1.0, 1.5)]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...media.track import Track

__all__ = ["Segment", "activity", "segment_speech"]

FRAME_SECONDS = 0.025
HOP_SECONDS = 0.010
_FLOOR_PERCENTILE = 10  # speech rarely fills >90% of a bin's frames, so this is the background
_DYNAMIC_RANGE_DB = 50.0  # anything this far below the loudest frames counts as silence
# Frames quieter than this (RMS, dB re full scale) are digital silence: zero padding, a muted
# stretch. They say nothing about the background and stay out of the floor estimate.
_DIGITAL_SILENCE_DBFS = -80.0
_STANDS_OUT_DB = 6.0  # speech must rise this far above the background to count at all
_BAND_HZ = (80.0, 8000.0)
_MAX_BANDS = 128  # ~60 Hz bands: narrow enough that a hum or tone fills only one or two
_BLOCK_FRAMES = 512  # frames per STFT block: ~20 MB at 44.1 kHz, whatever the length
_FLOOR_BANDS = 16  # bands whose floor is taken at once: a copy of an eighth of the band powers


@dataclass(frozen=True)
class Segment:
    """A stretch of speech, in seconds from the start of the signal."""

    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start


Reader = Callable[[int, int], np.ndarray]  # mono samples start:stop


def _mono(samples: np.ndarray | Track) -> np.ndarray | Track:
    if isinstance(samples, Track):
        return samples
    x = np.asarray(samples, dtype=np.float32)  # float32 halves memory on long tracks
    if x.ndim == 2:  # (frames, channels) or (channels, frames): average the short axis
        x = x.mean(axis=1 if x.shape[0] >= x.shape[1] else 0)
    if x.ndim != 1:
        raise ValueError(f"expected mono or 2-D multichannel audio, got shape {np.shape(samples)}")
    return _finite(x)


def _reader(samples: np.ndarray | Track) -> tuple[int, Reader]:
    """The length of ``samples`` and a reader of its mono samples (finite, float32).

    A :class:`Track` is read a block at a time, so a long clip is never held whole."""
    x = _mono(samples)
    if isinstance(x, Track):
        return x.frames, lambda a, b: _finite(x.read(a, b, mono=True))
    return x.size, lambda a, b: x[a:b]


def _finite(x: np.ndarray) -> np.ndarray:
    return x if np.isfinite(x).all() else np.nan_to_num(x)


def activity(samples: np.ndarray | Track, sample_rate: int) -> tuple[np.ndarray, float]:
    """Per-frame activity in dB above the background, and the hop in seconds.

    Frame ``i`` is centred on ``i * hop + FRAME_SECONDS / 2``.
    """
    if sample_rate <= 0 or (isinstance(samples, Track) and samples.rate != sample_rate):
        raise ValueError(f"sample_rate must be positive and the track's own, got {sample_rate}")
    size, read = _reader(samples)
    win = max(16, int(round(FRAME_SECONDS * sample_rate)))
    hop = max(1, int(round(HOP_SECONDS * sample_rate)))
    if size < win:
        return np.zeros(0), hop / sample_rate
    n_frames = 1 + (size - win) // hop
    n_fft = 1 << (win - 1).bit_length()
    freqs = np.fft.rfftfreq(n_fft, 1.0 / sample_rate)
    in_band = np.flatnonzero((freqs >= _BAND_HZ[0]) & (freqs <= _BAND_HZ[1]))
    # Neighbouring bins are pooled into at most _MAX_BANDS bands, and the STFT is taken a
    # block of frames at a time, so an hour of audio needs megabytes, not gigabytes.
    starts = in_band[:: max(1, -(-in_band.size // _MAX_BANDS))]
    window = np.hanning(win)
    power = np.empty((n_frames, starts.size), dtype=np.float32)
    audible = np.empty(n_frames, dtype=bool)
    silence_ms = 10 ** (_DIGITAL_SILENCE_DBFS / 10) * float(np.mean(window**2))
    for i in range(0, n_frames, _BLOCK_FRAMES):
        count = min(_BLOCK_FRAMES, n_frames - i)
        x = read(i * hop, (i + count - 1) * hop + win)
        frames = np.lib.stride_tricks.as_strided(
            x, shape=(count, win), strides=(x.strides[0] * hop, x.strides[0]), writeable=False
        )
        windowed = frames * window
        audible[i : i + _BLOCK_FRAMES] = np.mean(windowed**2, axis=1) >= silence_ms
        spectrum = np.fft.rfft(windowed, n=n_fft, axis=1)[:, : in_band[-1] + 1]
        power[i : i + _BLOCK_FRAMES] = np.add.reduceat(np.abs(spectrum) ** 2, starts, axis=1)

    total = power.sum(axis=1, dtype=np.float64)
    loud = np.percentile(total, 99)
    if loud <= 0.0 or not audible.any():
        return np.zeros(n_frames), hop / sample_rate
    # The floor comes from audible frames only: with a tone under the first minute and zero
    # padding after it, a floor over all frames would be zero and the tone would read as speech.
    # A few bands at a time: the percentile of all audible frames at once would copy ``power``
    # twice, and one band at a time pays numpy's per-call cost a hundred times over.
    floor = np.concatenate(
        [
            np.percentile(power[audible, b : b + _FLOOR_BANDS], _FLOOR_PERCENTILE, axis=0)
            for b in range(0, power.shape[1], _FLOOR_BANDS)
        ]
    )
    level = _above(power, floor, loud)
    if np.percentile(level[audible], 98) < _STANDS_OUT_DB:
        # Every audible frame is alike (a tone switched on and off between stretches of digital
        # silence): then the audible frames are the activity and the silence is the background.
        level = _above(power, np.zeros(power.shape[1]), loud)
    return level, hop / sample_rate


def _above(power: np.ndarray, floor: np.ndarray, loud: float) -> np.ndarray:
    """dB of each frame's power above ``floor`` (per band), relative to the floor's total."""
    # A zero floor (digital silence) is bounded so that the ratio stays meaningful.
    floor_total = max(float(floor.sum()), loud * 10 ** (-_DYNAMIC_RANGE_DB / 10))
    # Twice the floor: a stationary background's power fluctuates around its mean, and
    # those fluctuations should not read as speech. A block at a time: no copy of ``power``.
    excess = np.empty(len(power))
    for i in range(0, len(power), _BLOCK_FRAMES):
        block = power[i : i + _BLOCK_FRAMES] - 2.0 * floor
        excess[i : i + _BLOCK_FRAMES] = np.clip(block, 0.0, None).sum(axis=1, dtype=np.float64)
    return 10.0 * np.log10(1.0 + excess / floor_total)


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) index pairs of the True runs in ``mask``."""
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()))


def segment_speech(
    samples: np.ndarray | Track,
    sample_rate: int,
    *,
    min_silence: float = 0.35,
    min_speech: float = 0.2,
    pad: float = 0.05,
) -> list[Segment]:
    """Find the stretches of speech in ``samples``.

    Gaps shorter than ``min_silence`` are bridged, segments shorter than ``min_speech`` are
    dropped, and each kept segment is widened by ``pad`` on both sides (clipped to the clip).

    >>> segment_speech(np.zeros(16000), 16000)
    []
    """
    x = _mono(samples)
    level, hop_s = activity(x, sample_rate)
    if level.size == 0 or not np.any(level > 0):
        return []
    duration = (x.frames if isinstance(x, Track) else x.size) / sample_rate
    quiet = float(np.percentile(level, 10))
    peak = float(np.percentile(level, 98))
    if peak - quiet < _STANDS_OUT_DB:  # nothing stands out from the background
        return []
    # Between the background and the speech peaks, nearer the background so that soft
    # onsets and endings of words still count; never closer than 6 dB to the background.
    threshold = quiet + max(_STANDS_OUT_DB, 0.25 * (peak - quiet))
    active = level > threshold
    # A 3-frame median removes single-frame clicks and dropouts before runs are measured.
    if active.size >= 3:
        padded = np.concatenate(([active[0]], active, [active[-1]])).astype(np.int8)
        active = (padded[:-2] + padded[1:-1] + padded[2:]) >= 2

    centre = FRAME_SECONDS / 2
    spans = [
        [a * hop_s + centre - hop_s / 2, (b - 1) * hop_s + centre + hop_s / 2]
        for a, b in _runs(active)
    ]
    merged: list[list[float]] = []
    for span in spans:
        if merged and span[0] - merged[-1][1] < min_silence:
            merged[-1][1] = span[1]
        else:
            merged.append(span)
    out: list[Segment] = []
    for start, end in merged:
        if end - start < min_speech:
            continue
        start, end = max(0.0, start - pad), min(duration, end + pad)
        if out and start <= out[-1].end:  # padding made neighbours touch
            out[-1] = Segment(out[-1].start, end)
        else:
            out.append(Segment(start, end))
    return out
