"""Audio bytes in numpy: decode what the service returns, draw small waveforms.

WAV, FLAC, OGG and MP3 decode through ``soundfile``; anything else (M4A/AAC) through the ffmpeg
binary that ``imageio-ffmpeg`` ships (:mod:`dubkit.media.av`).

>>> samples, rate = decode(data)                   # float32, mono as (n,)
>>> svg = waveform_svg(samples)                    # a small inline picture
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import soundfile as sf

from .av import MediaError, decode_audio, decode_audios


def decode(data: bytes, fmt: str = "") -> tuple[np.ndarray, int]:
    """Decode audio bytes to float32 samples (mono ``(n,)``, else ``(n, channels)``) and rate."""
    decoded = decode_many([(data, fmt)])[0]
    if isinstance(decoded, Exception):
        raise decoded
    return decoded


Decoded = tuple[np.ndarray, int] | Exception


def decode_many(clips: Sequence[tuple[bytes, str]]) -> list[Decoded]:
    """:func:`decode` of each ``(data, fmt)``, with what ffmpeg must decode (M4A/AAC, or what
    libsndfile cannot read) done in one run for all; a clip that cannot be decoded gets its
    error in its place, the others their audio."""
    decoded: dict[int, Decoded] = {}
    for i, (data, fmt) in enumerate(clips):
        if fmt.lower() not in ("m4a", "aac", "mp4"):
            try:
                samples, rate = sf.read(io.BytesIO(data), dtype="float32")
                decoded[i] = samples, int(rate)
            except (sf.LibsndfileError, RuntimeError, TypeError):
                pass  # not a format libsndfile knows: let ffmpeg try
    rest = [i for i in range(len(clips)) if i not in decoded]
    with tempfile.TemporaryDirectory(prefix="dubkit-audio-") as tmp:
        paths = [Path(tmp) / str(i) for i in rest]
        for i, path in zip(rest, paths):
            path.write_bytes(clips[i][0])
        try:
            found: list[Decoded] = list(decode_audios(paths, mono=False))
        except MediaError:  # one bad clip: the others still decode
            found = [_decode_one(path) for path in paths]
    for i, result in zip(rest, found):
        if isinstance(result, tuple) and result[0].shape[1] == 1:
            result = result[0][:, 0], result[1]
        decoded[i] = result
    return [decoded[i] for i in range(len(clips))]


def _decode_one(path: Path) -> Decoded:
    try:
        return decode_audio(path, mono=False)
    except MediaError as exc:
        return exc


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
