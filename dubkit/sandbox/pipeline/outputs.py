"""Where a task's deliverables are written and the URLs the sandbox serves them at."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import numpy as np

from ...media import av
from ...media.track import Track
from ...schema import AudioFile, MediaFile, Resolution

F = TypeVar("F", MediaFile, AudioFile)

# Frames of audio made, read or encoded at a time (20 s at 44.1 kHz): stems, the mix, transcodes.
WINDOW = 441 * 2000


class Outputs:
    """A task's output folder; every file written here is served at ``url_for(name)``.

    >>> out = Outputs(Path("/tmp/t1"), lambda name: f"http://sandbox/files/media/t1/{name}")
    >>> out.url("dubbed.mp4")
    'http://sandbox/files/media/t1/dubbed.mp4'
    """

    def __init__(self, folder: Path, url_for: Callable[[str], str]) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._url_for = url_for

    def path(self, name: str) -> Path:
        target = self.folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def url(self, name: str) -> str:
        return self._url_for(name)

    def audio(self, name: str, samples: np.ndarray, sample_rate: int) -> str:
        """Encode audio by the name's extension (wav, m4a, mp3...) and return its URL."""
        av.encode_audio(samples, sample_rate, name.rsplit(".", 1)[-1], self.path(name))
        return self.url(name)

    def audio_windows(
        self, name: str, windows: Iterable[np.ndarray], sample_rate: int, channels: int
    ) -> str:
        """:meth:`audio` of the samples ``windows`` make end to end, encoded as they come."""
        av.encode_stream(windows, sample_rate, channels, name.rsplit(".", 1)[-1], self.path(name))
        return self.url(name)

    def transcoded(
        self, name: str, source: Path, scratch: Path, rate: int | None = None, mono: bool = False
    ) -> str:
        """``source``'s audio encoded as ``name`` (:meth:`audio`), through a decode into the
        folder ``scratch``: a window at a time, never whole."""
        track = Track.decode(source, scratch / f"{Path(name).name}.f32", rate, mono=mono)
        try:
            return self.audio_windows(name, track.windows(WINDOW), track.rate, track.channels)
        finally:
            track.remove()

    def text(self, name: str, content: str) -> str:
        self.path(name).write_text(content, encoding="utf-8")
        return self.url(name)

    def media_file(self, name: str, kind: type[F]) -> F:
        """The interface's record (§3.6: a :class:`MediaFile` or an :class:`AudioFile`) of a
        file written here; a video's picture size and rate when it has a picture."""
        path = self.path(name)
        info = av.header(path)  # written here: its summary is enough, no trial decode needed
        record = kind(
            url=self.url(name), duration=round(info.duration, 3), size=path.stat().st_size
        )
        if info.has_video and isinstance(record, MediaFile):
            record.resolution = Resolution(width=info.width, height=info.height)
            record.fps = round(info.fps) if info.fps else None
        return record
