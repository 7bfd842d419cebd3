"""The media-translation result (interface §3.6): what a finished dub delivers.

Every field is optional, as the interface says of answers; unknown fields are kept. The fields
marked :func:`~dubkit.schema.base.sandbox_extra` (and the :class:`~dubkit.schema.base.SandboxExtra` models)
are the labelled extras the local sandbox adds: ``timings``, ``notices``, ``source``, the
subtitle files on ``build``, each line's stretch, and the like.

>>> result = MediaTranslationResult.model_validate(task.raw_result)
>>> result.build.video.url, [line.text for line in result.translated_scripts.result]
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import SandboxExtra, Wire, sandbox_extra


class Resolution(Wire):
    width: int | None = None
    height: int | None = None


class MediaFile(Wire):
    url: str | None = None
    duration: float | None = None  # seconds
    size: int | None = None  # bytes
    resolution: Resolution | None = None
    fps: int | None = None


class ImageFile(Wire):
    url: str | None = None
    size: int | None = None
    resolution: Resolution | None = None


class AudioFile(Wire):
    url: str | None = None
    duration: float | None = None
    size: int | None = None
    fps: int | None = None


class LanguagePair(Wire):
    source: str | None = None
    target: str | None = None


class AsrLine(Wire):
    speaker: str | None = None
    text: str | None = None
    locale: str | None = None
    emotion: str | None = None
    name: str | None = None
    gender: str | None = None
    age: str | None = None
    id: str | None = None
    text_with_bracket: str | None = None
    text_with_break: str | None = None
    start: float | None = None
    end: float | None = None
    placeholder: bool | None = sandbox_extra("no speech recogniser: the text is a placeholder")


class AsrScripts(Wire):
    asr_results: list[AsrLine] = Field(default_factory=list)
    mono_audio: str | None = None
    speaker_num: int | None = None
    language: LanguagePair | None = None
    category: str | None = None
    industry: str | None = None
    keywords: list[str] | None = None
    ctc_enabled: bool | None = None


class AudioSeparation(Wire):
    sfx_url: str | None = None
    music_url: str | None = None
    vocal_url: str | None = None
    speech_url: str | None = None
    other_url: str | None = None
    mns_url: str | None = None  # music and sound, no speech


class TranslatedLine(Wire):
    """One dubbed line. Its ``voice_id`` and ``provider`` are resent together when edited."""

    start: float | None = None
    end: float | None = None
    source_text: str | None = None
    text: str | None = None
    speaker: str | None = None
    locale: str | None = None
    gender: str | None = None
    id: str | None = None
    voice_id: str | None = None
    provider: str | None = None
    speaker_display_name: str | None = None
    emotion: str | None = None
    age: str | None = None
    mode: str | None = None
    source_syllable: int | None = None
    target_syllable: int | None = None
    source_start: float | None = sandbox_extra("where the line is in the original, seconds")
    source_end: float | None = sandbox_extra("where the line ends in the original, seconds")


class TranslatedScripts(Wire):
    result: list[TranslatedLine] = Field(default_factory=list)
    prompt: str | None = sandbox_extra("the translation prompt as understood")
    mode: str | None = sandbox_extra("the translation mode as understood")
    engine: str | None = sandbox_extra("which engine translated (the pseudo-translation)")


class VoiceCloneEcho(Wire):
    provider: str | None = None
    mode: str | None = None
    ref_audio: str | None = None
    style: str | None = sandbox_extra("the clone style as understood")
    timbre_method: str | None = sandbox_extra("the timbre method as understood")


class VoiceMatch(Wire):
    speaker: str | None = None
    voice_id: str | None = None
    provider: str | None = None
    example_language: str | None = None
    content: str | None = None
    audio: str | None = None
    name: str | None = sandbox_extra("the voice's name")
    kind: str | None = sandbox_extra("preset, or a clone made for this dub")
    gender: str | None = sandbox_extra("the voice's gender")
    lines: list[str] | None = sandbox_extra("the ids of the lines this voice speaks")


class MediaTTSLine(Wire):
    id: str | None = None
    text: str | None = None
    tts_file: str | None = None
    provider: str | None = None
    voice_id: str | None = None
    clone_mode: str | None = None
    duration: int | None = None  # unit not stated by the interface
    raw_duration: float | None = sandbox_extra("the line as spoken, before fitting, seconds")
    stretch: float | None = sandbox_extra("how much the line was sped up to fit its place")
    truncated: bool | None = sandbox_extra("too long for its place even at double speed")


class MediaTTSLines(Wire):
    result: list[MediaTTSLine] = Field(default_factory=list)
    engine: str | None = sandbox_extra("which engine spoke the lines")
    sample_rate: int | None = sandbox_extra("the lines' sample rate, Hz")


class Track(Wire):
    file: str | None = None
    template_id: int | None = None
    tracks_times: list[float] | None = None
    time_range: list[float] | None = None
    volume_scale: float | None = None


class Alignment(Wire):
    audio: list[Track] = Field(default_factory=list)
    subtitle: list[Any] = Field(default_factory=list)
    video: list[Track] = Field(default_factory=list)
    timeline_stretch: float | None = sandbox_extra("the whole timeline's stretch (dynamic length)")


class SubtitleFiles(SandboxExtra):
    """The dub's subtitle files (a sandbox extra on ``build``)."""

    srt: str | None = None
    vtt: str | None = None
    language: str | None = None
    cues: int | None = None


class SubtitleCue(SandboxExtra):
    """One entry of ``alignment.subtitle`` as the sandbox writes it (the interface leaves the
    entries' shape open)."""

    id: str | None = None
    start: float | None = None
    end: float | None = None
    text: str | None = None


class Build(Wire):
    video: MediaFile | None = None
    images: list[ImageFile] = Field(default_factory=list)
    audio: AudioFile | None = None
    subtitles: SubtitleFiles | None = sandbox_extra("the dub's subtitle files")


class DubbedSource(SandboxExtra):
    """The material that was dubbed (a sandbox extra); ``source_url`` the URL it was fetched
    from, for a dub of ``source.sourceUrl``."""

    source_url: str | None = None
    material_id: str | None = None
    url: str | None = None
    category: str | None = None
    name: str | None = None
    duration: float | None = None  # seconds
    credits: int | None = None  # what the dub was charged


class OptionsEcho(SandboxExtra):
    """The options as the sandbox's pipeline understood them, defaults filled in (an extra)."""

    mode: str | None = None
    style: str | None = None
    provider: str | None = None
    timbre_method: str | None = None
    speaker_num: str | None = None  # "auto" or a count
    separation: str | None = None
    dynamic_video_length: bool | None = None
    lipsync: bool | None = None
    transcribe: dict[str, Any] | None = None  # mode, type
    translate: dict[str, Any] | None = None  # mode, prompt
    text: dict[str, Any] | None = None  # burn, soft, style


class LipsyncEcho(SandboxExtra):
    """Lip sync as requested and as applied (a sandbox extra: the sandbox has none)."""

    requested: bool | None = None
    applied: bool | None = None
    reason: str | None = None


class Delivery(SandboxExtra):
    """Where the sandbox delivered a dub's files for ``output`` (a sandbox extra): its local
    stand-in for the bucket, each object's key and the URL it is served at."""

    bucket: str | None = None
    prefix: str | None = None
    location: str | None = None
    objects: list[dict[str, str]] = Field(default_factory=list)
    unused_fields: list[str] = Field(default_factory=list)
    note: str | None = None


class MediaTranslationResult(Wire):
    compress: dict[str, MediaFile] = Field(default_factory=dict)
    asr_scripts: AsrScripts | None = None
    audio_separation: AudioSeparation | None = None
    translated_scripts: TranslatedScripts | None = None
    voice_clone: VoiceCloneEcho | None = None
    voice_match: list[VoiceMatch] = Field(default_factory=list)
    tts: MediaTTSLines | None = None
    alignment: Alignment | None = None
    build: Build | None = None
    task_id: str | None = sandbox_extra("the task this is the result of")
    source: DubbedSource | None = sandbox_extra("the material that was dubbed")
    lipsync: LipsyncEcho | None = sandbox_extra("lip sync as requested and as applied")
    options: OptionsEcho | None = sandbox_extra("the options as the pipeline understood them")
    notices: list[str] | None = sandbox_extra("each option not honoured as asked, and why")
    timings: dict[str, float] | None = sandbox_extra("seconds each stage took")
    delivery: Delivery | None = sandbox_extra("where the files went, for output (a bucket)")


__all__ = [
    "Delivery",
    "Resolution",
    "MediaFile",
    "ImageFile",
    "AudioFile",
    "LanguagePair",
    "AsrLine",
    "AsrScripts",
    "AudioSeparation",
    "TranslatedLine",
    "TranslatedScripts",
    "VoiceCloneEcho",
    "VoiceMatch",
    "MediaTTSLine",
    "MediaTTSLines",
    "Track",
    "Alignment",
    "Build",
    "SubtitleFiles",
    "SubtitleCue",
    "DubbedSource",
    "OptionsEcho",
    "LipsyncEcho",
    "MediaTranslationResult",
]
