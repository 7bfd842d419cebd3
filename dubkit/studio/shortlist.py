"""The shortlist: the takes a person starred, with a note each, ready for a dub or a TTS batch.

>>> studio.shortlist.to_frame()                       # voice, provider, settings, note
>>> studio.shortlist.to_csv("shortlist.csv"); studio.shortlist.to_json("shortlist.json")
>>> client.dubbing.create("talk.mp4", target="fr-FR", voices=studio.shortlist.to_voices())
>>> client.tts.batch(studio.shortlist.tts_lines(["Line one.", "Line two."]))
>>> Shortlist.load("shortlist.json").to_voices()             # an export from the app
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._util.deprecation import renamed
from ..schema import SelectedVoice

if TYPE_CHECKING:
    from .takes import Take

NEUTRAL = "neutral"


@dataclass
class Entry:
    """One starred take: the voice, how it spoke (locale, emotion, speed), and a note."""

    voice_id: str
    provider: str | None
    name: str
    kind: str
    voice_locale: str | None
    gender: str | None
    locale: str | None  # the language the line was spoken in
    emotion: str = NEUTRAL
    speed: float = 1.0
    note: str = ""
    line: str = ""  # what the voice said when it was starred
    loudness: float | None = None  # its original level, LUFS

    @property
    def key(self) -> str:
        return f"{self.voice_id}|{self.emotion}|{self.speed:g}"

    @classmethod
    def of_take(cls, take: Take, note: str = "") -> Entry:
        voice = take.voice
        level = take.matched.original if take.matched is not None else None
        return cls(
            voice.voice_id,
            voice.provider,
            voice.name,
            voice.kind,
            voice.locale,
            voice.gender,
            take.locale,
            take.emotion,
            take.speed,
            note,
            take.text,
            None if level is None else round(level, 1),
        )


COLUMNS = [f.name for f in fields(Entry)]


class Shortlist:
    """Starred takes in the order starred (one per voice and reading); watch with
    :meth:`observe`. The first voice is the one proposed for speaker 1 of a dub."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self._entries: dict[str, Entry] = {e.key: e for e in entries}
        self._watchers: list[Callable[[Shortlist], None]] = []

    # ----------------------------------------------------------------- changing it

    def add(self, take: Take, note: str = "") -> Entry:
        """Star ``take`` (again: keeps its place, updates the note if one is given)."""
        entry = self._entries.get(take.key)
        if entry is None:
            entry = self._entries[take.key] = Entry.of_take(take, note)
        elif note:
            entry.note = note
        self._changed()
        return entry

    def remove(self, key: str) -> None:
        """Unstar (``key`` is a take's or an entry's ``.key``); unknown keys are ignored."""
        if self._entries.pop(key, None) is not None:
            self._changed()

    def set_note(self, key: str, note: str) -> None:
        if key in self._entries and self._entries[key].note != note:
            self._entries[key].note = note
            self._changed()

    def clear(self) -> None:
        self._entries.clear()
        self._changed()

    def observe(self, watcher: Callable[[Shortlist], None]) -> None:
        """Call ``watcher(shortlist)`` after every change (the app redraws its table)."""
        self._watchers.append(watcher)

    def _changed(self) -> None:
        for watcher in self._watchers:
            watcher(self)

    # ----------------------------------------------------------------- reading it

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[Entry]:
        return iter(list(self._entries.values()))

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, key: str) -> Entry:
        return self._entries[key]

    def __repr__(self) -> str:
        return f"Shortlist({len(self)} takes: {', '.join(e.name for e in self) or 'none'})"

    def to_records(self) -> list[dict[str, Any]]:
        return [asdict(e) for e in self]

    def to_frame(self) -> pd.DataFrame:
        """One row a starred take: voice_id, provider, name, settings, note, …"""
        return pd.DataFrame(self.to_records(), columns=COLUMNS)

    def to_csv(self, path: str | Path | None = None) -> str:
        """The shortlist as CSV text (UTF-8, a header row); also written to ``path``."""
        buffer = io.StringIO()
        self.to_frame().to_csv(buffer, index=False)
        return _written(buffer.getvalue(), path)

    def to_json(self, path: str | Path | None = None) -> str:
        """The shortlist as a JSON list of objects; :meth:`load` reads it back."""
        return _written(json.dumps(self.to_records(), indent=1, ensure_ascii=False) + "\n", path)

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]]) -> Shortlist:
        known = set(COLUMNS)
        return cls(Entry(**{k: v for k, v in r.items() if k in known}) for r in records)

    @classmethod
    def load(cls, path_or_text: str | Path) -> Shortlist:
        """A shortlist exported as JSON (a file path, or the JSON text itself)."""
        text = str(path_or_text)
        if not text.lstrip().startswith("["):
            text = Path(path_or_text).read_text(encoding="utf-8")
        return cls.from_records(json.loads(text))

    # ----------------------------------------------------------------- handing it on

    def voice_ids(self) -> list[str]:
        """Each shortlisted voice once, in the order starred."""
        return list(dict.fromkeys(e.voice_id for e in self))

    def to_voices(self) -> list[dict[str, str]]:
        """``voices`` for ``client.dubbing.create``: speaker 1 gets the first voice, speaker 2
        the next, …  (each voice once, with its provider, as the request's voice list).

        >>> client.dubbing.create(video, target="fr-FR", voices=studio.shortlist.to_voices())
        """
        seen: dict[str, dict[str, str]] = {}
        for entry in self:
            if entry.voice_id not in seen:
                chosen = SelectedVoice(voice_id=entry.voice_id, provider=entry.provider or None)
                seen[entry.voice_id] = chosen.to_wire()
        return list(seen.values())

    to_selected_voices = renamed("to_voices")

    def tts_lines(self, texts: Iterable[str] | str) -> list[dict[str, Any]]:
        """Lines for ``client.tts.batch``: every text said by every starred take's voice,
        with its emotion (as ``emo_prompt``). Speed is not carried over: the service sets
        pace through ``duration``, which belongs to one text.

        >>> speech = client.tts.batch(studio.shortlist.tts_lines(script), locale="fr-FR")
        """
        texts = [texts] if isinstance(texts, str) else list(texts)
        lines = []
        for entry in self:
            for text in texts:
                line: dict[str, Any] = {"text": text, "voice_id": entry.voice_id}
                if entry.emotion != NEUTRAL:
                    line["emo_prompt"] = entry.emotion
                lines.append(line)
        return lines


def _written(text: str, path: str | Path | None) -> str:
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text
