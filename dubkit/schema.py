"""Wire records and request shapes of the service (interface §2-§4), in one place.

Python names are snake_case, the wire is camelCase (``voice_id`` <-> ``voiceId``). Unknown
fields are kept in both directions, so a newer service field survives a round trip and a caller
can send a field dubkit does not model yet. Only the limits the interface states are enforced
(≤ 50 lines, 0 ≤ emoWeight ≤ 1, contextWindow 1-20, ...); open values (locales, free strings)
are left to the service.

Both the client (before sending) and the sandbox (on receipt) validate with these models, so a
rule lives here once.

>>> TranslateRequest.model_validate({"language": {"source": "en-US", "target": "fr-FR"},
...                                  "segments": [{"text": "Hello"}]}).to_wire()
{'language': {'source': 'en-US', 'target': 'fr-FR'}, 'segments': [{'text': 'Hello'}]}
"""

from __future__ import annotations

from typing import Any, Literal, Optional, TypeVar

from pydantic import (AliasChoices, BaseModel, ConfigDict, Field, StrictStr, field_validator,
                      model_validator)
from pydantic.alias_generators import to_camel

W = TypeVar("W", bound="Wire")
MAX_LINES = 50          # TTS lines and translation segments per request
MAX_IDEMPOTENCY_KEY = 64


class Wire(BaseModel):
    """Base of every wire shape: camelCase aliases, snake_case names, extra fields kept."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow",
                              protected_namespaces=())

    def to_wire(self) -> dict[str, Any]:
        """The JSON body to send: camelCase, unset fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


# --------------------------------------------------------------------------- shared pieces

class Language(Wire):
    source: Optional[str] = None
    target: Optional[str] = None


class Page(Wire):
    """One page of a list answer: ``records`` and the ``total`` matching."""

    records: list[dict[str, Any]] = Field(default_factory=list)
    total: int = 0


class AsyncAcceptance(Wire):
    """What an async create answers: the task was accepted, results come later."""

    task_id: str
    created_at: Optional[str] = None
    task_type: Optional[str] = None   # media translation only
    status: Optional[str] = None      # media translation only


# --------------------------------------------------------------------------- TTS (§2.1)

TTSFormat = Literal["wav", "mp3", "m4a"]


class TTSLine(Wire):
    text: StrictStr = Field(min_length=1)
    voice_id: Optional[str] = None
    timbre_ref_audio: Optional[str] = None
    emo_weight: Optional[float] = Field(default=None, ge=0, le=1)
    emo_ref_audio: Optional[str] = None
    emo_prompt: Optional[str] = None
    duration: Optional[float] = Field(default=None, gt=0)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("text must not be blank")
        return text

    @model_validator(mode="after")
    def _needs_a_voice(self) -> "TTSLine":
        if not self.voice_id and not self.timbre_ref_audio:
            raise ValueError("each line needs voiceId or timbreRefAudio")
        return self


class TTSRequest(Wire):
    language: Optional[Language] = None
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
    start: Optional[float] = Field(default=None, ge=0)
    end: Optional[float] = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _span(self) -> "TranslateSegment":
        if (self.start is None) != (self.end is None):
            raise ValueError("start and end must be given together")
        if self.start is not None and self.end is not None and self.end < self.start:
            raise ValueError(f"end ({self.end}) must be >= start ({self.start})")
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
    source: StrictStr = Field(min_length=1)
    target: StrictStr = Field(min_length=1)


class TranslateRequest(Wire):
    language: TranslateLanguage
    segments: list[TranslateSegment] = Field(min_length=1, max_length=MAX_LINES)
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
    provider: Optional[str] = None
    voice_id: StrictStr


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
    material_id: StrictStr = Field(min_length=1)


class MediaLanguage(Wire):
    source: Optional[str] = None
    target: StrictStr = Field(min_length=1)


class MediaTranslationRequest(Wire):
    task_type: Literal["vt", "at"]
    source: MediaSource
    language: MediaLanguage
    options: MediaOptions
    extra_data: Optional[dict[str, Any]] = None


# --------------------------------------------------------------------------- tasks (§2.5, §3.4)

TaskType = Literal["vt", "at", "tts", "cloneVoice", "textTranslation"]
TERMINAL_STATUSES = frozenset({"finished", "failed"})


class TaskListQuery(Wire):
    task_type: Optional[TaskType] = None
    status: Optional[str] = None
    current_page: Optional[int] = Field(default=None, ge=1)
    page_size: Optional[int] = Field(default=None, ge=1)


class TaskSummary(Wire):
    task_id: str
    task_type: Optional[str] = None
    status: Optional[str] = None
    created_at: Optional[str] = None
    updated_at: Optional[str] = None


class TaskDetail(Wire):
    task_id: str
    task_type: Optional[str] = None
    status: Optional[str] = None
    result: Optional[dict[str, Any]] = None


class TaskIdBody(Wire):
    task_id: StrictStr = Field(min_length=1)


# --------------------------------------------------------------------------- materials (§2.6, §3.1)

class UploadStart(Wire):
    file_hash: StrictStr = Field(pattern=r"^[0-9a-fA-F]{32}$")
    file_name: StrictStr = Field(min_length=1)


class GenUploadUrlAnswer(Wire):
    upload_url: Optional[str] = None
    material: Optional[dict[str, Any]] = None
    s3_uri: Optional[str] = None
    material_id: Optional[str] = None


class UploadComplete(UploadStart):
    s3_uri: StrictStr
    material_id: StrictStr


class MultipartInitiateAnswer(Wire):
    material_id: str
    s3_uri: Optional[str] = None
    upload_id: str
    expires_in_seconds: Optional[int] = None
    recommended_part_size: Optional[int] = None


class MultipartRef(Wire):
    material_id: Optional[str] = None
    upload_id: Optional[str] = None
    file_hash: Optional[str] = None
    file_name: Optional[str] = None


class PresignParts(MultipartRef):
    part_numbers: Optional[list[int]] = None

    @field_validator("part_numbers")
    @classmethod
    def _part_range(cls, numbers: Optional[list[int]]) -> Optional[list[int]]:
        for number in numbers or []:
            if not 1 <= number <= 10000:
                raise ValueError(f"part numbers run from 1 to 10000, got {number}")
        return numbers


class PartUrl(Wire):
    part_number: int
    url: str


class PresignPartsAnswer(Wire):
    urls: list[PartUrl] = Field(default_factory=list)
    expires_in_seconds: Optional[int] = None


class CompletedPart(Wire):
    part_number: int = Field(ge=1, le=10000)
    # The interface spells it eTag; accept the common "etag" too.
    e_tag: str = Field(alias="eTag", validation_alias=AliasChoices("eTag", "etag", "e_tag"))


class MultipartComplete(MultipartRef):
    parts: Optional[list[CompletedPart]] = None


class MaterialIdBody(Wire):
    material_id: Optional[str] = None


class PageQuery(Wire):
    current_page: Optional[int] = Field(default=None, ge=1)
    page_size: Optional[int] = Field(default=None, ge=1)


class Material(Wire):
    material_id: str
    category: Optional[str] = None
    name: Optional[str] = None
    address_url: Optional[str] = None
    thumbnail_url: Optional[str] = None
    audio_url: Optional[str] = None
    resolution: Optional[str] = None
    mime_type: Optional[str] = None
    file_hash: Optional[str] = None
    filesize: Optional[int] = None
    duration: Optional[int] = None     # milliseconds
    create_time: Optional[str] = None
    update_time: Optional[str] = None


# --------------------------------------------------------------------------- voices (§2.7, §3.2-3.3)

Order = Literal["asc", "desc"]


class PresetVoiceQuery(Wire):
    voice_id: Optional[str] = None
    search_name: Optional[str] = None
    locale: Optional[str] = None
    age: Optional[Literal["young", "adult", "senior"]] = None
    gender: Optional[str] = None
    quality: Optional[Literal["any", "high"]] = None
    category: Optional[str] = None
    emotion_prompt: Optional[Literal["exclude", "include"]] = None
    top_ids: Optional[list[str]] = None
    current_page: Optional[int] = Field(default=None, ge=1)
    page_size: Optional[int] = Field(default=None, ge=1)
    order_by: Optional[Literal["voiceId", "score", "create_time", "update_time", "is_preferred"]] = None
    order: Optional[Order] = None


class CloneVoiceQuery(Wire):
    voice_id: Optional[str] = None
    voice_ids: Optional[list[str]] = None
    search_name: Optional[str] = None
    current_page: Optional[int] = Field(default=None, ge=1)
    page_size: Optional[int] = Field(default=None, ge=1)
    order_by: Optional[Literal["voiceId", "name", "create_time", "update_time"]] = None
    order: Optional[Order] = None


class CloneRename(Wire):
    voice_id: Optional[str] = None
    voice_name: Optional[str] = None


class VoiceIdBody(Wire):
    voice_id: Optional[str] = None


class PresetVoice(Wire):
    voice_id: str
    local_name: Optional[str] = None
    display_name: Optional[str] = None
    locale: Optional[str] = None
    locale_name: Optional[str] = None
    provider: Optional[str] = None
    gender: Optional[str] = None
    style: Optional[str] = None
    role_play: Optional[str] = None
    description: Optional[str] = None
    personalities: Optional[str] = None
    personality_list: Optional[list[str]] = None
    scenarios: Optional[str] = None
    scenario_list: Optional[list[str]] = None
    is_hd: Optional[int] = None
    is_preferred: Optional[int] = None
    score: Optional[float] = None
    cover: Optional[str] = None
    audio: Optional[str] = None
    create_time: Optional[str] = None
    update_time: Optional[str] = None


class ClonedVoice(Wire):
    voice_id: str
    name: Optional[str] = None
    provider: Optional[str] = None
    example_language: Optional[str] = None
    content: Optional[str] = None
    audio: Optional[str] = None
    task_id: Optional[str] = None
    create_time: Optional[str] = None
    update_time: Optional[str] = None


# --------------------------------------------------------------------------- webhooks (§4.4)

WEBHOOK_EVENTS = ("openapi-tts", "openapi-translate", "openapi-clone-voice",
                  "openapi-media-translation")


class WebhookEnvelope(Wire):
    code: Optional[int] = None
    version: Optional[str] = None
    event: Optional[str] = None
    pipeline_key: Optional[str] = None
    message: Optional[str] = None
    extra_data: Optional[dict[str, Any]] = None
    data: dict[str, Any]


# --------------------------------------------------------------------------- the operation table

class Operation(BaseModel):
    """One of the 22 operations: where it lives and what its body looks like."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    method: Literal["GET", "POST"]
    path: str                       # below /openapi/v1
    body: Optional[type[Wire]] = None
    query: Optional[type[Wire]] = None
    idempotency_required: bool = False

    @property
    def mutating(self) -> bool:
        return self.method == "POST"


def _post(name: str, path: str, body: type[Wire] | None, *, key: bool = True) -> Operation:
    return Operation(name=name, method="POST", path=path, body=body, idempotency_required=key)


def _get(name: str, path: str, query: type[Wire] | None) -> Operation:
    return Operation(name=name, method="GET", path=path, query=query)


OPERATIONS: tuple[Operation, ...] = (
    _post("tts.create", "/task/tts/create", TTSRequest),
    _post("tts.create_async", "/task/tts/create-async", TTSAsyncRequest),
    _post("translate.create", "/task/translate/create", TranslateRequest),
    _post("translate.create_async", "/task/translate/create-async", TranslateAsyncRequest),
    _post("clone.create", "/task/clone-voice/create", CloneRequest),
    _post("clone.create_async", "/task/clone-voice/create-async", CloneAsyncRequest),
    _post("media.create_async", "/task/media-translation/create-async", MediaTranslationRequest),
    _get("tasks.list", "/tasks/list", TaskListQuery),
    _get("tasks.detail", "/tasks/detail", TaskIdBody),
    _post("tasks.delete", "/tasks/delete", TaskIdBody),
    _post("materials.gen_upload_url", "/assets/material/upload/gen-upload-url", UploadStart),
    _post("materials.complete", "/assets/material/upload/complete", UploadComplete),
    _post("materials.multipart_initiate", "/assets/material/upload/multipart/initiate", UploadStart),
    _post("materials.multipart_presign", "/assets/material/upload/multipart/presign-parts", PresignParts),
    _post("materials.multipart_complete", "/assets/material/upload/multipart/complete", MultipartComplete),
    _post("materials.multipart_abort", "/assets/material/upload/multipart/abort", MultipartRef),
    _get("materials.list", "/assets/material/list", PageQuery),
    _post("materials.delete", "/assets/material/delete", MaterialIdBody),
    _post("voices.presets", "/assets/voice/basic/list", PresetVoiceQuery, key=False),
    _post("voices.clones", "/assets/voice/clone/list", CloneVoiceQuery, key=False),
    _post("voices.rename", "/assets/voice/clone/update", CloneRename),
    _post("voices.delete", "/assets/voice/clone/delete", VoiceIdBody),
)

OPERATIONS_BY_PATH: dict[tuple[str, str], Operation] = {(op.method, op.path): op for op in OPERATIONS}


# --------------------------------------------------------------------------- validation

def field_path(loc: tuple[Any, ...]) -> str:
    """``('segments', 3, 'end')`` -> ``'segments[3].end'``; the body itself is ``'body'``."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "body"


def parse(model: type[W], payload: Any) -> W:
    """Validate ``payload`` (wire dict, snake_case dict or model) into ``model``.

    Raises :class:`dubkit.errors.ValidationError` naming the first bad field by its wire name.
    """
    from pydantic import ValidationError as PydanticError

    from .errors import ValidationError

    if isinstance(payload, model):
        return payload
    if isinstance(payload, BaseModel):
        payload = payload.model_dump(by_alias=True, exclude_none=True)
    try:
        return model.model_validate(payload)
    except PydanticError as exc:
        first = exc.errors(include_url=False)[0]
        problem = first["msg"].removeprefix("Value error, ")
        value = first.get("input")
        if first["type"] == "missing":
            problem = "is required"
        elif first["type"] == "too_long":
            problem = (f"at most {first['ctx']['max_length']} items per request, "
                       f"got {first['ctx']['actual_length']}")
        elif not isinstance(value, (dict, list)):
            problem += f" (got {_short(value)})"
        raise ValidationError(field_path(tuple(first["loc"])), problem) from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
