"""Tasks, materials and voices: queries, bodies and records (§2.5-§2.7, §3)."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import AliasChoices, Field, StrictStr, field_validator

from .base import Page, Wire

# --------------------------------------------------------------------------- tasks (§2.5, §3.4)

TaskType = Literal["vt", "at", "tts", "cloneVoice", "textTranslation"]
TERMINAL_STATUSES = frozenset({"finished", "failed"})
# Task status is a free string (§6.2). "complete" is the interface's own word for a task whose
# results are in (§7.2 #4): the same as "finished".
STATUS_SYNONYMS = {"complete": "finished"}
KNOWN_STATUSES = TERMINAL_STATUSES | {"running"}


class TaskListQuery(Wire):
    task_type: Optional[TaskType] = None
    status: Optional[str] = None
    current_page: Optional[int] = None
    page_size: Optional[int] = None


class TaskSummary(Wire):
    task_id: Optional[str] = None
    task_type: Optional[str] = None
    status: Optional[str] = None
    created_at: Optional[str] = None
    updated_at: Optional[str] = None


class TaskPage(Page):
    records: list[TaskSummary] = Field(default_factory=list)  # type: ignore[assignment]


class TaskDetail(Wire):
    task_id: Optional[str] = None
    task_type: Optional[str] = None
    status: Optional[str] = None
    result: Optional[dict[str, Any]] = None


class TaskIdBody(Wire):
    task_id: StrictStr


# --------------------------------------------------------------------------- materials (§2.6, §3.1)

class UploadStart(Wire):
    file_hash: StrictStr   # the MD5 of the whole file; the service compares it to the bytes
    file_name: StrictStr


class UploadComplete(UploadStart):
    s3_uri: StrictStr
    material_id: StrictStr


class MultipartInitiateAnswer(Wire):
    material_id: Optional[str] = None
    s3_uri: Optional[str] = None
    upload_id: Optional[str] = None
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
    part_number: Optional[int] = None
    url: Optional[str] = None


class PresignPartsAnswer(Wire):
    urls: list[PartUrl] = Field(default_factory=list)
    expires_in_seconds: Optional[int] = None


class CompletedPart(Wire):
    part_number: Optional[int] = Field(default=None, ge=1, le=10000)
    # The interface spells it eTag; accept the common "etag" too.
    e_tag: Optional[str] = Field(default=None, alias="eTag",
                                 validation_alias=AliasChoices("eTag", "etag", "e_tag"))


class MultipartComplete(MultipartRef):
    parts: Optional[list[CompletedPart]] = None


class MaterialIdBody(Wire):
    material_id: Optional[str] = None


class PageQuery(Wire):
    current_page: Optional[int] = None
    page_size: Optional[int] = None


class Material(Wire):
    material_id: Optional[str] = None
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


class GenUploadUrlAnswer(Wire):
    upload_url: Optional[str] = None
    material: Optional[Material] = None   # only when these bytes are already a material
    s3_uri: Optional[str] = None
    material_id: Optional[str] = None


class MaterialPage(Page):
    records: list[Material] = Field(default_factory=list)  # type: ignore[assignment]


# --------------------------------------------------------------------------- voices (§2.7, §3.2-3.3)
# The list filters and orderings are free strings on the wire: the documented values are
# young/adult/senior, any/high, exclude/include, asc/desc and the orderBy names, but a value
# the service adds later must reach it.

class PresetVoiceQuery(Wire):
    voice_id: Optional[str] = None
    search_name: Optional[str] = None
    locale: Optional[str] = None
    age: Optional[str] = None
    gender: Optional[str] = None
    quality: Optional[str] = None
    category: Optional[str] = None
    emotion_prompt: Optional[str] = None
    top_ids: Optional[list[str]] = None
    current_page: Optional[int] = None
    page_size: Optional[int] = None
    order_by: Optional[str] = None
    order: Optional[str] = None


class CloneVoiceQuery(Wire):
    voice_id: Optional[str] = None
    voice_ids: Optional[list[str]] = None
    search_name: Optional[str] = None
    current_page: Optional[int] = None
    page_size: Optional[int] = None
    order_by: Optional[str] = None
    order: Optional[str] = None


class CloneRename(Wire):
    voice_id: Optional[str] = None
    voice_name: Optional[str] = None


class VoiceIdBody(Wire):
    voice_id: Optional[str] = None


class PresetVoice(Wire):
    voice_id: Optional[str] = None
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
    voice_id: Optional[str] = None
    name: Optional[str] = None
    provider: Optional[str] = None
    example_language: Optional[str] = None
    content: Optional[str] = None
    audio: Optional[str] = None
    task_id: Optional[str] = None
    create_time: Optional[str] = None
    update_time: Optional[str] = None


class PresetVoicePage(Page):
    records: list[PresetVoice] = Field(default_factory=list)  # type: ignore[assignment]


class ClonedVoicePage(Page):
    records: list[ClonedVoice] = Field(default_factory=list)  # type: ignore[assignment]
