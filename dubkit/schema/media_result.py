"""The media-translation result (interface §3.6): what a finished dub delivers.

Every field is optional, as the interface says of answers; unknown fields are kept (the sandbox
adds labelled extras such as ``timings`` and ``notices``).

>>> result = MediaTranslationResult.model_validate(task.raw_result)
>>> result.build.video.url, [line.text for line in result.translated_scripts.result]
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import Wire


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


class TranslatedScripts(Wire):
    result: list[TranslatedLine] = Field(default_factory=list)


class VoiceCloneEcho(Wire):
    provider: str | None = None
    mode: str | None = None
    ref_audio: str | None = None


class VoiceMatch(Wire):
    speaker: str | None = None
    voice_id: str | None = None
    provider: str | None = None
    example_language: str | None = None
    content: str | None = None
    audio: str | None = None


class MediaTTSLine(Wire):
    id: str | None = None
    text: str | None = None
    tts_file: str | None = None
    provider: str | None = None
    voice_id: str | None = None
    clone_mode: str | None = None
    duration: int | None = None  # unit not stated by the interface


class MediaTTSLines(Wire):
    result: list[MediaTTSLine] = Field(default_factory=list)


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


class Build(Wire):
    video: MediaFile | None = None
    images: list[ImageFile] = Field(default_factory=list)
    audio: AudioFile | None = None


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


__all__ = [
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
    "MediaTranslationResult",
]
