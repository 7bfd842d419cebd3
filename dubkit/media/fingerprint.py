"""A voice's short fingerprint, to notice when a role's voice starts to sound different.

What tells two voices apart, even of one locale and gender, is the shape of the spectrum
(the formants a voice's vocal tract gives it), where its pitch sits and its pace. The
fingerprint is all three, taken from one fixed line spoken by the voice: the average log
energy of 24 mel-spaced bands from 80 Hz to 7.6 kHz over the frames that carry speech, the
median pitch of the voiced ones, and how long the speech lasts. It is light (numpy, a few
milliseconds a second of audio) and stored as a short list of numbers in a cast file.

Two fingerprints of the same line compare as a similarity from 0 to 1: the cosine of their
mean-removed band profiles (how alike the spectral shapes are, whatever the loudness), lowered
by their pitch difference (a semitone costs 0.02) and their difference in pace (10 % costs
0.05). The same voice saying the line again is 1.0 or very near it (0.996 through another
codec); :data:`SAME_ABOVE` is where "the same" ends.

>>> print_ = fingerprint(line.audio, line.sample_rate)
>>> similarity(print_, fingerprint(again.audio, again.sample_rate))      # e.g. 0.998
"""

from __future__ import annotations

import numpy as np

BANDS = 24
SAME_ABOVE = 0.98  # similarity at or above this: the same voice, as far as one line can say
_LOW_HZ, _HIGH_HZ = 80.0, 7600.0
_FRAME, _HOP = 0.032, 0.016  # seconds
_SEMITONE_COST = 0.02
_PACE_COST = 0.5  # per unit of |log(duration ratio)|: 10 % slower costs 0.048
SIZE = BANDS + 2  # the bands, the pitch, the seconds of speech


def fingerprint(samples: np.ndarray, sample_rate: int) -> list[float]:
    """``BANDS`` band levels (dB, mean removed), the median pitch (Hz) and the seconds of
    speech, rounded to keep a cast file short and its diffs readable. Raises ValueError on
    audio with no speech."""
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim == 2:
        x = x.mean(axis=1)
    size, hop = int(_FRAME * sample_rate), int(_HOP * sample_rate)
    if x.ndim != 1 or len(x) < size * 4:
        raise ValueError("too little audio to fingerprint a voice (a line of a second or more)")
    starts = np.arange(0, len(x) - size, hop)
    frames = np.stack([x[s : s + size] for s in starts]) * np.hanning(size)
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    energy = power.sum(axis=1)
    speech = energy > energy.max() * 10 ** (-30 / 10)  # frames within 30 dB of the loudest
    if speech.sum() < 4:
        raise ValueError("the audio holds no speech to fingerprint")
    bands = _mel_bands(size, sample_rate) @ power[speech].T
    levels = 10 * np.log10(bands.mean(axis=1) + 1e-12)
    pitch = _median_pitch(frames[speech], sample_rate)
    seconds = float(speech.sum()) * _HOP
    return [round(float(v), 2) for v in levels - levels.mean()] + [
        round(pitch, 1),
        round(seconds, 2),
    ]


def similarity(a: list[float], b: list[float]) -> float:
    """0-1: how alike two fingerprints are (1: the same)."""
    if len(a) != SIZE or len(b) != SIZE:
        raise ValueError(f"a fingerprint has {SIZE} numbers, got {len(a)} and {len(b)}")
    shape_a, shape_b = np.array(a[:BANDS]), np.array(b[:BANDS])
    shape_a, shape_b = shape_a - shape_a.mean(), shape_b - shape_b.mean()
    norm = float(np.linalg.norm(shape_a) * np.linalg.norm(shape_b))
    cosine = float(shape_a @ shape_b) / norm if norm else 0.0
    semitones = abs(12 * np.log2(max(a[BANDS], 1.0) / max(b[BANDS], 1.0)))
    pace = abs(float(np.log(max(a[BANDS + 1], 0.01) / max(b[BANDS + 1], 0.01))))
    score = cosine - _SEMITONE_COST * semitones - _PACE_COST * pace
    return round(max(0.0, min(1.0, float(score))), 3)


def _mel_bands(size: int, rate: int) -> np.ndarray:
    """Triangular mel filters over the rfft bins of ``size`` samples."""

    def mel(hz: np.ndarray) -> np.ndarray:
        return 2595 * np.log10(1 + hz / 700)

    edges_mel = np.linspace(
        mel(np.array(_LOW_HZ)), mel(np.array(min(_HIGH_HZ, rate / 2))), BANDS + 2
    )
    edges = 700 * (10 ** (edges_mel / 2595) - 1)
    freqs = np.fft.rfftfreq(size, 1 / rate)
    filters = np.zeros((BANDS, len(freqs)))
    for i in range(BANDS):
        low, mid, high = edges[i], edges[i + 1], edges[i + 2]
        rising = (freqs - low) / (mid - low)
        falling = (high - freqs) / (high - mid)
        filters[i] = np.clip(np.minimum(rising, falling), 0, None)
    return filters


def _median_pitch(frames: np.ndarray, rate: int) -> float:
    """Median F0 (Hz) of the frames, by autocorrelation peak in 60-400 Hz; 0 if none voiced."""
    size = frames.shape[1]
    lo, hi = int(rate / 400), min(int(rate / 60), size - 1)
    ac = np.fft.irfft(np.abs(np.fft.rfft(frames, n=2 * size, axis=1)) ** 2, axis=1)[:, :size]
    lags = lo + np.argmax(ac[:, lo:hi], axis=1)
    peak = ac[np.arange(len(ac)), lags] / np.maximum(ac[:, 0], 1e-12)
    voiced = peak > 0.3  # periodic enough to be voiced
    return float(np.median(rate / lags[voiced])) if voiced.any() else 0.0
