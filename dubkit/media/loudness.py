"""Loudness matching (EBU R128): so that a louder take does not win a comparison by being louder.

Listeners reliably prefer the louder of two otherwise similar takes, so takes compared side by
side are brought to one programme loudness first (-23 LUFS, EBU R128). The integrated
loudness (ITU-R BS.1770: K-weighting, 400 ms blocks, absolute and relative gates) is measured
by ffmpeg's ``ebur128`` filter, the ffmpeg binary ``imageio-ffmpeg`` ships: no second
implementation of the standard to keep right. The gain is applied to the decoded samples,
held back if it would push the sample peak over ``PEAK_CEILING`` (then the take ends up a little
quieter than the target, and :class:`Matched` says so).

>>> from dubkit.media import loudness
>>> level = loudness.measure(line.audio, line.sample_rate)        # e.g. -17.2 (LUFS)
>>> matched = loudness.match(line.audio, line.sample_rate)        # to -23 LUFS
>>> matched.original, matched.gain_db, matched.loudness           # -17.2, -5.8, -23.0
>>> matched.data_uri()                                            # 'data:audio/wav;base64,...'
"""

from __future__ import annotations

import base64
import io
import re
import subprocess
from dataclasses import dataclass

import numpy as np
import soundfile as sf

TARGET = -23.0  # LUFS, EBU R128 programme loudness
PEAK_CEILING = -1.0  # dBFS: the gain never pushes a sample above this
SILENCE = -70.0  # LUFS: BS.1770's absolute gate; ffmpeg reports this for silence
_SUMMARY = re.compile(r"Integrated loudness:\s*I:\s*(-?(?:\d+(?:\.\d+)?|inf))\s*LUFS")


class LoudnessError(RuntimeError):
    """ffmpeg could not measure the samples (it said why)."""


def measure(samples: np.ndarray, rate: int) -> float:
    """Integrated loudness of ``samples`` (float, mono ``(n,)`` or ``(n, channels)``) in LUFS.

    Clips too short for one 400 ms block, and silence, measure ``SILENCE`` (-70).

    >>> measure(np.zeros(22050, "float32"), 22050)
    -70.0
    """
    import imageio_ffmpeg

    pcm = np.ascontiguousarray(np.asarray(samples, dtype="<f4"))
    channels = 1 if pcm.ndim == 1 else pcm.shape[1]
    if pcm.size == 0:
        return SILENCE
    done = subprocess.run(
        [
            imageio_ffmpeg.get_ffmpeg_exe(),
            "-hide_banner",
            "-nostats",
            "-nostdin",
            "-f",
            "f32le",
            "-ar",
            str(int(rate)),
            "-ac",
            str(channels),
            "-i",
            "pipe:0",
            "-af",
            "ebur128=framelog=quiet",
            "-f",
            "null",
            "-",
        ],
        input=pcm.tobytes(),
        capture_output=True,
    )
    found = _SUMMARY.search(done.stderr.decode("utf-8", "replace"))
    if done.returncode != 0 or found is None:
        raise LoudnessError(
            "ffmpeg could not measure the loudness: "
            + done.stderr.decode("utf-8", "replace").strip()[-300:]
        )
    value = float(found.group(1))
    return max(value, SILENCE)


def peak_dbfs(samples: np.ndarray) -> float:
    """The highest sample magnitude in dBFS (-inf for silence)."""
    peak = float(np.max(np.abs(samples))) if np.size(samples) else 0.0
    return 20 * np.log10(peak) if peak > 0 else float("-inf")


@dataclass(frozen=True)
class Matched:
    """Samples brought toward ``target``: ``original`` and ``loudness`` in LUFS, ``gain_db``.

    ``limited`` is true when the peak guard held the gain back (``loudness`` < ``target``);
    ``loudness`` is computed from the gain (a gain shifts BS.1770 loudness by exactly itself).
    """

    samples: np.ndarray
    rate: int
    original: float
    gain_db: float
    target: float
    limited: bool

    @property
    def loudness(self) -> float:
        return self.original + self.gain_db

    @property
    def silent(self) -> bool:
        return self.original <= SILENCE

    def label(self) -> str:
        """What a person reads beside the player: ``'-17.2 LUFS → -23'``."""
        if self.silent:
            return "too short or quiet to measure; played as is"
        if self.limited:
            return f"{self.original:.1f} LUFS → {self.loudness:.1f} (peak-limited)"
        return f"{self.original:.1f} LUFS → {self.target:g}"

    def wav(self) -> bytes:
        """The matched samples as a 16-bit PCM WAV file."""
        buffer = io.BytesIO()
        sf.write(buffer, self.samples, self.rate, format="WAV", subtype="PCM_16")
        return buffer.getvalue()

    def data_uri(self) -> str:
        """``data:audio/wav;base64,…``: plays in any browser, remote or a saved notebook."""
        return "data:audio/wav;base64," + base64.b64encode(self.wav()).decode("ascii")


def match(
    samples: np.ndarray,
    rate: int,
    *,
    target: float = TARGET,
    ceiling: float = PEAK_CEILING,
    original: float | None = None,
) -> Matched:
    """``samples`` with the gain that brings them to ``target`` LUFS, peaks kept ≤ ``ceiling``.

    ``original`` skips the measurement when the loudness is already known.

    >>> m = match(line.audio, line.sample_rate)
    >>> round(measure(m.samples, m.rate))          # -23
    """
    samples = np.asarray(samples, dtype=np.float32)
    level = measure(samples, rate) if original is None else original
    if level <= SILENCE:
        return Matched(samples, int(rate), level, 0.0, target, False)
    gain = target - level
    headroom = ceiling - peak_dbfs(samples)  # the most gain the peak allows
    limited = gain > headroom
    if limited:
        gain = headroom
    scaled = (samples * np.float32(10 ** (gain / 20))).astype(np.float32)
    return Matched(scaled, int(rate), level, round(gain, 2), target, limited)
