"""Reading a video frame the way a viewer would, independently of dubkit's own media code."""

from __future__ import annotations

import subprocess
from pathlib import Path

import imageio_ffmpeg
import numpy as np

from dubkit.media import av


def frame(path: Path, at: float) -> np.ndarray:
    """One decoded frame as an RGB array, straight from ffmpeg (an independent reader)."""
    info = av.probe(path)
    raw = subprocess.run(
        [
            imageio_ffmpeg.get_ffmpeg_exe(),
            "-v",
            "error",
            "-ss",
            str(at),
            "-i",
            str(path),
            "-frames:v",
            "1",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "-",
        ],
        capture_output=True,
        check=True,
    ).stdout
    return np.frombuffer(raw, np.uint8).reshape(info.height, info.width, 3).astype(np.int16)
