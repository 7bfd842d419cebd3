"""Measure a voice (pitch, pace) and derive espeak prosody that imitates it (numpy only).

Pitch is tracked with YIN (de Cheveigné & Kawahara, 2002). Speaking rate counts syllable
nuclei the way de Jong & Wempe (2009) do: peaks of the band-limited intensity envelope that
stand at least ``_DIP_DB`` above the dip separating them from the previous peak, and that
fall on voiced frames. It is divided by the time spent speaking, i.e. the total length of
the ``vad.segment_speech`` segments, so pauses between sentences do not slow it down.

>>> from dubkit.sandbox.engines import speech
>>> ref = speech.synthesize("Clone me if you can.", variant="f2")
>>> speech.Prosody() != derive_prosody(measure(ref, speech.SAMPLE_RATE))
True
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from . import speech, vad

__all__ = ["Voiceprint", "derive_prosody", "measure"]

_ANALYSIS_RATE = 11025  # plenty for F0 up to 500 Hz and the 300-3000 Hz envelope band
_HOP_SECONDS = 0.010
_F0_MIN, _F0_MAX = 60.0, 500.0
_YIN_THRESHOLD = 0.15
_WINDOW_FRACTION = 0.3  # short windows keep fast, gliding speech periodic within a frame
_VOICED_MAX_DIP = 0.35  # a frame whose best YIN dip is above this is treated as unvoiced
_SILENCE_DB = 35.0  # frames this far under the loud frames are not analysed
_DIP_DB = 1.5
_MIN_NUCLEUS_GAP = 0.06  # seconds; faster than any human syllable rate
_FEMALE_ABOVE_HZ = 165.0
_MIN_VOICED_FRAMES = 10


@dataclass(frozen=True)
class Voiceprint:
    """What ``measure`` hears in a voice."""

    median_pitch_hz: float  # median F0 of the voiced frames
    pitch_range_hz: float  # 90th minus 10th percentile of F0
    speaking_rate: float  # syllable nuclei per second of speech (see the module docstring)
    voiced_ratio: float  # voiced frames / frames inside speech segments
    gender: str  # "female" if the median F0 is above 165 Hz, else "male"


def _to_analysis_rate(x: np.ndarray, sample_rate: int) -> tuple[np.ndarray, int]:
    q = sample_rate // _ANALYSIS_RATE
    if q < 2:
        return x, sample_rate
    # FFT low-pass then integer decimation: exact band limiting, no scipy needed.
    n = 1 << (x.size - 1).bit_length()
    spectrum = np.fft.rfft(x, n=n)
    spectrum[int(len(spectrum) * 0.9 / q):] = 0.0
    return np.fft.irfft(spectrum, n=n)[: x.size : q], sample_rate // q


def _frames(x: np.ndarray, length: int, hop: int) -> np.ndarray:
    if x.size < length:
        x = np.pad(x, (0, length - x.size))
    count = 1 + (x.size - length) // hop
    return np.lib.stride_tricks.as_strided(x, (count, length), (x.strides[0] * hop, x.strides[0]), writeable=False)


def _yin(x: np.ndarray, sr: int, hop: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame F0 (Hz, NaN where unvoiced) and the YIN dip depth, for frames of x."""
    tau_min = int(sr / _F0_MAX)
    tau_max = int(np.ceil(sr / _F0_MIN))
    width = max(8, int(tau_max * _WINDOW_FRACTION))
    frames = _frames(x, width + tau_max + 1, hop)
    n = 1 << (frames.shape[1] - 1).bit_length()
    # d(tau) = E(head) + E(shifted head) - 2 * crosscorr(head, frame); all via cumsum/FFT.
    head = np.fft.rfft(frames[:, :width], n=n, axis=1)
    whole = np.fft.rfft(frames, n=n, axis=1)
    corr = np.fft.irfft(np.conj(head) * whole, n=n, axis=1)[:, : tau_max + 1]
    energy = np.concatenate((np.zeros((frames.shape[0], 1)), np.cumsum(frames**2, axis=1)), axis=1)
    lags = np.arange(tau_max + 1)
    shifted = energy[:, lags + width] - energy[:, lags]
    diff = np.maximum(energy[:, [width]] + shifted - 2.0 * corr, 0.0)
    diff[:, 0] = 0.0
    cum = np.cumsum(diff[:, 1:], axis=1)
    cmnd = np.ones_like(diff)
    cmnd[:, 1:] = diff[:, 1:] * lags[1:] / np.maximum(cum, 1e-12)

    search = cmnd[:, tau_min : tau_max + 1]
    below = search < _YIN_THRESHOLD
    # First dip under the threshold (YIN's rule against octave errors), else the deepest.
    tau = np.where(below.any(axis=1), below.argmax(axis=1), search.argmin(axis=1)) + tau_min
    rows = np.arange(len(tau))
    for _ in range(tau_max):  # slide down to the bottom of the chosen dip
        step = (tau < tau_max) & (cmnd[rows, np.minimum(tau + 1, tau_max)] < cmnd[rows, tau])
        if not step.any():
            break
        tau = tau + step
    dip = cmnd[rows, tau]
    # Parabolic interpolation around the dip for sub-sample period precision.
    left = cmnd[rows, np.maximum(tau - 1, 0)]
    right = cmnd[rows, np.minimum(tau + 1, tau_max)]
    denom = left - 2.0 * dip + right
    offset = np.where(np.abs(denom) > 1e-12, 0.5 * (left - right) / np.where(denom == 0, 1, denom), 0.0)
    period = tau + np.clip(offset, -1.0, 1.0)
    f0 = np.where((dip < _VOICED_MAX_DIP) & (tau > tau_min) & (tau < tau_max), sr / period, np.nan)
    return f0, dip


def _nuclei(x: np.ndarray, sr: int, hop: int, voiced: np.ndarray) -> int:
    """Count syllable nuclei: intensity peaks of the 300-3000 Hz band over voiced frames."""
    win = int(0.03 * sr)
    frames = _frames(x, win, hop)[: voiced.size]
    n = 1 << (win - 1).bit_length()
    power = np.abs(np.fft.rfft(frames * np.hanning(win), n=n, axis=1)) ** 2
    freqs = np.fft.rfftfreq(n, 1.0 / sr)
    band = power[:, (freqs >= 300) & (freqs <= 3000)].sum(axis=1)
    kernel = np.hanning(7)  # ~50 ms smoothing merges the ripples inside one vowel
    envelope = np.convolve(band, kernel / kernel.sum(), mode="same")
    db = 10.0 * np.log10(envelope + 1e-12)
    floor = np.max(db) - _SILENCE_DB
    is_peak = np.zeros(db.size, dtype=bool)
    is_peak[1:-1] = (db[1:-1] > db[:-2]) & (db[1:-1] >= db[2:])
    candidates = np.flatnonzero(is_peak & voiced[: db.size] & (db > floor))

    kept: list[int] = []
    min_gap = int(round(_MIN_NUCLEUS_GAP * sr / hop))
    for idx in candidates.tolist():
        if not kept:
            kept.append(idx)
            continue
        prev = kept[-1]
        dip = db[prev : idx + 1].min()
        if idx - prev >= min_gap and min(db[prev], db[idx]) - dip >= _DIP_DB:
            kept.append(idx)
        elif db[idx] > db[prev]:  # same syllable: keep its louder peak
            kept[-1] = idx
    return len(kept)


def measure(samples: np.ndarray, sample_rate: int) -> Voiceprint:
    """Measure pitch and pace of the speech in ``samples``.

    Raises ``ValueError`` ("... not speech ...") when there is no voiced audio.

    >>> from dubkit.sandbox.engines import speech
    >>> vp = measure(speech.synthesize("This is a test.", variant="f2"), speech.SAMPLE_RATE)
    >>> vp.gender
    'female'
    """
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim == 2:
        x = x.mean(axis=1 if x.shape[0] >= x.shape[1] else 0)
    if x.ndim != 1 or sample_rate <= 0:
        raise ValueError(f"expected mono audio and a positive sample rate, got {x.shape} at {sample_rate}")
    x = np.nan_to_num(x)
    segments = vad.segment_speech(x, sample_rate, pad=0.0)
    speech_seconds = sum(s.duration for s in segments)
    if not segments:
        raise ValueError("audio is not speech: no speech activity found (silence or steady noise)")

    y, sr = _to_analysis_rate(x, sample_rate)
    hop = max(1, int(round(_HOP_SECONDS * sr)))
    f0, _ = _yin(y, sr, hop)
    times = np.arange(f0.size) * hop / sr
    inside = np.zeros(f0.size, dtype=bool)
    for s in segments:
        inside |= (times >= s.start) & (times < s.end)
    rms = np.sqrt(np.mean(_frames(y, hop * 3, hop)[: f0.size] ** 2, axis=1))
    rms = np.pad(rms, (0, f0.size - rms.size))
    loud = rms > np.percentile(rms[inside], 95) * 10 ** (-_SILENCE_DB / 20) if inside.any() else inside
    voiced = inside & loud & ~np.isnan(f0)
    # Isolated "voiced" frames are noise catching a lucky periodicity; speech voicing lasts.
    for start, end in vad._runs(voiced):
        if end - start < 3:
            voiced[start:end] = False
    if voiced.sum() < _MIN_VOICED_FRAMES:
        raise ValueError("audio is not speech: too little voiced sound to measure a pitch")

    pitch = f0[voiced]
    p10, p50, p90 = np.percentile(pitch, [10, 50, 90])
    nuclei = _nuclei(y, sr, hop, voiced)
    return Voiceprint(
        median_pitch_hz=float(p50),
        pitch_range_hz=float(p90 - p10),
        speaking_rate=float(nuclei / speech_seconds),
        voiced_ratio=float(voiced.sum() / max(1, inside.sum())),
        gender="female" if p50 > _FEMALE_ABOVE_HZ else "male",
    )


# Calibration: how espeak's pitch / rate parameters map to what measure() hears.
_CALIBRATION_TEXT = (
    "The morning train was late again, so we walked along the river, talking about the "
    "summer holidays and the old house by the lake."
)
_PITCH_GRID = (0, 25, 50, 75, 100)
# Above ~250 wpm espeak slurs syllables together and nucleus counts stop growing, so the
# rate curve is fitted where it is reliable and extrapolated (it is close to linear).
_RATE_GRID = (80, 120, 160, 200, 250)
_RANGE_GRID = (0, 50, 100)
_calibrations: dict[tuple[str, str | None], dict[str, np.ndarray]] = {}
_calibration_lock = threading.Lock()


def _calibrate(voice: str, variant: str | None) -> dict[str, np.ndarray]:
    key = (voice, variant)
    with _calibration_lock:
        if key in _calibrations:
            return _calibrations[key]

        def hear(prosody: speech.Prosody) -> Voiceprint:
            audio = speech.synthesize(_CALIBRATION_TEXT, voice, variant=variant, prosody=prosody)
            return measure(audio, speech.SAMPLE_RATE)

        pitch_hz = [hear(speech.Prosody(pitch=p)).median_pitch_hz for p in _PITCH_GRID]
        rates = [hear(speech.Prosody(rate_wpm=r)).speaking_rate for r in _RATE_GRID]
        spreads = []
        for r in _RANGE_GRID:
            vp = hear(speech.Prosody(pitch_range=r))
            spreads.append(vp.pitch_range_hz / vp.median_pitch_hz)
        slope, intercept = np.polyfit(np.asarray(_RATE_GRID, dtype=float), rates, 1)
        # np.interp needs increasing x; espeak's pitch and range mappings are monotonic up
        # to measurement noise.
        table = {
            "pitch_hz": np.maximum.accumulate(np.array(pitch_hz)),
            "rate_fit": np.array([max(slope, 1e-4), intercept]),
            "spread": np.maximum.accumulate(np.array(spreads)),
        }
        _calibrations[key] = table
        return table


def _invert(target: float, measured: np.ndarray, grid: tuple[int, ...]) -> int:
    return int(round(float(np.interp(target, measured, np.asarray(grid, dtype=float)))))


def derive_prosody(target: Voiceprint, voice: str = "en-us", variant: str | None = None) -> speech.Prosody:
    """Prosody that makes ``voice`` (+``variant``) sound like ``target`` in pitch and pace.

    Calibrates once per (voice, variant) by synthesising a fixed sentence over a grid of
    espeak pitch, rate and range settings and measuring each with ``measure``; the target
    is then looked up in those curves (a straight-line fit for rate). Targets beyond what
    the voice can reach are clamped to its limits (pitch 0..100, 80..450 wpm).

    >>> slow_low = Voiceprint(90.0, 30.0, 2.5, 0.6, "male")
    >>> p = derive_prosody(slow_low)
    >>> p.rate_wpm < 175 and p.pitch < 50
    True
    """
    table = _calibrate(voice, variant)
    slope, intercept = table["rate_fit"]
    spread = target.pitch_range_hz / max(target.median_pitch_hz, 1e-6)
    return speech.Prosody(
        rate_wpm=int(np.clip(round((target.speaking_rate - intercept) / slope), 80, 450)),
        pitch=_invert(target.median_pitch_hz, table["pitch_hz"], _PITCH_GRID),
        pitch_range=_invert(spread, table["spread"], _RANGE_GRID),
    )
