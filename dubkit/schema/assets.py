"""Materials and voices: queries, bodies and records (§2.6-§2.7, §3)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AliasChoices, Field, StrictStr

from .base import Page, Wire, sandbox_extra

# --------------------------------------------------------------------------- materials (§2.6, §3.1)


class UploadStart(Wire):
    file_hash: StrictStr  # the MD5 of the whole file; the service compares it to the bytes
    file_name: StrictStr


class UploadComplete(UploadStart):
    s3_uri: StrictStr
    material_id: StrictStr


class MultipartInitiateAnswer(Wire):
    material_id: str | None = None
    s3_uri: str | None = None
    upload_id: str | None = None
    expires_in_seconds: int | None = None
    recommended_part_size: int | None = None


class MultipartRef(Wire):
    material_id: str | None = None
    upload_id: str | None = None
    file_hash: str | None = None
    file_name: str | None = None


PartNumber = Annotated[int, Field(ge=1, le=10000)]


class PresignParts(MultipartRef):
    part_numbers: list[PartNumber] | None = None


class PartUrl(Wire):
    part_number: int | None = None
    url: str | None = None


class PresignPartsAnswer(Wire):
    urls: list[PartUrl] = Field(default_factory=list)
    expires_in_seconds: int | None = None


class CompletedPart(Wire):
    part_number: PartNumber | None = None
    # The interface spells it eTag; accept the common "etag" too.
    e_tag: str | None = Field(
        default=None, alias="eTag", validation_alias=AliasChoices("eTag", "etag", "e_tag")
    )


class MultipartComplete(MultipartRef):
    parts: list[CompletedPart] | None = None


class MaterialIdBody(Wire):
    material_id: str | None = None


class PageQuery(Wire):
    current_page: int | None = None
    page_size: int | None = None


class MaterialQuery(PageQuery):
    """``materials.list``'s query. ``mimeType`` is from the vendor's guides, not its OpenAPI
    file (interface §8.3): only materials of that MIME type, ``video/*`` for any video."""

    mime_type: str | None = None


class Material(Wire):
    material_id: str | None = None
    category: str | None = None
    name: str | None = None
    address_url: str | None = None
    thumbnail_url: str | None = None
    audio_url: str | None = None
    resolution: str | None = None
    mime_type: str | None = None
    file_hash: str | None = None
    filesize: int | None = None
    duration: int | None = None  # milliseconds
    create_time: str | None = None
    update_time: str | None = None


class GenUploadUrlAnswer(Wire):
    upload_url: str | None = None
    material: Material | None = None  # only when these bytes are already a material
    s3_uri: str | None = None
    material_id: str | None = None


class MaterialPage(Page):
    records: list[Material] = Field(default_factory=list)  # type: ignore[assignment]


# --------------------------------------------------------------------------- voices (§2.7, §3.2-3.3)
# The list filters and orderings are free strings on the wire: the documented values are
# young/adult/senior, any/high, exclude/include, asc/desc and the orderBy names, but a value
# the service adds later must reach it.


class PresetVoiceQuery(Wire):
    voice_id: str | None = None
    search_name: str | None = None
    locale: str | None = None
    age: str | None = None
    gender: str | None = None
    quality: str | None = None
    category: str | None = None
    emotion_prompt: str | None = None
    top_ids: list[str] | None = None
    current_page: int | None = None
    page_size: int | None = None
    order_by: str | None = None
    order: str | None = None


class CloneVoiceQuery(Wire):
    voice_id: str | None = None
    voice_ids: list[str] | None = None
    search_name: str | None = None
    current_page: int | None = None
    page_size: int | None = None
    order_by: str | None = None
    order: str | None = None


class CloneRename(Wire):
    voice_id: str | None = None
    voice_name: str | None = None


class VoiceIdBody(Wire):
    voice_id: str | None = None


class PresetVoice(Wire):
    voice_id: str | None = None
    local_name: str | None = None
    display_name: str | None = None
    locale: str | None = None
    locale_name: str | None = None
    provider: str | None = None
    gender: str | None = None
    style: str | None = None
    role_play: str | None = None
    description: str | None = None
    personalities: str | None = None
    personality_list: list[str] | None = None
    scenarios: str | None = None
    scenario_list: list[str] | None = None
    is_hd: int | None = None
    is_preferred: int | None = None
    score: float | None = None
    cover: str | None = None
    audio: str | None = None
    create_time: str | None = None
    update_time: str | None = None
    age: str | None = sandbox_extra("young, adult or senior: what the list's age filter matches")
    category: str | None = sandbox_extra("what the list's category filter matches")
    supports_emotion_prompt: bool | None = sandbox_extra("whether emoPrompt changes its delivery")
    preview_text: str | None = sandbox_extra("what its preview says (shown beside the player)")


class ClonedVoice(Wire):
    voice_id: str | None = None
    name: str | None = None
    provider: str | None = None
    example_language: str | None = None
    content: str | None = None
    audio: str | None = None
    task_id: str | None = None
    create_time: str | None = None
    update_time: str | None = None


class PresetVoicePage(Page):
    records: list[PresetVoice] = Field(default_factory=list)  # type: ignore[assignment]


class ClonedVoicePage(Page):
    records: list[ClonedVoice] = Field(default_factory=list)  # type: ignore[assignment]
