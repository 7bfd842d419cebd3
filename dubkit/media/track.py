"""A decoded audio track read a stretch at a time, so that a long clip is never held whole.

The dub's analyses (speech segments, speakers, voices) and its stems each need one window or
one line of the original at a time. Holding the whole decode made the sandbox's memory grow
with the clip's length (issue 15); a :class:`Track` keeps the samples in a file of raw float32
(:func:`Track.decode`) and reads only what is asked for. ``Track.of`` wraps samples already in
memory (tests, short clips) behind the same reads.

>>> track = Track.of(np.zeros((44100, 2), np.float32), 44100)
>>> track.frames, track.channels, track.read(0, 10).shape, track.seconds(0.5, 0.6).shape
(44100, 2, (10, 2), (4410,))
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from . import av
from ._ffmpeg import PathLike

__all__ = ["Track"]


class Track:
    """Float32 samples at ``rate``, mono ``(n,)`` or stereo ``(n, 2)``: a source of more
    channels becomes their mean (mono) when it is made, so every later step sees one or two."""

    def __init__(
        self,
        rate: int,
        channels: int,
        *,
        path: Path | None = None,
        samples: np.ndarray | None = None,
    ) -> None:
        self.rate, self.channels = rate, channels
        self._path, self._samples = path, samples
        if samples is not None:
            self.frames = len(samples)
        else:
            assert path is not None
            self.frames = path.stat().st_size // (4 * channels)

    @classmethod
    def of(cls, samples: np.ndarray, rate: int) -> Track:
        """The samples already in memory, ``(n,)`` or ``(n, channels)``."""
        data = _folded(np.asarray(samples, dtype=np.float32))
        return cls(rate, 1 if data.ndim == 1 else data.shape[1], samples=data)

    @classmethod
    def write(cls, samples: np.ndarray, rate: int, dest: PathLike) -> Track:
        """The samples, ``(n,)`` or ``(n, channels)``, kept in the file ``dest`` instead."""
        data = np.ascontiguousarray(_folded(np.asarray(samples, dtype="<f4")))
        data.tofile(dest)
        return cls(rate, 1 if data.ndim == 1 else data.shape[1], path=Path(dest))

    @classmethod
    def decode(
        cls, source: PathLike, dest: PathLike, rate: int | None = None, *, mono: bool = False
    ) -> Track:
        """The first audio track of ``source`` at ``rate`` (None: its own), decoded into the
        file ``dest``; ``mono`` has ffmpeg mix the channels down."""
        dest = Path(dest)
        written, stored = av.decode_to_file(source, dest, sample_rate=rate, mono=mono)
        if stored <= 2:
            return cls(written, stored, path=dest)
        # More channels: their plain mean, a window at a time (ffmpeg's downmix weighs them).
        wide = dest.with_name(dest.name + ".wide")
        dest.replace(wide)
        try:
            with open(dest, "wb") as out:
                for at in range(0, wide.stat().st_size // (4 * stored), _FOLD_WINDOW):
                    frames = np.fromfile(
                        wide, "<f4", count=_FOLD_WINDOW * stored, offset=at * stored * 4
                    )
                    _folded(frames.reshape(-1, stored)).tofile(out)
        finally:
            wide.unlink()
        return cls(written, 1, path=dest)

    @property
    def duration(self) -> float:
        return self.frames / self.rate

    def read(self, start: int = 0, stop: int | None = None, *, mono: bool = False) -> np.ndarray:
        """Frames ``start:stop``, each end first clipped to ``0..frames`` (a negative one does
        not count from the end); ``(n,)`` or ``(n, 2)``; ``mono`` averages the channels."""
        start = min(max(0, start), self.frames)
        stop = self.frames if stop is None else min(max(start, stop), self.frames)
        if self._samples is not None:
            data = self._samples[start:stop]
        else:
            assert self._path is not None
            data = np.fromfile(
                self._path,
                dtype="<f4",
                count=(stop - start) * self.channels,
                offset=start * self.channels * 4,
            )
            data = data if self.channels == 1 else data.reshape(-1, self.channels)
        return data.mean(axis=1) if mono and data.ndim == 2 else data

    def windows(self, size: int) -> Iterator[np.ndarray]:
        """The whole track, ``size`` frames at a time."""
        for start in range(0, self.frames, size):
            yield self.read(start, start + size)

    def seconds(self, start: float, end: float) -> np.ndarray:
        """Mono samples from ``start`` to ``end`` seconds (a line of speech, say)."""
        return self.read(round(start * self.rate), round(end * self.rate), mono=True)

    def stretched(self, factor: float, dest: PathLike) -> Track:
        """This track ``factor`` times as long (:func:`av.time_stretch`), in the file ``dest``
        (a track held in memory stays in memory)."""
        if self._samples is not None:
            return Track.of(av.time_stretch(self._samples, self.rate, factor), self.rate)
        assert self._path is not None
        av.time_stretch_file(self._path, dest, self.rate, self.channels, factor)
        return Track(self.rate, self.channels, path=Path(dest))

    def remove(self) -> None:
        """Delete the file behind the track (scratch no longer needed); it cannot be read after."""
        if self._path is not None:
            self._path.unlink(missing_ok=True)


_FOLD_WINDOW = 1 << 18  # frames of a many-channel decode folded at a time


def _folded(data: np.ndarray) -> np.ndarray:
    """Mono for more than two channels (their mean), as it is for one; stereo stays."""
    if data.ndim == 2 and data.shape[1] == 1:
        return data[:, 0]
    return data.mean(axis=1) if data.ndim == 2 and data.shape[1] > 2 else data
