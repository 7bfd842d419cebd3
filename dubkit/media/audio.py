"""Client-side audio: fetch what the service returns, decode it to numpy, draw small waveforms.

WAV, FLAC, OGG and MP3 decode through ``soundfile``; anything else (M4A/AAC) through the ffmpeg
binary that ``imageio-ffmpeg`` ships. Downloads use a plain session that never carries the
API key: audio URLs point at storage, not at the API.

>>> data = download(line.uri)                      # doctest: +SKIP
>>> samples, rate = decode(data)                   # float32, mono as (n,)
>>> svg = waveform_svg(samples)                    # a small inline picture
"""

from __future__ import annotations

import io
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import requests
import soundfile as sf

MIME_TYPES = {"wav": "audio/wav", "mp3": "audio/mpeg", "m4a": "audio/mp4", "aac": "audio/aac",
              "flac": "audio/flac", "ogg": "audio/ogg", "opus": "audio/ogg", "webm": "audio/webm"}
_session = requests.Session()     # no Authorization header, on purpose


def format_of(url_or_name: str) -> str:
    """``'https://cdn/x/line.m4a?sig=..'`` -> ``'m4a'`` (empty when there is no extension)."""
    return Path(urlparse(url_or_name).path).suffix.lstrip(".").lower()


def mime_type(fmt: str) -> str:
    return MIME_TYPES.get(fmt.lower(), "audio/" + (fmt.lower() or "mpeg"))


def download(url: str, *, timeout: float = 60) -> bytes:
    """The bytes behind an audio URL (raises ``requests.HTTPError`` on a non-2xx answer)."""
    answer = _session.get(url, timeout=(5, timeout))
    answer.raise_for_status()
    return answer.content


def decode(data: bytes, fmt: str = "") -> tuple[np.ndarray, int]:
    """Decode audio bytes to float32 samples (mono ``(n,)``, else ``(n, channels)``) and rate."""
    if fmt.lower() not in ("m4a", "aac", "mp4"):
        try:
            samples, rate = sf.read(io.BytesIO(data), dtype="float32")
            return samples, int(rate)
        except (sf.LibsndfileError, RuntimeError, TypeError):
            pass      # not a format libsndfile knows: let ffmpeg try
    return _decode_with_ffmpeg(data)


def _decode_with_ffmpeg(data: bytes) -> tuple[np.ndarray, int]:
    import imageio_ffmpeg
    with tempfile.TemporaryDirectory(prefix="dubkit-audio-") as tmp:
        source, target = Path(tmp) / "in", Path(tmp) / "out.wav"
        source.write_bytes(data)
        done = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-nostdin",
                               "-i", str(source), "-vn", "-c:a", "pcm_f32le", str(target)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise ValueError(f"cannot decode audio: {done.stderr.strip()[-300:]}")
        samples, rate = sf.read(target, dtype="float32")
    return samples, int(rate)


def waveform_svg(samples: np.ndarray, *, width: int = 160, height: int = 28,
                 colour: str = "#57606a") -> str:
    """A small SVG of the peak envelope (one bar per pixel column)."""
    mono = np.abs(samples if samples.ndim == 1 else samples.mean(axis=1))
    columns = max(1, min(width, mono.size))
    peaks = (np.array([c.max(initial=0.0) for c in np.array_split(mono, columns)])
             if mono.size else np.zeros(1))
    peaks = peaks / max(float(peaks.max()), 1e-6)
    mid = height / 2
    bars = " ".join(f"M{x:.0f} {mid - p * mid:.1f}V{mid + p * mid:.1f}"
                    for x, p in zip(np.linspace(0, width - 1, columns), peaks))
    return (f"<svg class='dubkit-wave' width='{width}' height='{height}' "
            f"viewBox='0 0 {width} {height}' xmlns='http://www.w3.org/2000/svg'>"
            f"<path d='{bars}' stroke='{colour}' stroke-width='1'/></svg>")
