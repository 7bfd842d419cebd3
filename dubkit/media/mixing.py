"""Audio on a timeline, in numpy: trim, duck the original speech, place dubbed clips, mix.

Arrays are float32 in [-1, 1], shape ``(n,)`` for mono or ``(n, channels)``. Nothing here starts a
process; decoding, encoding and time stretching live in :mod:`dubkit.media.av`.

>>> import numpy as np
>>> sr = 16000
>>> background = np.full(3 * sr, 0.1, np.float32)
>>> ducked = duck(background, sr, [(1.0, 2.0)], gain_db=-20)
>>> round(float(ducked[int(1.5 * sr)]), 3)
0.01
>>> dub = place([(1.0, np.full(sr, 0.5, np.float32))], sr, total=3.0)
>>> mix(ducked, dub).shape
(48000,)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

__all__ = ["trim_silence", "duck", "envelope", "place", "mix", "mixed_windows", "FADE", "CEILING"]

FADE = 0.05  # seconds: short enough to keep the ducked span tight, long enough not to click
CEILING = 10 ** (-1 / 20)  # -1 dBFS leaves room for the overshoot of lossy encoders


def trim_silence(samples: np.ndarray, sample_rate: int, threshold_db: float = -45) -> np.ndarray:
    """Cut leading and trailing silence (10 ms frames quieter than ``threshold_db`` dBFS).

    A 20 ms margin is kept on each side so soft onsets and releases are not clipped. All-silent
    input gives an empty array.

    >>> trim_silence(np.zeros(8000, np.float32), 16000).size
    0
    """
    data = np.asarray(samples)
    frame = max(1, sample_rate // 100)
    count = -(-len(data) // frame)
    padded = np.zeros((count * frame, *data.shape[1:]), dtype=np.float64)
    padded[: len(data)] = data
    power = np.mean(padded.reshape(count, -1) ** 2, axis=1)
    loud = np.flatnonzero(power > 10 ** (threshold_db / 10))
    if loud.size == 0:
        return data[:0]
    margin = sample_rate // 50
    start = max(0, int(loud[0]) * frame - margin)
    end = min(len(data), (int(loud[-1]) + 1) * frame + margin)
    return data[start:end]


def duck(
    original: np.ndarray,
    sr: int,
    segments: list[tuple[float, float]],
    gain_db: float = -18,
    remove: bool = False,
) -> np.ndarray:
    """Lower (or with ``remove=True`` silence) the original under each ``(start, end)`` span.

    The gain is fully applied inside each span; the fades sit just outside it, so the original
    speech never leaks into the start of a dubbed line. The rest (music, ambience) is untouched.

    >>> float(duck(np.ones(16000, np.float32), 16000, [(0.25, 0.5)], remove=True)[6000])
    0.0
    """
    data = np.asarray(original, dtype=np.float32)
    gain = envelope(len(data), sr, segments, gain_db, remove)
    return data * (gain if data.ndim == 1 else gain[:, None])


def envelope(
    length: int,
    sr: int,
    segments: list[tuple[float, float]],
    gain_db: float = -18,
    remove: bool = False,
    *,
    start: int = 0,
    stop: int | None = None,
) -> np.ndarray:
    """:func:`duck`'s gain for samples ``start:stop`` of a track ``length`` samples long: the
    same values, a window at a time (so a long track is ducked without a whole-length copy)."""
    stop = length if stop is None else stop
    floor = 0.0 if remove else 10 ** (gain_db / 20)
    gain = np.ones(stop - start, dtype=np.float32)
    fade = max(1, round(FADE * sr))
    ramp = np.linspace(floor, 1.0, fade + 1, dtype=np.float32)[1:]

    def lower(at: int, values: np.ndarray) -> None:  # values cover samples at:at+len(values)
        a, b = max(at, start), min(at + len(values), stop)
        if b > a:
            # Envelopes of overlapping spans combine by taking the lower gain.
            np.minimum(
                gain[a - start : b - start],
                values[a - at : b - at],
                out=gain[a - start : b - start],
            )

    for first, last in segments:
        a, b = max(0, round(first * sr)), min(length, round(last * sr))
        if b <= a or b + fade < start or a - fade > stop:
            continue
        lower(a, np.full(b - a, floor, dtype=np.float32))
        lower(max(0, a - fade), ramp[::-1][fade - (a - max(0, a - fade)) :])
        lower(b, ramp[: min(fade, length - b)])
    return gain


def place(
    clips: list[tuple[float, np.ndarray]],
    sr: int,
    total: float,
    *,
    start: int = 0,
    stop: int | None = None,
) -> np.ndarray:
    """Lay clips on a silent track of ``total`` seconds, each starting at its time in seconds;
    ``start``/``stop`` (samples) give only that window of the track.

    Overlapping clips add up; whatever falls outside ``[0, total)`` is cut off.

    >>> place([(0.5, np.ones(4, np.float32))], 4, total=2.0).tolist()
    [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    """
    length = round(total * sr)
    stop = length if stop is None else stop
    shape = np.asarray(clips[0][1]).shape[1:] if clips else ()
    track = np.zeros((stop - start, *shape), dtype=np.float32)
    for first, clip in clips:
        at = round(first * sr)
        clip = np.asarray(clip, dtype=np.float32)[max(0, -at) :]
        at = max(0, at)
        piece = clip[: max(0, length - at)]
        a, b = max(at, start), min(at + len(piece), stop)
        if b > a:
            track[a - start : b - start] += piece[a - at : b - at]
    return track


def mix(*tracks: np.ndarray) -> np.ndarray:
    """Sum tracks (the shorter ones padded with silence) and keep peaks under ``CEILING``.

    The limiter only turns down the short blocks (441 samples, 10 ms at 44.1 kHz) around a peak,
    gliding the gain between blocks, so one loud spot does not make the whole mix quieter.

    >>> float(np.abs(mix(np.full(100, 0.8, np.float32), np.full(100, 0.8, np.float32))).max()) <= CEILING
    True
    """
    if not tracks:
        raise ValueError("mix needs at least one track")
    arrays = [np.asarray(t, dtype=np.float32) for t in tracks]
    total = np.zeros((max(len(a) for a in arrays), *arrays[0].shape[1:]), dtype=np.float32)
    for a in arrays:
        total[: len(a)] += a
    return _limit(total)


def mixed_windows(
    length: int, window: Callable[[int, int], list[np.ndarray]], *, blocks: int = 2000
) -> Iterator[np.ndarray]:
    """:func:`mix` of a ``length``-sample timeline, yielded a window at a time: ``window(a, b)``
    returns the tracks' samples ``a:b``. The limiter looks two of its blocks beyond each
    window, so the windows join into exactly what one whole :func:`mix` makes, while no
    whole-length array is ever held."""
    step, margin = blocks * _BLOCK, 2 * _BLOCK
    for lo in range(0, length, step):
        a, b = max(0, lo - margin), min(length, lo + step + margin)
        limited = mix(*window(a, b))
        yield limited[lo - a : lo - a + min(step, length - lo)]


_BLOCK = 441


def _limit(x: np.ndarray, block: int = _BLOCK) -> np.ndarray:
    peak = np.abs(x) if x.ndim == 1 else np.abs(x).max(axis=1)
    if len(x) == 0 or peak.max() <= CEILING:
        return x
    count = -(-len(x) // block)
    padded = np.zeros(count * block, dtype=np.float32)
    padded[: len(peak)] = peak
    need = np.minimum(1.0, CEILING / np.maximum(padded.reshape(count, block).max(axis=1), 1e-9))
    # Each block takes the lowest gain of itself and its neighbours; interpolating between block
    # centres then never rises above what any sample needs, so nothing overshoots the ceiling.
    need = np.minimum(need, np.minimum(np.r_[need[1:], 1.0], np.r_[1.0, need[:-1]]))
    centres = np.arange(count) * block + block / 2
    gain = np.interp(np.arange(len(x)), centres, need).astype(np.float32)
    out = x * (gain if x.ndim == 1 else gain[:, None])
    return np.clip(out, -CEILING, CEILING)


def resample(samples: np.ndarray, source_rate: int, target_rate: int) -> np.ndarray:
    """Band-limited resampling of mono audio by zero-padding its spectrum (numpy only).

    >>> resample(np.ones(100, np.float32), 100, 200).shape
    (200,)
    """
    if source_rate == target_rate or len(samples) == 0:
        return np.asarray(samples, dtype=np.float32)
    # Silence around the clip keeps the FFT's wrap-around from smearing its two ends together.
    pad = 64
    padded = np.concatenate([np.zeros(pad, np.float32), samples, np.zeros(pad, np.float32)])
    size = round(len(padded) * target_rate / source_rate)
    spectrum = np.fft.rfft(padded)
    bins = size // 2 + 1
    resized = np.zeros(bins, dtype=complex)
    keep = min(bins, len(spectrum))
    resized[:keep] = spectrum[:keep]
    out = np.fft.irfft(resized, n=size) * (size / len(padded))
    edge = round(pad * target_rate / source_rate)
    return out[edge : edge + round(len(samples) * target_rate / source_rate)].astype(np.float32)


def lay_lines(
    clips: Sequence[tuple[float, np.ndarray, int]], rate: int, total: float, channels: int
) -> np.ndarray:
    """The dub track: each mono clip ``(start s, samples, their rate)`` resampled to ``rate``
    and laid on ``total`` seconds of silence, repeated over ``channels``.

    The sandbox's pipeline builds its dub with the same steps (a window at a time), and a
    client-side re-dub with this, so an untouched line sits in the re-render exactly where the
    service put it.
    """
    return on_channels(place(resampled(clips, rate), rate, total), channels)


def resampled(
    clips: Sequence[tuple[float, np.ndarray, int]], rate: int
) -> list[tuple[float, np.ndarray]]:
    """``(start, samples at rate)`` of each non-empty clip, ready for :func:`place`."""
    placed = [(start, resample(samples, clip_rate, rate)) for start, samples, clip_rate in clips]
    return [clip for clip in placed if len(clip[1])]


def on_channels(track: np.ndarray, channels: int) -> np.ndarray:
    """A mono track repeated over ``channels`` (itself when 1)."""
    return track if channels == 1 else np.repeat(track[:, None], channels, axis=1)
