"""Tasks, materials and voices: queries, bodies and records (§2.5-§2.7, §3)."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import AliasChoices, Field, StrictStr, field_validator

from .base import Wire

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
