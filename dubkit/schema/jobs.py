"""Requests and results of the four products: TTS, translation, cloning, media (§2.1-§2.4)."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field, StrictStr, field_validator, model_validator

from .base import MAX_LINES, AsyncAcceptance, Wire, rule

# --------------------------------------------------------------------------- TTS (§2.1)

TTSFormat = Literal["wav", "mp3", "m4a"]


class TTSLine(Wire):
    text: StrictStr
    voice_id: Optional[str] = None
    timbre_ref_audio: Optional[str] = None
    emo_weight: Optional[float] = Field(default=None, ge=0, le=1)
    emo_ref_audio: Optional[str] = None
    emo_prompt: Optional[str] = None
    duration: Optional[float] = None

    @model_validator(mode="after")
    def _needs_a_voice(self) -> "TTSLine":
        # The interface's guidance (§7.2 #6): the schema alone would allow a line with no voice.
        if not self.voice_id and not self.timbre_ref_audio:
            raise rule("each line needs voiceId or timbreRefAudio")
        return self


class TTSLanguage(Wire):
    target: Optional[str] = None


class TTSRequest(Wire):
    language: Optional[TTSLanguage] = None
    trim: Optional[bool] = None
    data: list[TTSLine] = Field(min_length=1, max_length=MAX_LINES)
    output_format: Optional[TTSFormat] = None


class TTSAsyncRequest(TTSRequest):
    extra_data: Optional[dict[str, Any]] = None


class TTSResultItem(Wire):
    uri: Optional[str] = None
    duration: Optional[float] = None
    error_message: Optional[str] = None


class TTSResult(Wire):
    task_id: Optional[str] = None
    results: list[TTSResultItem] = Field(default_factory=list)
    created_at: Optional[str] = None


# --------------------------------------------------------------------------- translation (§2.2)

class TranslateSegment(Wire):
    text: StrictStr
    gender: Optional[Literal["male", "female"]] = None
    speaker: Optional[str] = None
    locale: Optional[str] = None
    context: Optional[list[StrictStr]] = None
    start: Optional[float] = None
    end: Optional[float] = None

    @model_validator(mode="after")
    def _span(self) -> "TranslateSegment":
        if (self.start is None) != (self.end is None):
            raise rule("start and end must be given together")
        if self.start is not None and self.end is not None and self.end < self.start:
            raise rule(f"end ({self.end}) must be >= start ({self.start})")
        return self


class SourceContext(Wire):
    mode: Optional[Literal["independent", "provided_only", "neighbor"]] = None
    context_window: Optional[int] = Field(default=None, ge=1, le=20)


class SceneCustomized(Wire):
    scene: Optional[Literal["video", "audio", "subtitle", "voiceover"]] = None
    allow_stutter: Optional[bool] = None


class TranslateOptions(Wire):
    source_context: Optional[SourceContext] = None
    scene_customized: Optional[SceneCustomized] = None
    glossary: Optional[dict[StrictStr, StrictStr]] = None
    prompt: Optional[str] = None
    skip_missing_translation_check: Optional[bool] = None


class TranslateLanguage(Wire):
    source: StrictStr
    target: StrictStr


class TranslateRequest(Wire):
    language: TranslateLanguage
    segments: list[TranslateSegment] = Field(max_length=MAX_LINES)
    options: Optional[TranslateOptions] = None


class TranslateAsyncRequest(TranslateRequest):
    extra_data: Optional[dict[str, Any]] = None


class TranslateItem(Wire):
    text: Optional[str] = None
    error_message: Optional[str] = None


class TranslateResult(Wire):
    task_id: Optional[str] = None
    items: list[TranslateItem] = Field(default_factory=list)
    created_at: Optional[str] = None


# --------------------------------------------------------------------------- voice clone (§2.3)

CloneProvider = Literal["V1", "V2", "V3", "V4", "V5"]


class CloneRequest(Wire):
    voice_name: Optional[str] = None
    provider: Optional[CloneProvider] = None
    ref_audio: Optional[str] = None
    sample_language: Optional[str] = None
    sample_text: Optional[str] = None


class CloneAsyncRequest(CloneRequest):
    extra_data: Optional[dict[str, Any]] = None


class CloneResult(Wire):
    task_id: Optional[str] = None
    voice_id: Optional[str] = None
    created_at: Optional[str] = None


# --------------------------------------------------------------------------- media translation (§2.4)

class VoiceCloneOptions(Wire):
    style: Optional[Literal["emotional", "consistent"]] = None
    mode: Optional[Literal["role", "mix", "sentence"]] = None
    provider: Optional[CloneProvider] = None


class TranscribeOptions(Wire):
    mode: Optional[Literal["fast", "normal"]] = None
    type: Optional[str] = None


class MediaTranslateOptions(Wire):
    mode: Optional[Literal["default", "machine"]] = None
    prompt: Optional[str] = None


class SeparationOptions(Wire):
    mode: Optional[str] = None


class EnableFlag(Wire):
    enable: Optional[bool] = None


class SelectedVoice(Wire):
    """One speaker slot's voice; without ``voiceId`` the service chooses for that slot."""

    provider: Optional[str] = None
    voice_id: Optional[StrictStr] = None


class VoiceSpeakers(Wire):
    selected_voices_list: Optional[list[SelectedVoice]] = None
    speaker_num: Optional[str] = None
    timbre_method: Optional[Literal["clone", "smart"]] = None

    @field_validator("speaker_num")
    @classmethod
    def _auto_or_number(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and value != "auto" and not value.isdigit():
            raise ValueError("speakerNum must be 'auto' or a number as a string, e.g. '2'")
        return value


class MediaOptions(Wire):
    voice_clone: VoiceCloneOptions
    transcribe: Optional[TranscribeOptions] = None
    translate: Optional[MediaTranslateOptions] = None
    separation: Optional[SeparationOptions] = None
    dynamic_video_length: Optional[EnableFlag] = None
    lipsync: Optional[EnableFlag] = None
    text: Optional[dict[str, Any]] = None
    voice_speakers: Optional[VoiceSpeakers] = None


class MediaSource(Wire):
    material_id: StrictStr


class MediaLanguage(Wire):
    source: Optional[str] = None
    target: StrictStr


class MediaAcceptance(AsyncAcceptance):
    """What media-translation create-async answers: also the effective type and the status."""

    task_type: Optional[str] = None
    status: Optional[str] = None


class MediaTranslationRequest(Wire):
    task_type: Literal["vt", "at"]
    source: MediaSource
    language: MediaLanguage
    options: MediaOptions
    extra_data: Optional[dict[str, Any]] = None
