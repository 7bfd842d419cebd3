"""Requests and results of the products (§2.1-§2.4): TTS, translation, cloning, media; their
rows are in :mod:`dubkit.schema.products`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictStr, field_validator, model_validator

from .base import MAX_LINES, AsyncAcceptance, SandboxExtra, Wire, rule, sandbox_extra

# --------------------------------------------------------------------------- TTS (§2.1)

TTSFormat = Literal["wav", "mp3", "m4a"]


class TTSLine(Wire):
    text: StrictStr
    voice_id: str | None = None
    timbre_ref_audio: str | None = None
    emo_weight: float | None = Field(default=None, ge=0, le=1)
    emo_ref_audio: str | None = None
    emo_prompt: str | None = None
    duration: float | None = None

    @model_validator(mode="after")
    def _needs_a_voice(self) -> TTSLine:
        # The interface's guidance (§7.2 #6): the schema alone would allow a line with no voice.
        if not self.voice_id and not self.timbre_ref_audio:
            raise rule("each line needs voiceId or timbreRefAudio")
        return self


class TTSLanguage(Wire):
    target: str | None = None


class TTSRequest(Wire):
    language: TTSLanguage | None = None
    trim: bool | None = None
    data: list[TTSLine] = Field(min_length=1, max_length=MAX_LINES)
    output_format: TTSFormat | None = None


class TTSAsyncRequest(TTSRequest):
    extra_data: dict[str, Any] | None = None


class TTSResultItem(Wire):
    uri: str | None = None
    duration: float | None = None
    error_message: str | None = None
    emotion: str | None = sandbox_extra("the delivery the sandbox applied")


class TTSResult(Wire):
    task_id: str | None = None
    results: list[TTSResultItem] = Field(default_factory=list)
    created_at: str | None = None
    notices: list[str] | None = sandbox_extra(
        "each way the sandbox spoke other than asked, and why"
    )


# --------------------------------------------------------------------------- translation (§2.2)


class TranslateSegment(Wire):
    text: StrictStr
    gender: Literal["male", "female"] | None = None
    speaker: str | None = None
    locale: str | None = None
    context: list[StrictStr] | None = None
    start: float | None = None
    end: float | None = None

    @model_validator(mode="after")
    def _span(self) -> TranslateSegment:
        if (self.start is None) != (self.end is None):
            raise rule("start and end must be given together")
        if self.start is not None and self.end is not None and self.end < self.start:
            raise rule(f"end ({self.end}) must be >= start ({self.start})")
        return self


class SourceContext(Wire):
    mode: Literal["independent", "provided_only", "neighbor"] | None = None
    context_window: int | None = Field(default=None, ge=1, le=20)


class SceneCustomized(Wire):
    scene: Literal["video", "audio", "subtitle", "voiceover"] | None = None
    allow_stutter: bool | None = None


class TranslateOptions(Wire):
    source_context: SourceContext | None = None
    scene_customized: SceneCustomized | None = None
    glossary: dict[StrictStr, StrictStr] | None = None
    prompt: str | None = None
    skip_missing_translation_check: bool | None = None


class TranslateLanguage(Wire):
    source: StrictStr
    target: StrictStr


class TranslateRequest(Wire):
    language: TranslateLanguage
    segments: list[TranslateSegment] = Field(max_length=MAX_LINES)
    options: TranslateOptions | None = None


class TranslateAsyncRequest(TranslateRequest):
    extra_data: dict[str, Any] | None = None


class TranslateItem(Wire):
    text: str | None = None
    error_message: str | None = None
    context_used: list[str] | None = sandbox_extra("the neighbour lines that informed it")


class TranslateResult(Wire):
    task_id: str | None = None
    items: list[TranslateItem] = Field(default_factory=list)
    created_at: str | None = None
    engine: str | None = sandbox_extra("which engine translated (the pseudo-translation)")


# --------------------------------------------------------------------------- voice clone (§2.3)

CloneProvider = Literal["V1", "V2", "V3", "V4", "V5"]


class CloneRequest(Wire):
    voice_name: str | None = None
    provider: CloneProvider | None = None
    ref_audio: str | None = None
    sample_language: str | None = None
    sample_text: str | None = None


class CloneAsyncRequest(CloneRequest):
    extra_data: dict[str, Any] | None = None


class CloneMeasurement(SandboxExtra):
    """What the sandbox heard in a clone's recording (a sandbox extra)."""

    pitch_hz: float | None = None
    pitch_range_hz: float | None = None
    syllables_per_second: float | None = None
    gender: str | None = None


class CloneResult(Wire):
    task_id: str | None = None
    voice_id: str | None = None
    created_at: str | None = None
    provider: str | None = sandbox_extra("the clone engine used")
    measured: CloneMeasurement | None = sandbox_extra("what was heard in the recording")


# --------------------------------------------------------------------------- media translation (§2.4)


class VoiceCloneOptions(Wire):
    style: Literal["emotional", "consistent"] | None = None
    mode: Literal["role", "mix", "sentence"] | None = None
    provider: CloneProvider | None = None


class TranscribeOptions(Wire):
    mode: Literal["fast", "normal"] | None = None
    type: str | None = None


class MediaTranslateOptions(Wire):
    mode: Literal["default", "machine"] | None = None
    prompt: str | None = None


class SeparationOptions(Wire):
    mode: str | None = None


class EnableFlag(Wire):
    enable: bool | None = None


class SelectedVoice(Wire):
    """One speaker slot's voice; without ``voiceId`` the service chooses for that slot."""

    provider: str | None = None
    voice_id: StrictStr | None = None


class VoiceSpeakers(Wire):
    selected_voices_list: list[SelectedVoice] | None = None
    speaker_num: str | None = None
    timbre_method: Literal["clone", "smart"] | None = None

    @field_validator("speaker_num")
    @classmethod
    def _auto_or_number(cls, value: str | None) -> str | None:
        if value is not None and value != "auto" and not value.isdigit():
            raise ValueError("speakerNum must be 'auto' or a number as a string, e.g. '2'")
        return value


class MediaOptions(Wire):
    voice_clone: VoiceCloneOptions
    transcribe: TranscribeOptions | None = None
    translate: MediaTranslateOptions | None = None
    separation: SeparationOptions | None = None
    dynamic_video_length: EnableFlag | None = None
    lipsync: EnableFlag | None = None
    text: dict[str, Any] | None = None
    voice_speakers: VoiceSpeakers | None = None


class MediaSource(Wire):
    """What a dub is made from: a registered material, or a file the service fetches from a
    URL (``sourceUrl``, from the vendor's guides, not its OpenAPI file: interface §8.2)."""

    material_id: StrictStr | None = None
    source_url: StrictStr | None = None

    @model_validator(mode="after")
    def _one_source(self) -> MediaSource:
        if (self.material_id is None) == (self.source_url is None):
            raise rule("give exactly one of materialId and sourceUrl")
        return self


class MediaLanguage(Wire):
    source: str | None = None
    target: StrictStr


class MediaAcceptance(AsyncAcceptance):
    """What media-translation create-async answers: also the effective type and the status."""

    task_type: str | None = None
    status: str | None = None


class MediaTranslationRequest(Wire):
    task_type: Literal["vt", "at"]
    source: MediaSource
    language: MediaLanguage
    options: MediaOptions
    extra_data: dict[str, Any] | None = None
    # From the vendor's guides, not its OpenAPI file (interface §8.2): the results delivered
    # to the customer's own bucket. Its fields are not shown, so it is any object, sent as is.
    output: dict[str, Any] | None = None
