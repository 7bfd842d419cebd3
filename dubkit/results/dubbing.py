"""A finished media translation (interface §3.6): the dub, its subtitles, script and voices.

>>> dub = task.wait().result
>>> dub.video.url, dub.subtitles.text("srt")
>>> dub.script.to_frame()                    # start, end, speaker, source, translation
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .. import schema
from .._transport import Transport
from .._util.deprecation import renamed, renamed_keywords
from .._util.words import count
from ..errors import ValidationError
from ..media import subtitles
from ..media.mime import format_of
from ..schema import DubbingContext
from ..views.dubbing import dubbing_html
from . import quality
from ._display import ShowsMedia
from ._held import fetch_held
from .subtitle_edits import SubtitleEdits, edit_from_subtitles
from .voices import HasVoiceId, VoiceLike, voice_id_of

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd  # imported where a table is made: pandas is slow to import


BREATH = 0.05  # seconds a borrowed slot stops short of the next line
SPEEDS = (0.8, 1.6)  # what set_speed allows, times natural pace


class HasTerms(Protocol):
    """A cast (:class:`dubkit.Cast`) as a check reads it: its glossary's terms."""

    terms: Mapping[str, Mapping[str, str]]


class RoleVoices(Protocol):
    """A cast (:class:`dubkit.Cast`) as a dub's edits use it: a role's voice in a locale."""

    def voice(self, role: str, locale: str | None = None) -> HasVoiceId: ...


@dataclass(frozen=True)
class MediaFile:
    """A file the service made: ``url``, ``duration`` (s), ``size`` (bytes), picture facts."""

    url: str
    duration: float | None = None
    size: int | None = None
    width: int | None = None
    height: int | None = None
    fps: int | None = None

    @classmethod
    def of(cls, file: schema.MediaFile | schema.AudioFile | None) -> MediaFile | None:
        if file is None or not file.url:
            return None
        size = getattr(file, "resolution", None)
        return cls(
            file.url,
            file.duration,
            file.size,
            size.width if size else None,
            size.height if size else None,
            file.fps,
        )


class Subtitles:
    """The dub's subtitle files (URLs); :meth:`text` fetches one."""

    def __init__(
        self, transport: Transport, srt: str | None, vtt: str | None, locale: str | None
    ) -> None:
        self._transport = transport
        self.srt, self.vtt, self.locale = srt, vtt, locale

    def __repr__(self) -> str:
        return f"Subtitles(srt={self.srt!r}, vtt={self.vtt!r}, locale={self.locale!r})"

    language = renamed("locale")

    def text(self, fmt: Literal["srt", "vtt"] = "srt") -> str:
        url = self.srt if fmt == "srt" else self.vtt
        if not url:
            raise ValueError(f"this result has no {fmt} subtitles")
        return self._transport.download(url).decode("utf-8")


@dataclass
class ScriptLine:
    """One dubbed line: where it sits, who said what, what the dub says, and its audio URL.

    ``translation``, ``voice_id``, ``start`` and ``end`` may be changed (or use
    :meth:`DubbingResult.edit`); ``client.dubbing.redub(result)`` then re-dubs the lines changed.
    """

    id: str
    start: float
    end: float
    speaker: str
    source_text: str
    translation: str
    voice_id: str
    provider: str
    voice_name: str
    audio_url: str | None
    duration_ms: int | None
    _load: Callable[[str], bytes] | None = field(default=None, repr=False, compare=False)

    def audio(self) -> tuple[np.ndarray, int]:
        """This line's dubbed speech, fetched (once, by its result) and decoded: float32
        samples and their rate.

        >>> samples, rate = dub.script[0].audio()
        """
        if not self.audio_url or self._load is None:
            raise ValueError(f"line {self.id} has no dubbed audio")
        from ..media.audio import decode  # numpy, soundfile and ffmpeg load on first decode

        return decode(self._load(self.audio_url), format_of(self.audio_url))


class Script(list[ScriptLine]):
    """The dubbed lines in time order; ``.to_frame()`` for a table."""

    COLUMNS = [
        "start",
        "end",
        "speaker",
        "source_text",
        "translation",
        "voice_id",
        "provider",
        "audio_url",
    ]

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(
            [{name: getattr(line, name) for name in self.COLUMNS} for line in self],
            columns=self.COLUMNS,
        )


class DubbingResult(ShowsMedia):
    """A finished media translation: dubbed video/audio, subtitles, script, voices.

    Parsed from the §3.6 answer models (:class:`dubkit.schema.MediaTranslationResult`); the
    raw wire dict stays in ``raw``. The local sandbox's poster frame and first dubbed lines
    are fetched when the result is made, so its views embed them.
    """

    def __init__(
        self, transport: Transport, raw: Mapping[str, Any], context: DubbingContext | None = None
    ) -> None:
        self._transport = transport
        self.raw = dict(raw)
        context = context or DubbingContext()
        result = transport.read(schema.MediaTranslationResult, self.raw)
        self.task_id = result.task_id
        build = result.build or schema.Build()
        self.video = MediaFile.of(build.video)
        self.audio = MediaFile.of(build.audio)
        self.compressed = {name: MediaFile.of(f) for name, f in result.compress.items()}
        subtitles = build.subtitles or schema.SubtitleFiles()
        self.subtitles = Subtitles(
            transport, subtitles.srt, subtitles.vtt, subtitles.language or context.target
        )
        asr = result.asr_scripts or schema.AsrScripts()
        language = asr.language or schema.LanguagePair()
        self.source_locale = language.source or context.source
        self.target_locale = language.target or context.target
        self.category = asr.category
        self.voices: list[dict[str, Any]] = [v.to_wire() for v in result.voice_match]
        self.notices: list[str] = list(result.notices or [])
        self.timings: dict[str, float] = dict(result.timings or {})
        # where the files were delivered for ``output=`` (the sandbox says; None otherwise)
        self.delivery: schema.Delivery | None = result.delivery
        scripts = result.translated_scripts or schema.TranslatedScripts()
        self.engine = scripts.engine or ""
        self.poster_url = next((image.url for image in build.images if image.url), None)
        self.original = _original(result, result.source, context.material)
        self.script = _script(result, self._bytes)
        self._service = {  # what the service said of each line's fitting (sandbox extras)
            str(line.id): {
                "raw_duration": line.raw_duration,
                "stretch": line.stretch,
                "truncated": line.truncated,
            }
            for line in (result.tts.result if result.tts else [])
        }
        self._measured: dict[str, tuple[float, float]] = {}  # audio url -> (seconds, LUFS)
        self._subtitle_text: str | None = None  # what a check reads, fetched once
        self._as_made = [replace(line) for line in self.script]  # what edits are measured against
        separation = result.audio_separation
        self.no_speech_url = (separation.mns_url if separation else None) or None
        self.label = "dubbed"  # how views title it beside others
        self._held = fetch_held(
            transport,
            [self.poster_url, self.subtitles.vtt, *(line.audio_url for line in self.script)],
        )

    @classmethod
    def from_task(
        cls, transport: Transport, raw: dict[str, Any], context: DubbingContext | None
    ) -> DubbingResult:
        return cls(transport, raw, context)

    source_language = renamed("source_locale")
    target_language = renamed("target_locale")

    def save(self, directory: str | Path, stem: str = "dub") -> dict[str, Path]:
        """Download the dubbed video and audio and the subtitles into ``directory`` as
        ``<stem>.<target>.<ext>``; returns the paths written, by kind (video, audio, srt, vtt).

        >>> dub.save("out", "talk")          # {'video': Path('out/talk.fr-FR.mp4'), ...}
        """
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        base = f"{stem}.{self.target_locale or 'dub'}"
        wanted = {
            "video": (self.video.url if self.video else None, "mp4"),
            "audio": (self.audio.url if self.audio else None, "m4a"),
            "srt": (self.subtitles.srt, "srt"),
            "vtt": (self.subtitles.vtt, "vtt"),
        }
        written: dict[str, Path] = {}
        for kind, (url, default) in wanted.items():
            if url:
                suffix = default if kind in ("srt", "vtt") else format_of(url) or default
                path = folder / f"{base}.{suffix}"
                path.write_bytes(self._bytes(url))
                written[kind] = path
        return written

    def line(self, line_id: str) -> ScriptLine:
        """The script's line ``line_id`` (ids as in ``script``: "1", "2", ...)."""
        for line in self.script:
            if line.id == str(line_id):
                return line
        ids = [line.id for line in self.script]
        raise ValidationError(
            "line_id", f"no line {line_id!r} in this dub's script (its lines: {', '.join(ids)})"
        )

    @renamed_keywords(voice_id="voice")
    def edit(
        self,
        line_id: str,
        *,
        translation: str | None = None,
        voice: VoiceLike | None = None,
        role: str | None = None,
        cast: RoleVoices | None = None,
        start: float | None = None,
        end: float | None = None,
    ) -> ScriptLine:
        """Change one line for a re-dub (``client.dubbing.redub``); checked when re-dubbed.
        ``voice`` is a voice (its id, or a record with one); its provider follows it. Or
        ``role``, a role of ``cast`` (a :class:`dubkit.Cast`): its voice in the dub's locale.

        >>> dub.edit("2", translation="Bonjour à tous !", voice="sv_s2_fr_fr_story_f")
        >>> dub.edit("3", role="Alice", cast=cast)
        """
        if role is not None:
            if cast is None or voice is not None:
                raise ValidationError("role", "needs cast= (the cast that names it), and no voice=")
            voice = cast.voice(role, self.target_locale).voice_id
        line = self.line(line_id)
        for name, value in (
            ("translation", translation),
            ("voice_id", voice_id_of(voice) if voice is not None else None),
            ("start", start),
            ("end", end),
        ):
            if value is not None:
                setattr(line, name, value)
        return line

    def check(
        self, limits: quality.Limits | None = None, *, cast: HasTerms | None = None
    ) -> quality.DubCheck:
        """Every line measured before anyone listens: pace, speech past its slot or under
        the next line, cut short, silence, loudness, reading speed; with ``cast``, its
        glossary's terms. Each line's audio is fetched once (a second check fetches nothing).
        See :mod:`dubkit.results.quality` for the limits and where they come from.

        >>> dub.check().to_frame()
        """
        return quality.check(
            self, limits, cast.terms if cast is not None else None, cache=self._measured
        )

    def subtitle_text(self) -> str | None:
        """The dub's own subtitles: its WebVTT when the result holds it, else its SRT,
        fetched once; ``None`` when it has neither."""
        if self._subtitle_text is None:
            url = self.subtitles.vtt if self.held(self.subtitles.vtt) else self.subtitles.srt
            url = url or self.subtitles.vtt
            if url:
                self._subtitle_text = self._bytes(url).decode("utf-8", errors="replace")
        return self._subtitle_text

    def service_lines(self) -> dict[str, dict[str, Any]]:
        """Per line id, what the service said of fitting it (``raw_duration``, ``stretch``,
        ``truncated``: sandbox extras; empty from a service that does not say)."""
        return self._service

    def edit_from_subtitles(self, path: str | os.PathLike[str]) -> SubtitleEdits:
        """A translator's SRT or WebVTT file as this dub's translations: cues matched to
        lines by time; ``client.dubbing.redub(dub)`` then re-speaks only the lines changed.

        >>> dub.edit_from_subtitles("fr.srt")     # SubtitleEdits(fr.srt: 3 lines changed ...)
        """
        return edit_from_subtitles(self.script, path)

    def borrow_silence(self, line_id: str) -> ScriptLine:
        """Let a line's slot run on into the silence after it (to the next line, less a
        breath), so its speech need not be squeezed; re-dub to hear it."""
        line = self.line(line_id)
        later = [other.start for other in self.script if other.start > line.start]
        total = self.original.duration if self.original and self.original.duration else None
        limit = min(later) - BREATH if later else total
        if limit is None or limit <= line.end + 0.01:
            raise ValidationError("line_id", f"line {line.id} has no silence after it to borrow")
        line.end = round(limit, 3)
        return line

    def set_speed(self, line_id: str, speed: float) -> ScriptLine:
        """Speak a line at ``speed`` times its natural pace (0.8 to 1.6): its slot becomes
        its natural length over ``speed``, which a re-dub's TTS is asked to fill."""
        if not isinstance(speed, (int, float)) or not SPEEDS[0] <= speed <= SPEEDS[1]:
            raise ValidationError(
                "speed", f"from {SPEEDS[0]} to {SPEEDS[1]} times natural pace, got {speed!r}"
            )
        line = self.line(line_id)
        made = next(m for m in self._as_made if m.id == line.id)
        natural = self._service.get(line.id, {}).get("raw_duration")
        if natural is None or line.translation != made.translation:
            raise ValidationError(
                "line_id",
                f"line {line.id}'s natural length is not known "
                "(the service did not say, or its text was changed): re-dub it first",
            )
        line.end = round(line.start + float(natural) / speed, 3)
        return line

    def as_made(self) -> list[ScriptLine]:
        """The script as the service made it (copies: edits do not reach them)."""
        return [replace(line) for line in self._as_made]

    def edited(self) -> list[ScriptLine]:
        """The lines whose translation, voice or timing differ from the service's."""
        keys = ("translation", "voice_id", "start", "end")
        return [
            line
            for line, made in zip(self.script, self._as_made)
            if any(getattr(line, k) != getattr(made, k) for k in keys)
        ]

    def captions(self, side: Literal["dub", "source"] = "dub") -> str | None:
        """WebVTT captions for a player: the dub's own subtitles (the file, when held, else
        its script's translations and times), or ``"source"``: the original's words."""
        if side == "dub" and (held := self.held(self.subtitles.vtt)) is not None:
            return held.decode("utf-8", errors="replace")
        return script_captions(self.script, side)

    def held(self, url: str | None) -> bytes | None:
        """The bytes of ``url`` if this result fetched them when it was made."""
        return self._held.get(url or "")

    def _bytes(self, url: str) -> bytes:
        return self.held(url) or self._transport.download(url)

    def __repr__(self) -> str:
        kind = "video" if self.video else "audio"
        return (
            f"DubbingResult({kind}, {self.source_locale}->{self.target_locale}, "
            f"{count(len(self.script), 'line')}, {count(len(self.voices), 'voice')})"
        )

    def _repr_html_(self) -> str:
        return dubbing_html(self)


def script_captions(script: Sequence[ScriptLine], side: Literal["dub", "source"]) -> str | None:
    """WebVTT of a script's lines (its translations, or ``"source"``: what was said), at
    their times; ``None`` for a script without text."""
    cues = [
        subtitles.Cue(line.start, max(line.start, line.end), text)
        for line in script
        if (text := (line.translation if side == "dub" else line.source_text).strip())
    ]
    return subtitles.to_vtt(cues) if cues else None


def _original(
    result: schema.MediaTranslationResult,
    source: schema.DubbedSource | None,
    material: schema.Material | None,
) -> MediaFile | None:
    """The media that was dubbed: the sandbox's ``source`` extra, the material's address, or
    the alignment's video track; picture facts from the material's record when known."""
    source = source or schema.DubbedSource()
    material = material or schema.Material()
    url = source.url or material.address_url
    if not url:
        tracks = result.alignment.video if result.alignment else []
        url = tracks[0].file if tracks else None
    if not url:
        return None
    width, _, height = (material.resolution or "").partition("x")
    return MediaFile(
        url,
        source.duration,
        material.filesize,
        int(width) if width.isdigit() else None,
        int(height) if height.isdigit() else None,
    )


def _script(result: schema.MediaTranslationResult, load: Callable[[str], bytes]) -> Script:
    audio = {line.id: line for line in (result.tts.result if result.tts else [])}
    lines = Script()
    for row in result.translated_scripts.result if result.translated_scripts else []:
        tts = audio.get(row.id)
        lines.append(
            ScriptLine(
                id=str(row.id),
                start=row.start or 0.0,
                end=row.end or 0.0,
                speaker=row.speaker or "",
                source_text=row.source_text or "",
                translation=row.text or "",
                voice_id=row.voice_id or "",
                provider=row.provider or "",
                voice_name=row.speaker_display_name or "",
                audio_url=tts.tts_file if tts else None,
                duration_ms=tts.duration if tts else None,
                _load=load,
            )
        )
    return lines
