"""Spoken lines: what ``client.tts`` returns.

>>> line = client.tts.speak("Hello there!", "sv_s1_en_us_clear_f")
>>> line.audio, line.sample_rate, line.duration        # numpy, Hz, seconds
>>> speech.save("out/")                                 # one file a line
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._transport import Transport
from ..errors import DubkitError
from ..media.mime import format_of
from ..schema import SpeechContext, TTSResult, TTSResultItem, extras
from ..views.players import speech_table_html
from ._display import ShowsMedia
from ._held import fetch_held
from ._lines import lined_up

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd  # imported where a table is made: pandas is slow to import


class SpeechLine(ShowsMedia):
    """One spoken line: its text, voice, ``uri``, ``duration`` or ``error_message``.

    ``.data`` downloads the file once; ``.audio`` decodes it (float32, mono); ``.save(dir)``
    writes it.
    """

    def __init__(
        self,
        transport: Transport,
        index: int,
        text: str | None,
        voice_id: str | None,
        item: TTSResultItem,
        data: bytes | None = None,
    ) -> None:
        self._transport = transport
        self.index, self.text, self.voice_id = index, text, voice_id
        self.uri = item.uri
        self.duration = item.duration
        self.error_message = item.error_message
        self.extra = extras(item)  # beyond the interface, e.g. the sandbox's "emotion"
        self._data = data
        self._decoded: tuple[np.ndarray, int] | None = None

    def __repr__(self) -> str:
        state = f"{self.duration:.1f} s" if self.ok else f"failed: {self.error_message}"
        text = self.text or ""
        return f"SpeechLine({self.index}, {text[:37] + '…' if len(text) > 40 else text!r}, {state})"

    @property
    def ok(self) -> bool:
        return not self.error_message and bool(self.uri)

    @property
    def format(self) -> str:
        return format_of(self.uri or "")

    @property
    def data(self) -> bytes:
        """The encoded file's bytes, downloaded once."""
        if not self.ok or self.uri is None:
            raise DubkitError(f"line {self.index} has no audio: {self.error_message}")
        if self._data is None:
            self._data = self._transport.download(self.uri)
        return self._data

    def data_if_loaded(self) -> bytes | None:
        """The bytes if they were fetched already (views use this; they never fetch)."""
        return self._data

    @property
    def audio(self) -> np.ndarray:
        """Samples as float32 numpy (soundfile; m4a through ffmpeg)."""
        return self._decode()[0]

    @property
    def sample_rate(self) -> int:
        return self._decode()[1]

    def _decode(self) -> tuple[np.ndarray, int]:
        if self._decoded is None:
            from ..media.audio import decode  # numpy, soundfile and ffmpeg load on first decode

            self._decoded = decode(self.data, self.format)
        return self._decoded

    def save(self, directory: str | Path, name: str | None = None) -> Path:
        """Write the file as the service encoded it: ``<dir>/<name or NNN>.<format>``."""
        target = Path(directory) / f"{name or f'{self.index:03d}'}.{self.format or 'audio'}"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(self.data)
        return target

    def _repr_html_(self) -> str:
        return speech_table_html([self])


class Speech(ShowsMedia):
    """Spoken lines in request order; per-line failures are in ``errors``."""

    def __init__(
        self, lines: list[SpeechLine], task_ids: list[str], notices: Sequence[str] = ()
    ) -> None:
        self.lines = lines
        self.task_ids = task_ids
        self.notices = list(notices)  # how the sandbox spoke other than asked, and why

    @classmethod
    def from_results(
        cls,
        transport: Transport,
        results: Sequence[TTSResult],
        texts: Sequence[str | None],
        voices: Sequence[str | None],
    ) -> Speech:
        """The lines of one or more answers, in order, one a text sent (see
        :mod:`dubkit.results._lines`); the first clips a table shows are fetched now when they
        are the local sandbox's (see :mod:`dubkit.results._held`)."""
        items = [item for result in results for item in result.results]
        if texts:
            items = lined_up(
                items, len(texts), lambda why: TTSResultItem(error_message=why), "results"
            )
        held = fetch_held(transport, (item.uri for item in items if not item.error_message))
        lines = [
            SpeechLine(
                transport,
                i,
                texts[i] if i < len(texts) else None,
                voices[i] if i < len(voices) else None,
                item,
                held.get(item.uri or ""),
            )
            for i, item in enumerate(items)
        ]
        notices = dict.fromkeys(n for r in results for n in r.notices or ())
        return cls(lines, [r.task_id for r in results if r.task_id], list(notices))

    @classmethod
    def from_task(
        cls, transport: Transport, raw: dict[str, Any], context: SpeechContext | None
    ) -> Speech:
        context = context or SpeechContext()
        return cls.from_results(
            transport, [transport.read(TTSResult, raw)], context.texts, context.voices
        )

    @property
    def task_id(self) -> str | None:
        return self.task_ids[0] if len(self.task_ids) == 1 else None

    def __len__(self) -> int:
        return len(self.lines)

    def __iter__(self) -> Iterator[SpeechLine]:
        return iter(self.lines)

    def __getitem__(self, index: int) -> SpeechLine:
        return self.lines[index]

    @property
    def errors(self) -> dict[int, str]:
        """Index -> error message of every line that failed."""
        return {line.index: line.error_message or "no audio" for line in self.lines if not line.ok}

    @property
    def duration(self) -> float:
        """Seconds of speech over all lines that succeeded."""
        return round(sum(line.duration or 0 for line in self.lines if line.ok), 3)

    @property
    def audio(self) -> np.ndarray:
        """All successful lines one after another (same sample rate required)."""
        rates = {line.sample_rate for line in self.lines if line.ok}
        if len(rates) > 1:
            raise DubkitError(
                f"lines have different sample rates {sorted(rates)}; use each line's .audio"
            )
        import numpy as np

        return np.concatenate(
            [line.audio for line in self.lines if line.ok] or [np.zeros(0, "float32")]
        )

    @property
    def sample_rate(self) -> int | None:
        return next((line.sample_rate for line in self.lines if line.ok), None)

    def save(self, directory: str | Path) -> list[Path]:
        """Write every successful line as ``<dir>/NNN.<format>``; returns the paths."""
        return [line.save(directory) for line in self.lines if line.ok]

    def to_frame(self) -> pd.DataFrame:
        """text | voice_id | duration | uri | error; ``error`` is None for a line spoken."""
        import pandas as pd

        # object dtype: pandas would infer a string column and show "no error" as NaN
        # wherever another line failed, and as None where none did.
        return pd.DataFrame(
            {
                "text": [line.text for line in self.lines],
                "voice_id": [line.voice_id for line in self.lines],
                "duration": [line.duration for line in self.lines],
                "uri": [line.uri for line in self.lines],
                "error": pd.Series([line.error_message for line in self.lines], dtype=object),
            }
        )

    def __repr__(self) -> str:
        count = len(self)
        return (
            f"Speech({count} line{'' if count == 1 else 's'}, {self.duration:.1f} s of "
            f"audio, {len(self.errors)} failed)"
        )

    def _repr_html_(self) -> str:
        note = f"{len(self.errors)} of {len(self)} lines failed" if self.errors else ""
        return speech_table_html(self.lines, total=len(self), note=note)
