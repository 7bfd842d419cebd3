"""Measure a voice (pitch, pace) and derive espeak prosody that imitates it (numpy only).

Pitch is tracked with YIN (de Cheveigné & Kawahara, 2002). Speaking rate counts syllable
nuclei the way de Jong & Wempe (2009) do: peaks of the band-limited intensity envelope that
stand at least ``_DIP_DB`` above the dip separating them from the previous peak, and that
fall on voiced frames. It is divided by the time spent speaking, i.e. the total length of
the ``vad.segment_speech`` segments, so pauses between sentences do not slow it down.

>>> from dubkit.media import speech
>>> ref = speech.synthesize("Clone me if you can.", variant="f2")
>>> speech.Prosody() != derive_prosody(measure(ref, speech.SAMPLE_RATE))
True
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from ...media import speech
from . import vad

__all__ = ["Voiceprint", "derive_prosody", "measure"]

_ANALYSIS_RATE = 11025  # plenty for F0 up to 500 Hz and the 300-3000 Hz envelope band
_HOP_SECONDS = 0.010
_F0_MIN, _F0_MAX = 50.0, 500.0
_YIN_THRESHOLD = 0.15
# YIN integration window. Short enough that fast, gliding speech stays periodic within it,
# long enough that one ringing formant at low pitch is not mistaken for a period.
_YIN_WINDOW_SECONDS = 0.010
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


def _blocks(count: int, size: int = 1024) -> list[slice]:
    """Slices covering range(count); frame-wise work runs per block to bound memory."""
    return [slice(i, min(i + size, count)) for i in range(0, count, size)]


def _frames(x: np.ndarray, length: int, hop: int) -> np.ndarray:
    if x.size < length:
        x = np.pad(x, (0, length - x.size))
    count = 1 + (x.size - length) // hop
    return np.lib.stride_tricks.as_strided(
        x, (count, length), (x.strides[0] * hop, x.strides[0]), writeable=False
    )


def _to_analysis_rate(x: np.ndarray, sample_rate: int) -> tuple[np.ndarray, int]:
    """Low-pass (windowed-sinc FIR) and decimate by an integer factor towards 11 kHz."""
    q = sample_rate // _ANALYSIS_RATE
    if q < 2:
        return x, sample_rate
    half = 8 * q
    n = np.arange(-half, half + 1)
    cutoff = 0.45 / q  # cycles per input sample: just under the new Nyquist frequency
    taps = 2 * cutoff * np.sinc(2 * cutoff * n) * np.hamming(n.size)
    windows = _frames(np.pad(x, (half, half)), taps.size, q)[: -(-x.size // q)]
    out = np.empty(windows.shape[0])
    for block in _blocks(windows.shape[0], 16384):
        out[block] = windows[block] @ taps[::-1]
    return out, sample_rate // q


def _yin_block(frames: np.ndarray, sr: int, width: int, tau_min: int, tau_max: int) -> np.ndarray:
    """F0 in Hz (NaN where unvoiced) for each row of ``frames`` (YIN, vectorised)."""
    n = 1 << (frames.shape[1] - 1).bit_length()
    # d(tau) = E(head) + E(shifted head) - 2 * crosscorr(head, frame); all via cumsum/FFT.
    head = np.fft.rfft(frames[:, :width], n=n, axis=1)
    whole = np.fft.rfft(frames, n=n, axis=1)
    corr = np.fft.irfft(np.conj(head) * whole, n=n, axis=1)[:, : tau_max + 1]
    energy = np.concatenate((np.zeros((frames.shape[0], 1)), np.cumsum(frames**2, axis=1)), axis=1)
    lags = np.arange(tau_max + 1)
    shifted = energy[:, lags + width] - energy[:, lags]
    diff = np.maximum(energy[:, [width]] + shifted - 2.0 * corr, 0.0)
    cmnd = np.ones_like(diff)
    cmnd[:, 1:] = diff[:, 1:] * lags[1:] / np.maximum(np.cumsum(diff[:, 1:], axis=1), 1e-12)

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
    safe = np.where(np.abs(denom) > 1e-12, denom, 1.0)
    offset = np.where(np.abs(denom) > 1e-12, 0.5 * (left - right) / safe, 0.0)
    period = tau + np.clip(offset, -1.0, 1.0)
    voiced = (dip < _VOICED_MAX_DIP) & (tau > tau_min) & (tau < tau_max)
    return np.where(voiced, sr / period, np.nan)


def _yin(x: np.ndarray, sr: int, hop: int) -> np.ndarray:
    """Per-frame F0 in Hz, NaN where unvoiced; frame i starts at sample i * hop."""
    tau_min = int(sr / _F0_MAX)
    tau_max = int(np.ceil(sr / _F0_MIN))
    width = max(8, int(_YIN_WINDOW_SECONDS * sr))
    frames = _frames(x, width + tau_max + 1, hop)
    return np.concatenate(
        [_yin_block(frames[b], sr, width, tau_min, tau_max) for b in _blocks(len(frames))]
    )


def _nuclei(x: np.ndarray, sr: int, hop: int, voiced: np.ndarray) -> int:
    """Count syllable nuclei: intensity peaks of the 300-3000 Hz band over voiced frames."""
    win = int(0.03 * sr)
    frames = _frames(x, win, hop)[: voiced.size]
    n = 1 << (win - 1).bit_length()
    freqs = np.fft.rfftfreq(n, 1.0 / sr)
    vowel_band = (freqs >= 300) & (freqs <= 3000)  # where vowels are loud and fricatives are not
    window = np.hanning(win)
    band = np.concatenate(
        [
            (np.abs(np.fft.rfft(frames[b] * window, n=n, axis=1)[:, vowel_band]) ** 2).sum(axis=1)
            for b in _blocks(len(frames))
        ]
    )
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

    >>> from dubkit.media import speech
    >>> vp = measure(speech.synthesize("This is a test.", variant="f2"), speech.SAMPLE_RATE)
    >>> vp.gender
    'female'
    """
    x = np.asarray(samples, dtype=np.float32)  # float32 keeps long recordings affordable
    if x.ndim == 2:
        x = x.mean(axis=1 if x.shape[0] >= x.shape[1] else 0)
    if x.ndim != 1 or sample_rate <= 0:
        raise ValueError(
            f"expected mono audio and a positive sample rate, got {x.shape} at {sample_rate}"
        )
    if not np.isfinite(x).all():
        x = np.nan_to_num(x)
    segments = vad.segment_speech(x, sample_rate, pad=0.0)
    speech_seconds = sum(s.duration for s in segments)
    if not segments:
        raise ValueError("audio is not speech: no speech activity found (silence or steady noise)")

    y, sr = _to_analysis_rate(x, sample_rate)
    hop = max(1, int(round(_HOP_SECONDS * sr)))
    f0 = _yin(y, sr, hop)
    times = np.arange(f0.size) * hop / sr
    inside = np.zeros(f0.size, dtype=bool)
    for seg in segments:
        inside |= (times >= seg.start) & (times < seg.end)
    if not inside.any():
        raise ValueError("audio is not speech: no speech activity found (silence or steady noise)")
    energy_frames = _frames(np.pad(y, (0, 3 * hop)), 3 * hop, hop)[: f0.size]
    rms = np.concatenate(
        [np.sqrt(np.mean(energy_frames[b] ** 2, axis=1)) for b in _blocks(f0.size)]
    )
    loud = rms > np.percentile(rms[inside], 95) * 10 ** (-_SILENCE_DB / 20)
    voiced = inside & loud & ~np.isnan(f0)
    # Isolated "voiced" frames are noise catching a lucky periodicity; speech voicing lasts.
    for start, end in vad._runs(voiced):
        if end - start < 3:
            voiced[start:end] = False
    if voiced.sum() < _MIN_VOICED_FRAMES:
        raise ValueError("audio is not speech: too little voiced sound to measure a pitch")

    # Frames more than an octave from the utterance median are tracking errors (a formant
    # or a subharmonic), not intonation; drop them from the pitch statistics.
    centre = np.median(f0[voiced])
    octave_ok = np.abs(np.log2(np.where(voiced, f0, centre) / centre)) <= 1.0
    pitch = f0[voiced & octave_ok]
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
_RANGE_GRID = (0, 100)  # measured median and spread are both close to linear in espeak's range
# Above ~250 wpm espeak slurs syllables together and nucleus counts stop growing, so the
# rate line is fitted where counts are reliable and extrapolated (it is close to linear).
_RATE_GRID = (80, 120, 160, 200, 250)
_calibrations: dict[tuple[str, str | None], dict[str, np.ndarray]] = {}
_calibration_lock = threading.Lock()
# Measured tables for the voices clones are made from, shipped so that a process's first clone
# or dub does not spend a second of CPU measuring espeak (issue 15), and so that their
# prosodies no longer depend on what the process measured before (espeak's variants breathe at
# random). Used only while its fingerprint matches; after an espeak update, rewrite it with
# ``DUBKIT_UPDATE_CALIBRATION=1 pytest tests/test_voice_calibration.py`` (about 2.5 minutes).
_TABLE = Path(__file__).parent.parent / "data" / "voice_calibration.json"


def _calibrate(voice: str, variant: str | None) -> dict[str, np.ndarray]:
    """The calibration of (voice, variant): kept in memory, shipped, or measured once."""
    key = (voice, variant)
    with _calibration_lock:
        if key not in _calibrations:
            shipped = _shipped().get(f"{voice}+{variant}")
            _calibrations[key] = (
                {name: np.asarray(value) for name, value in shipped.items()}
                if shipped is not None
                else _measure_calibration(voice, variant)
            )
        return _calibrations[key]


def _measure_calibration(voice: str, variant: str | None) -> dict[str, np.ndarray]:
    """Measure espeak over a grid of its own settings."""

    def hear(prosody: speech.Prosody) -> Voiceprint:
        audio = speech.synthesize(_CALIBRATION_TEXT, voice, variant=variant, prosody=prosody)
        return measure(audio, speech.SAMPLE_RATE)

    pitches, median, spread = [], [], []
    for p in _PITCH_GRID:
        try:
            heard = [hear(speech.Prosody(pitch=p, pitch_range=r)) for r in _RANGE_GRID]
        except ValueError:  # whispered, or pitched under the tracker's 50 Hz floor
            continue
        pitches.append(p)
        median.append([vp.median_pitch_hz for vp in heard])
        spread.append([vp.pitch_range_hz for vp in heard])
    try:
        if len(pitches) < 2:
            raise ValueError("no measurable pitch")
        rates = [hear(speech.Prosody(rate_wpm=r)).speaking_rate for r in _RATE_GRID]
    except ValueError as exc:
        name = f"{voice}+{variant}" if variant else voice
        raise speech.SpeechError(
            f"cannot clone with voice {name!r}: its pitch cannot be measured"
        ) from exc
    slope, intercept = np.polyfit(np.asarray(_RATE_GRID, dtype=float), rates, 1)
    # np.interp needs increasing x; the pitch mapping is monotonic up to measurement noise.
    return {
        "pitches": np.asarray(pitches, dtype=float),
        "median": np.maximum.accumulate(np.asarray(median), axis=0),
        "spread": np.asarray(spread),
        "rate_fit": np.array([max(slope, 1e-4), intercept]),
    }


def _fingerprint() -> str:
    """What a calibration depends on: espeak (its wheel's version) and how it is measured."""
    grid = [version("espeakng-loader"), _CALIBRATION_TEXT, _PITCH_GRID, _RANGE_GRID, _RATE_GRID]
    return hashlib.sha256(json.dumps(grid).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def _shipped() -> dict[str, dict[str, list]]:
    try:
        table = json.loads(_TABLE.read_text(encoding="utf-8"))
        current = _fingerprint()
    except (OSError, ValueError, PackageNotFoundError):  # no table, or espeak of unknown version
        return {}
    return table["voices"] if table.get("fingerprint") == current else {}


def write_calibration_table(pairs: list[tuple[str, str]]) -> None:
    """Measure each (voice, variant) afresh and write the shipped table."""
    voices = {
        f"{voice}+{variant}": {
            name: value.tolist() for name, value in _measure_calibration(voice, variant).items()
        }
        for voice, variant in sorted(set(pairs))
    }
    text = json.dumps({"fingerprint": _fingerprint(), "voices": voices}, separators=(",", ":"))
    _TABLE.write_text(text + "\n", encoding="utf-8")
    _shipped.cache_clear()


def _solve_pitch(
    table: dict[str, np.ndarray], median_hz: float, range_hz: float
) -> tuple[float, float]:
    """Find espeak (pitch, range) whose measured median and spread match the target."""
    pitches = table["pitches"]
    r_lo, r_hi = _RANGE_GRID
    rng = 50.0
    pitch = 50.0
    for _ in range(5):  # alternate the two 1-D inversions; converges in a few rounds
        w = (rng - r_lo) / (r_hi - r_lo)
        curve = (1 - w) * table["median"][:, 0] + w * table["median"][:, 1]
        pitch = float(np.interp(median_hz, curve, pitches))
        lo = float(np.interp(pitch, pitches, table["spread"][:, 0]))
        hi = float(np.interp(pitch, pitches, table["spread"][:, 1]))
        rng = float(np.clip(r_lo + (range_hz - lo) / max(hi - lo, 1e-6) * (r_hi - r_lo), 0, 100))
    return pitch, rng


def derive_prosody(
    target: Voiceprint, voice: str = "en-us", variant: str | None = None
) -> speech.Prosody:
    """Prosody that makes ``voice`` (+``variant``) sound like ``target`` in pitch and pace.

    Calibrates once per (voice, variant) by synthesising a fixed sentence over a grid of
    espeak pitch x range settings and rates, measuring each with ``measure``; the target is
    then looked up in those curves (a straight line for rate). Targets beyond what the
    voice can reach are clamped to its limits (pitch and range 0..100, 80..450 wpm).
    Raises ``SpeechError`` for voices whose pitch cannot be measured (e.g. "whisper").

    >>> slow_low = Voiceprint(90.0, 30.0, 2.5, 0.6, "male")
    >>> p = derive_prosody(slow_low)
    >>> p.rate_wpm < 175 and p.pitch < 50
    True
    """
    table = _calibrate(voice, variant)
    slope, intercept = table["rate_fit"]
    pitch, rng = _solve_pitch(table, target.median_pitch_hz, target.pitch_range_hz)
    return speech.Prosody(
        rate_wpm=int(np.clip(round((target.speaking_rate - intercept) / slope), 80, 450)),
        pitch=int(round(pitch)),
        pitch_range=int(round(rng)),
    )
