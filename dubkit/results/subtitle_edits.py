"""A translator's subtitles into a dub: ``dub.edit_from_subtitles("fr.srt")``.

Each cue is matched to the line it overlaps most in time; the cues of a line, in time order,
become its translation (a cue's line breaks read as spaces). A line whose text differs (spaces
aside) is edited, so ``client.dubbing.redub(dub)`` re-speaks exactly those lines. Cues that
match no line and lines no cue reaches are reported, not guessed at.

Nothing is changed unless the whole file reads: a block without a timing line, a cue without
text, or a file whose cues do not line up with this dub's lines (a file for another dub) is a
ValidationError naming the file and the line, before any edit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .._util.words import count
from ..errors import ValidationError
from ..media import subtitles
from .quality import best_line, shared_seconds


class ScriptLine(Protocol):
    """A dubbed line as a subtitle file edits it (:class:`dubkit.results.ScriptLine`)."""

    id: str
    start: float
    end: float
    translation: str


ALIGNED = 0.5  # a cue lines up with a line when at least half its time lies inside the line


@dataclass
class SubtitleEdits:
    """What reading a subtitle file into a dub changed and what it could not place."""

    path: str
    changed: list[str] = field(default_factory=list)  # ids of lines given a new translation
    unchanged: list[str] = field(default_factory=list)
    unmatched_cues: list[tuple[int, str]] = field(default_factory=list)  # (file line, text)
    unreached: list[str] = field(default_factory=list)  # ids of lines no cue reaches

    def __repr__(self) -> str:
        return (
            f"SubtitleEdits({Path(self.path).name}: {count(len(self.changed), 'line')} changed "
            f"{self.changed}, {len(self.unchanged)} unchanged, "
            f"{count(len(self.unmatched_cues), 'cue')} matching no line, "
            f"{count(len(self.unreached), 'line')} reached by no cue)"
        )


def edit_from_subtitles(
    script: Sequence[ScriptLine], path: str | os.PathLike[str]
) -> SubtitleEdits:
    """Read ``path`` (SRT or WebVTT) into ``script``'s translations (see the module doc)."""
    where = str(path)
    cues = _read(where)
    report = SubtitleEdits(where)
    texts: dict[str, list[str]] = {}
    astray = []  # file lines of cues that do not line up with any line
    for cue, number in cues:
        text = " ".join(cue.text.split())
        if not text:
            raise ValidationError(f"{where}, line {number}", "this cue has no text")
        line = best_line(cue, script)
        if line is None:
            report.unmatched_cues.append((number, text))
            astray.append(number)
            continue
        if shared_seconds(cue, line) < ALIGNED * max(cue.end - cue.start, 1e-3):
            astray.append(number)
        texts.setdefault(line.id, []).append(text)
    if len(astray) * 2 > len(cues):
        raise ValidationError(
            f"{where}, line {astray[0]}",
            f"{len(astray)} of {len(cues)} cues do not line up with this dub's "
            f"{len(script)} lines: is this file for another dub? Nothing was changed",
        )
    for line in script:
        new = texts.get(line.id)
        if new is None:
            report.unreached.append(line.id)
        elif _same(" ".join(new), line.translation):
            report.unchanged.append(line.id)
        else:
            line.translation = " ".join(new)
            report.changed.append(line.id)
    return report


def _read(where: str) -> list[tuple[subtitles.Cue, int]]:
    try:
        text = Path(where).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ValidationError(where, f"cannot read the subtitle file: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ValidationError(where, "a subtitle file is UTF-8 text") from None
    try:
        cues = subtitles.parse_numbered(text)
    except ValueError as exc:
        number = re.match(r"line (\d+): (.*)", str(exc))
        if number:
            raise ValidationError(f"{where}, line {number[1]}", number[2]) from None
        raise ValidationError(where, str(exc)) from None
    if not cues:
        raise ValidationError(where, "holds no cues (SRT or WebVTT expected)")
    return cues


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())
