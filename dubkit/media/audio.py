"""Audio bytes in numpy: decode what the service returns, draw small waveforms.

WAV, FLAC, OGG and MP3 decode through ``soundfile``; anything else (M4A/AAC) through the ffmpeg
binary that ``imageio-ffmpeg`` ships (:mod:`dubkit.media.av`).

>>> samples, rate = decode(data)                   # float32, mono as (n,)
>>> svg = waveform_svg(samples)                    # a small inline picture
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

from .av import decode_audio


def decode(data: bytes, fmt: str = "") -> tuple[np.ndarray, int]:
    """Decode audio bytes to float32 samples (mono ``(n,)``, else ``(n, channels)``) and rate."""
    if fmt.lower() not in ("m4a", "aac", "mp4"):
        try:
            samples, rate = sf.read(io.BytesIO(data), dtype="float32")
            return samples, int(rate)
        except (sf.LibsndfileError, RuntimeError, TypeError):
            pass  # not a format libsndfile knows: let ffmpeg try
    return _decode_with_ffmpeg(data)


def _decode_with_ffmpeg(data: bytes) -> tuple[np.ndarray, int]:
    with tempfile.TemporaryDirectory(prefix="dubkit-audio-") as tmp:
        source = Path(tmp) / "in"
        source.write_bytes(data)
        samples, rate = decode_audio(source, mono=False)
    return (samples[:, 0] if samples.shape[1] == 1 else samples), rate


def waveform_svg(
    samples: np.ndarray, *, width: int = 160, height: int = 28, colour: str = "#57606a"
) -> str:
    """A small SVG of the peak envelope (one bar per pixel column)."""
    mono = np.abs(samples if samples.ndim == 1 else samples.mean(axis=1))
    columns = max(1, min(width, mono.size))
    peaks = (
        np.array([c.max(initial=0.0) for c in np.array_split(mono, columns)])
        if mono.size
        else np.zeros(1)
    )
    peaks = peaks / max(float(peaks.max()), 1e-6)
    mid = height / 2
    bars = " ".join(
        f"M{x:.0f} {mid - p * mid:.1f}V{mid + p * mid:.1f}"
        for x, p in zip(np.linspace(0, width - 1, columns), peaks)
    )
    return (
        f"<svg class='dubkit-wave' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' xmlns='http://www.w3.org/2000/svg'>"
        f"<path d='{bars}' stroke='{colour}' stroke-width='1'/></svg>"
    )
