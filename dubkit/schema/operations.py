"""Webhook envelopes and the table of the 22 operations (§2.0, §4.4)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .assets import (
    CloneRename,
    CloneVoiceQuery,
    MaterialIdBody,
    MultipartComplete,
    MultipartRef,
    PageQuery,
    PresetVoiceQuery,
    PresignParts,
    TaskIdBody,
    TaskListQuery,
    UploadComplete,
    UploadStart,
    VoiceIdBody,
)
from .base import Wire
from .jobs import (
    CloneAsyncRequest,
    CloneRequest,
    MediaTranslationRequest,
    TranslateAsyncRequest,
    TranslateRequest,
    TTSAsyncRequest,
    TTSRequest,
)
from .media_result import MediaTranslationResult

# --------------------------------------------------------------------------- webhooks (§4.4)


class WebhookEnvelope(Wire):
    """One delivery. ``data`` is required, but a failed task's ``data`` is not specified by the
    interface (null, ``{}``, or only ``taskId``): it is accepted whatever it is."""

    code: int | None = None
    version: str | None = None
    event: str | None = None
    pipeline_key: str | None = None
    message: str | None = None
    extra_data: dict[str, Any] | None = None
    data: Any


class MediaEventData(Wire):
    """``data`` of ``openapi-media-translation``: the task's own status and its result."""

    task_id: str | None = None
    task_type: str | None = None
    status: str | None = None
    result: MediaTranslationResult | None = None


# --------------------------------------------------------------------------- the operation table


class Operation(BaseModel):
    """One of the 22 operations: where it lives and what its body looks like."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    method: Literal["GET", "POST"]
    path: str  # below /openapi/v1
    body: type[Wire] | None = None
    query: type[Wire] | None = None
    idempotency_required: bool = False


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
    _post(
        "materials.multipart_initiate", "/assets/material/upload/multipart/initiate", UploadStart
    ),
    _post(
        "materials.multipart_presign",
        "/assets/material/upload/multipart/presign-parts",
        PresignParts,
    ),
    _post(
        "materials.multipart_complete",
        "/assets/material/upload/multipart/complete",
        MultipartComplete,
    ),
    _post("materials.multipart_abort", "/assets/material/upload/multipart/abort", MultipartRef),
    _get("materials.list", "/assets/material/list", PageQuery),
    _post("materials.delete", "/assets/material/delete", MaterialIdBody),
    _post("voices.presets", "/assets/voice/basic/list", PresetVoiceQuery, key=False),
    _post("voices.clones", "/assets/voice/clone/list", CloneVoiceQuery, key=False),
    _post("voices.rename", "/assets/voice/clone/update", CloneRename),
    _post("voices.delete", "/assets/voice/clone/delete", VoiceIdBody),
)

OPERATIONS_BY_PATH: dict[tuple[str, str], Operation] = {
    (op.method, op.path): op for op in OPERATIONS
}
