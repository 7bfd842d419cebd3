"""A re-dub made on this machine: files on disk that play, compare and save like a dub.

``client.dubbing.redub(dub)`` makes one from a :class:`~dubkit.results.DubbingResult` whose
script was edited. Its media are files on the kernel's machine, which a remote browser (Binder,
a hub) cannot reach by path: so a notebook plays them embedded, up to :data:`LOCAL_EMBED_LIMIT`
bytes each (a re-dub is usually a short clip; it also keeps playing in a saved notebook).
A bigger file is shown as not embedded: ``save()`` it and open it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._util.deprecation import renamed
from .._util.words import noun
from ..frontends.media import data_uri
from ..media.mime import format_of, known_mime_type
from ..views.dubbing import dubbing_html
from . import quality
from ._display import ShowsMedia
from .dubbing import DubbingResult, HasTerms, MediaFile, ScriptLine

LOCAL_EMBED_LIMIT = 8_000_000  # bytes


def _url(path: Path) -> str:
    """The file as a ``data:`` URI, or "" (not playable here) when it is too big to embed.
    Never its path: a saved notebook must not name this machine's files."""
    if path.stat().st_size > LOCAL_EMBED_LIMIT:
        return ""
    kind = "video" if path.suffix == ".mp4" else "audio"
    mime = known_mime_type(format_of(str(path)), kind) or "application/octet-stream"
    return data_uri(path.read_bytes(), mime)


@dataclass(frozen=True)
class LocalSubtitles:
    srt: str | None
    vtt: str | None
    srt_path: Path
    vtt_path: Path

    def text(self, fmt: str = "srt") -> str:
        return (self.srt_path if fmt == "srt" else self.vtt_path).read_text(encoding="utf-8")


class Redub(ShowsMedia):
    """The re-dubbed audio (and video), subtitles and script, written under ``folder``."""

    def __init__(
        self,
        made_from: DubbingResult,
        script: list[ScriptLine],
        redubbed: list[str],
        files: dict[str, Path],
        timings: dict[str, float],
    ) -> None:
        self.made_from = made_from
        self.script = script
        self.redubbed = redubbed  # ids of the lines spoken anew
        self.files = files
        self.timings = timings
        self.source_locale = made_from.source_locale
        self.target_locale = made_from.target_locale
        self.original = made_from.original
        self.voices: list[dict[str, Any]] = made_from.voices
        self.compressed: dict[str, MediaFile | None] = {}
        self.engine = "dubkit re-dub (local)"
        self.label = "re-dubbed here"
        self.poster_url = made_from.poster_url
        self.notices = [
            f"re-dubbed on this machine: {noun(len(redubbed), 'line')} "
            f"{', '.join(redubbed) or 'none'} spoken anew; the rest is the service's audio"
        ]
        self.audio = self._media("audio")
        self.video = self._media("video")
        self.subtitles = LocalSubtitles(
            _url(files["srt"]), _url(files["vtt"]), files["srt"], files["vtt"]
        )

    def _media(self, kind: str) -> MediaFile | None:
        path = self.files.get(kind)
        if path is None:
            return None
        like = self.made_from.video if kind == "video" else self.made_from.audio
        return MediaFile(
            url=_url(path),
            duration=like.duration if like else None,
            size=path.stat().st_size,
            width=like.width if like else None,
            height=like.height if like else None,
        )

    def check(
        self, limits: quality.Limits | None = None, *, cast: HasTerms | None = None
    ) -> quality.DubCheck:
        """The re-dub's lines checked as a dub's are (:meth:`DubbingResult.check`)."""
        report = quality.check(
            self, limits, cast.terms if cast is not None else None, cache=self.made_from._measured
        )
        report.label = "re-dub"
        return report

    def subtitle_text(self) -> str | None:
        return self.subtitles.text("srt")

    def service_lines(self) -> dict[str, dict[str, Any]]:
        """What the service said of the lines it made; a line spoken anew here has nothing."""
        made = self.made_from.service_lines()
        return {key: value for key, value in made.items() if key not in self.redubbed}

    def captions(self, side: Literal["dub", "source"] = "dub") -> str | None:
        """WebVTT captions: the re-dub's own subtitles file, or the original's words."""
        if side == "dub" and "vtt" in self.files:
            return self.files["vtt"].read_text(encoding="utf-8")
        return self.made_from.captions(side)

    def held(self, url: str | None) -> bytes | None:
        """A new line's audio (a file of this re-dub), else what the original result held."""
        if url and not url.startswith(("http://", "https://")) and Path(url).is_file():
            return Path(url).read_bytes()
        return self.made_from.held(url)

    source_language = renamed("source_locale")
    target_language = renamed("target_locale")

    def save(self, directory: str | Path, stem: str = "redub") -> dict[str, Path]:
        """Copy the files to ``directory`` as ``<stem>.<target>.<ext>``."""
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        return {
            kind: Path(shutil.copyfile(path, folder / f"{stem}.{self.target_locale}{path.suffix}"))
            for kind, path in self.files.items()
        }

    def __repr__(self) -> str:
        # No folder in the repr: a saved notebook must not name this machine's paths.
        return (
            f"Redub({self.target_locale}, {len(self.redubbed)} of {len(self.script)} lines "
            f"spoken anew, {len(self.files)} files)"
        )

    def _repr_html_(self) -> str:
        return dubbing_html(self)
