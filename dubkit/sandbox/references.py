"""Reference recordings the sandbox is pointed at (refAudio, timbreRefAudio, emoRefAudio).

Files this sandbox serves are read from disk; any other http(s) URL is downloaded (at most
50 MB) unless remote fetching is off (admin ``POST /_sandbox/fetch {"remote": false}``, used
when the sandbox must stay off the network). Either way the audio is decoded with ffmpeg, so
any container ffmpeg reads will do.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import requests

from .backend import Backend
from .engines import media

MAX_REFERENCE_BYTES = 50 * 1024 * 1024


class UnusableAudio(Exception):
    """A reference that cannot be fetched or decoded; the message names the field."""


def fetch_audio(backend: Backend, url: str, field: str) -> tuple[np.ndarray, int]:
    """Decode a reference recording; sandbox files are read from disk, others downloaded."""
    served = backend.base_url + "/files/"
    try:
        if url.startswith(served):
            path = backend.file_path(url[len(served):].split("?")[0])
            if not path.is_file():
                raise UnusableAudio(f"{field}: no such file: {url}")
            return media.decode_audio(path)
        if not backend.setting("fetch", {}).get("remote", True):
            raise UnusableAudio(f"{field}: this sandbox fetches no remote URLs (remote "
                                f"fetching is off); use a file it serves")
        with requests.get(url, timeout=(5, 30), stream=True) as answer:
            if answer.status_code != 200:
                raise UnusableAudio(f"{field}: could not fetch {url}: HTTP {answer.status_code}")
            with tempfile.NamedTemporaryFile(suffix=Path(url.split("?")[0]).suffix) as tmp:
                size = 0
                for chunk in answer.iter_content(1 << 16):
                    size += len(chunk)
                    if size > MAX_REFERENCE_BYTES:
                        raise UnusableAudio(f"{field}: larger than {MAX_REFERENCE_BYTES} bytes")
                    tmp.write(chunk)
                tmp.flush()
                return media.decode_audio(tmp.name)
    except requests.RequestException as exc:
        raise UnusableAudio(f"{field}: could not fetch {url}: {type(exc).__name__}") from None
    except media.MediaError as exc:
        raise UnusableAudio(f"{field}: not audio the sandbox can decode ({exc})") from None
