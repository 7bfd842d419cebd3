"""The media-translation result (interface §3.6): what a finished dub delivers.

Every field is optional, as the interface says of answers; unknown fields are kept (the sandbox
adds labelled extras such as ``timings`` and ``notices``).

>>> result = MediaTranslationResult.model_validate(task.raw_result)
>>> result.build.video.url, [line.text for line in result.translated_scripts.result]
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import Field

from .base import Wire


class Resolution(Wire):
    width: Optional[int] = None
    height: Optional[int] = None


class MediaFile(Wire):
    url: Optional[str] = None
    duration: Optional[float] = None     # seconds
    size: Optional[int] = None           # bytes
    resolution: Optional[Resolution] = None
    fps: Optional[int] = None


class ImageFile(Wire):
    url: Optional[str] = None
    size: Optional[int] = None
    resolution: Optional[Resolution] = None


class AudioFile(Wire):
    url: Optional[str] = None
    duration: Optional[float] = None
    size: Optional[int] = None
    fps: Optional[int] = None


class LanguagePair(Wire):
    source: Optional[str] = None
    target: Optional[str] = None


class AsrLine(Wire):
    speaker: Optional[str] = None
    text: Optional[str] = None
    locale: Optional[str] = None
    emotion: Optional[str] = None
    name: Optional[str] = None
    gender: Optional[str] = None
    age: Optional[str] = None
    id: Optional[str] = None
    text_with_bracket: Optional[str] = None
    text_with_break: Optional[str] = None
    start: Optional[float] = None
    end: Optional[float] = None


class AsrScripts(Wire):
    asr_results: list[AsrLine] = Field(default_factory=list)
    mono_audio: Optional[str] = None
    speaker_num: Optional[int] = None
    language: Optional[LanguagePair] = None
    category: Optional[str] = None
    industry: Optional[str] = None
    keywords: Optional[list[str]] = None
    ctc_enabled: Optional[bool] = None


class AudioSeparation(Wire):
    sfx_url: Optional[str] = None
    music_url: Optional[str] = None
    vocal_url: Optional[str] = None
    speech_url: Optional[str] = None
    other_url: Optional[str] = None
    mns_url: Optional[str] = None       # music and sound, no speech


class TranslatedLine(Wire):
    """One dubbed line. Its ``voice_id`` and ``provider`` are resent together when edited."""

    start: Optional[float] = None
    end: Optional[float] = None
    source_text: Optional[str] = None
    text: Optional[str] = None
    speaker: Optional[str] = None
    locale: Optional[str] = None
    gender: Optional[str] = None
    id: Optional[str] = None
    voice_id: Optional[str] = None
    provider: Optional[str] = None
    speaker_display_name: Optional[str] = None
    emotion: Optional[str] = None
    age: Optional[str] = None
    mode: Optional[str] = None
    source_syllable: Optional[int] = None
    target_syllable: Optional[int] = None


class TranslatedScripts(Wire):
    result: list[TranslatedLine] = Field(default_factory=list)


class VoiceCloneEcho(Wire):
    provider: Optional[str] = None
    mode: Optional[str] = None
    ref_audio: Optional[str] = None


class VoiceMatch(Wire):
    speaker: Optional[str] = None
    voice_id: Optional[str] = None
    provider: Optional[str] = None
    example_language: Optional[str] = None
    content: Optional[str] = None
    audio: Optional[str] = None


class MediaTTSLine(Wire):
    id: Optional[str] = None
    text: Optional[str] = None
    tts_file: Optional[str] = None
    provider: Optional[str] = None
    voice_id: Optional[str] = None
    clone_mode: Optional[str] = None
    duration: Optional[int] = None       # unit not stated by the interface


class MediaTTSLines(Wire):
    result: list[MediaTTSLine] = Field(default_factory=list)


class Track(Wire):
    file: Optional[str] = None
    template_id: Optional[int] = None
    tracks_times: Optional[list[float]] = None
    time_range: Optional[list[float]] = None
    volume_scale: Optional[float] = None


class Alignment(Wire):
    audio: list[Track] = Field(default_factory=list)
    subtitle: list[Any] = Field(default_factory=list)
    video: list[Track] = Field(default_factory=list)


class Build(Wire):
    video: Optional[MediaFile] = None
    images: list[ImageFile] = Field(default_factory=list)
    audio: Optional[AudioFile] = None


class MediaTranslationResult(Wire):
    compress: dict[str, MediaFile] = Field(default_factory=dict)
    asr_scripts: Optional[AsrScripts] = None
    audio_separation: Optional[AudioSeparation] = None
    translated_scripts: Optional[TranslatedScripts] = None
    voice_clone: Optional[VoiceCloneEcho] = None
    voice_match: list[VoiceMatch] = Field(default_factory=list)
    tts: Optional[MediaTTSLines] = None
    alignment: Optional[Alignment] = None
    build: Optional[Build] = None


__all__ = ["Resolution", "MediaFile", "ImageFile", "AudioFile", "LanguagePair", "AsrLine",
           "AsrScripts", "AudioSeparation", "TranslatedLine", "TranslatedScripts",
           "VoiceCloneEcho", "VoiceMatch", "MediaTTSLine", "MediaTTSLines", "Track",
           "Alignment", "Build", "MediaTranslationResult"]
