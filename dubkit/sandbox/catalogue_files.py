"""A preset's preview (a WAV of it saying its sample text) and cover (an SVG badge), made the
first time their URL is fetched or read as a reference, then kept in the files dir.

Listings only name them: a first full listing of the catalogue once made all 681 previews
before answering (about two seconds).
"""

from __future__ import annotations

import html
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

from ..media import av, speech
from .catalogue import TIERS, Preset, preset

_FILE = re.compile(r"voices/(?:previews/(sv_\w+)\.wav|covers/(sv_\w+)\.svg)")
_TIER_COLOURS = ("#0969da", "#1a7f37", "#8250df", "#bf3989", "#9a6700", "#cf222e", "#1b7c83")


def preview_relpath(voice_id: str) -> str:
    return f"voices/previews/{voice_id}.wav"


def cover_relpath(voice_id: str) -> str:
    return f"voices/covers/{voice_id}.svg"


def make_if_missing(files_dir: Path, relpath: str) -> None:
    """Make the preview or cover ``relpath`` names (under ``files_dir``) if it is not there;
    any other path is left alone."""
    found = _FILE.fullmatch(relpath)
    voice = preset(found.group(1) or found.group(2)) if found else None
    target = files_dir / relpath
    if voice is None or target.is_file():
        return
    if found and found.group(1):
        samples = voice.speaking.speak(voice.sample_text)
        _write_atomically(
            target, lambda path: av.encode_audio(samples, speech.SAMPLE_RATE, "wav", path)
        )
    else:
        svg = _cover_svg(voice)
        _write_atomically(target, lambda path: path.write_text(svg, encoding="utf-8"))


def _write_atomically(target: Path, write: Callable[[Path], object]) -> None:
    # Two fetches may make the same file at once; a reader must never see half of it.
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(
        f".{target.stem}.{os.getpid()}.{threading.get_ident()}{target.suffix}"
    )
    write(partial)
    os.replace(partial, target)


def _cover_svg(voice: Preset) -> str:
    record = voice.record
    colour = _TIER_COLOURS[list(TIERS).index(record.provider or "") % len(_TIER_COLOURS)]
    initial = html.escape((record.display_name or "?")[:1].upper())
    return (
        "<svg xmlns='http://www.w3.org/2000/svg' width='96' height='96' viewBox='0 0 96 96'>"
        f"<circle cx='48' cy='48' r='46' fill='{colour}'/>"
        "<text x='48' y='60' font-family='sans-serif' font-size='40' fill='white' "
        f"text-anchor='middle'>{initial}</text>"
        "<text x='48' y='84' font-family='sans-serif' font-size='13' fill='white' "
        f"text-anchor='middle'>{html.escape(record.provider or '')}</text></svg>"
    )
