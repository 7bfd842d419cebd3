"""Subtitle cues and the two text formats the sandbox reads and writes: SubRip and WebVTT.

>>> from dubkit.media.subtitles import Cue, to_srt, parse_srt
>>> cues = [Cue(0.5, 1.8, "Hello"), Cue(2.0, 3.5, "Two\\nlines")]
>>> print(to_srt(cues[:1]), end="")
1
00:00:00,500 --> 00:00:01,800
Hello
>>> parse_srt(to_srt(cues)) == cues
True

Parsing is lenient about what real files do (byte-order mark, CRLF, missing SRT indexes, VTT cue
settings and identifiers, a ``.`` instead of a ``,`` in SRT) and strict about what cannot be
guessed: a block without a readable timing line raises ``ValueError`` naming the line.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

__all__ = ["Cue", "to_srt", "to_vtt", "parse_srt", "parse_vtt", "parse_numbered", "ass_style"]


@dataclass(frozen=True)
class Cue:
    """One subtitle: ``start``/``end`` in seconds, ``text`` possibly on several lines.

    >>> Cue(1.0, 2.5, "Bonjour").end
    2.5
    """

    start: float
    end: float
    text: str

    def __post_init__(self) -> None:
        if self.start < 0 or self.end < self.start:
            raise ValueError(
                f"cue times must satisfy 0 <= start <= end, got {self.start}..{self.end}"
            )


def to_srt(cues: list[Cue]) -> str:
    """SubRip text: numbered blocks, ``HH:MM:SS,mmm`` times, a blank line after each block."""
    blocks = [
        f"{i}\n{_stamp(c.start, ',')} --> {_stamp(c.end, ',')}\n{_body(c.text)}\n"
        for i, c in enumerate(cues, 1)
    ]
    return "\n".join(blocks)


def to_vtt(cues: list[Cue]) -> str:
    """WebVTT text: ``WEBVTT`` header, ``HH:MM:SS.mmm`` times; ``&``, ``<`` and ``>`` escaped."""
    blocks = [
        f"{_stamp(c.start, '.')} --> {_stamp(c.end, '.')}\n{html.escape(_body(c.text), quote=False)}\n"
        for c in cues
    ]
    return "\n".join(["WEBVTT\n", *blocks])


def parse_srt(text: str) -> list[Cue]:
    """Cues from SubRip text (see the module docstring for what is tolerated)."""
    return [Cue(start, end, body) for start, end, body, _ in _blocks(text, vtt=False)]


def parse_vtt(text: str) -> list[Cue]:
    """Cues from WebVTT text; NOTE/STYLE/REGION blocks are skipped, entities unescaped."""
    text = text.lstrip("\ufeff")
    first = text.split("\n", 1)[0].strip()
    if not re.fullmatch(r"WEBVTT([ \t].*)?", first):
        raise ValueError("not WebVTT: the first line must be 'WEBVTT'")
    return [Cue(start, end, html.unescape(body)) for start, end, body, _ in _blocks(text, vtt=True)]


def parse_numbered(text: str) -> list[tuple[Cue, int]]:
    """Cues of SubRip or WebVTT text (told apart by the ``WEBVTT`` header), each with the line
    (from 1) its block starts on, for errors that point into the file."""
    if re.match(r"WEBVTT([ \t\n]|$)", text.lstrip("\ufeff")):
        return [(Cue(a, b, html.unescape(t)), n) for a, b, t, n in _blocks(text, vtt=True)]
    return [(Cue(a, b, t), n) for a, b, t, n in _blocks(text, vtt=False)]


def ass_style(style: dict[str, object]) -> str:
    """ASS ``force_style`` text for burned-in subtitles from a style dict.

    Keys are ASS style fields (``FontName``, ``FontSize``, ``PrimaryColour``, ``OutlineColour``,
    ``Bold``, ``Outline``, ``Shadow``, ``Alignment``, ``MarginV``...) or the shorthands ``font``,
    ``size``, ``color``, ``outline_color`` and ``position`` (``"top"``/``"bottom"``). Colours may be
    CSS-like ``"#RRGGBB"``/``"#RRGGBBAA"``; booleans become ASS's -1/0.

    >>> ass_style({"font": "Noto Sans", "size": 24, "color": "#FFFF00", "position": "top"})
    'FontName=Noto Sans,FontSize=24,PrimaryColour=&H0000FFFF,Alignment=8'
    """
    fields: dict[str, str] = {}
    for key, value in style.items():
        name = _STYLE_SHORTHANDS.get(key.lower(), key)
        if name == "position":
            if value not in ("top", "bottom"):
                raise ValueError(f"style position must be 'top' or 'bottom'; got {value!r}")
            name, value = "Alignment", 8 if value == "top" else 2
        if isinstance(value, bool):
            value = -1 if value else 0
        if isinstance(value, str) and value.startswith("#"):
            value = _ass_colour(value)
        text = str(value)
        if not re.fullmatch(r"[A-Za-z]+", name) or re.search(r"[,=\n]", text):
            raise ValueError(f"style field {key!r}={value!r} cannot be expressed as an ASS style")
        fields[name] = text
    return ",".join(f"{name}={text}" for name, text in fields.items())


_STYLE_SHORTHANDS = {
    "font": "FontName",
    "size": "FontSize",
    "color": "PrimaryColour",
    "colour": "PrimaryColour",
    "outline_color": "OutlineColour",
    "outline_colour": "OutlineColour",
    "position": "position",
}


def _ass_colour(css: str) -> str:
    match = re.fullmatch(r"#([0-9a-fA-F]{2})([0-9a-fA-F]{2})([0-9a-fA-F]{2})([0-9a-fA-F]{2})?", css)
    if match is None:
        raise ValueError(f"colour must look like #RRGGBB or #RRGGBBAA; got {css!r}")
    red, green, blue, alpha = match.groups()
    # ASS writes blue-green-red, and its alpha counts transparency (00 is opaque).
    transparency = 255 - int(alpha or "FF", 16)
    return f"&H{transparency:02X}{blue}{green}{red}".upper()


# Hours are optional (VTT allows mm:ss.ttt); the separator before milliseconds may be ',' or '.'
# because real-world SRT files use both.
_TIME = r"(?:(\d+):)?(\d{1,2}):(\d{1,2})[,.](\d{1,3})"
_TIMING = re.compile(rf"^\s*{_TIME}\s*-->\s*{_TIME}(?:\s.*)?$")
_VTT_SKIPPED = re.compile(r"^(NOTE|STYLE|REGION)(\s|$)")


def _blocks(text: str, *, vtt: bool) -> list[tuple[float, float, str, int]]:
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    groups: list[tuple[int, list[str]]] = []
    current: list[str] = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            if not current:
                groups.append((number, current))
            current.append(line)
        elif current:
            current = []
    if vtt and groups:
        groups = groups[1:]  # the header block (WEBVTT line and any header metadata)
    cues = []
    for first_line, block in groups:
        if vtt and _VTT_SKIPPED.match(block[0]):
            continue
        # An SRT index or a VTT cue identifier may precede the timing line.
        at = 0 if _TIMING.match(block[0]) else 1
        match = _TIMING.match(block[at]) if at < len(block) else None
        if match is None:
            raise ValueError(
                f"line {first_line + at}: expected a timing line like "
                f"'00:00:01{'.' if vtt else ','}500 --> 00:00:02{'.' if vtt else ','}000'"
            )
        start, end = _seconds(match.groups()[:4]), _seconds(match.groups()[4:])
        if end < start:
            raise ValueError(f"line {first_line + at}: cue ends before it starts")
        cues.append((start, end, "\n".join(block[at + 1 :]), first_line))
    return cues


def _seconds(parts: tuple[str | None, ...]) -> float:
    hours, minutes, seconds, millis = parts
    # "5" after the separator means 500 ms, as players read it.
    ms = int((millis or "0").ljust(3, "0"))
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds or 0) + ms / 1000


def _stamp(seconds: float, separator: str) -> str:
    total_ms = round(seconds * 1000)
    hours, rest = divmod(total_ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, ms = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{ms:03d}"


def _body(text: str) -> str:
    # A blank line ends a cue in both formats, so blank lines inside the text are dropped.
    return "\n".join(line for line in text.replace("\r\n", "\n").split("\n") if line.strip())
