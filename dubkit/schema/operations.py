"""The table of the service's operations (§2-§4): the products' creates and the asset calls."""

from __future__ import annotations

from .assets import (
    CloneRename,
    CloneVoiceQuery,
    MaterialIdBody,
    MaterialQuery,
    MultipartComplete,
    MultipartRef,
    PresetVoiceQuery,
    PresignParts,
    UploadComplete,
    UploadStart,
    VoiceIdBody,
)
from .base import Operation, get, post
from .products import PRODUCTS
from .tasks import TaskIdBody, TaskListQuery

_MATERIAL = "/assets/material/upload"

OPERATIONS: tuple[Operation, ...] = (
    *(op for product in PRODUCTS for op in product.creates),
    get("tasks.list", "/tasks/list", TaskListQuery),
    get("tasks.detail", "/tasks/detail", TaskIdBody),
    post("tasks.delete", "/tasks/delete", TaskIdBody),
    post("materials.gen_upload_url", f"{_MATERIAL}/gen-upload-url", UploadStart),
    post("materials.complete", f"{_MATERIAL}/complete", UploadComplete),
    post("materials.multipart_initiate", f"{_MATERIAL}/multipart/initiate", UploadStart),
    post("materials.multipart_presign", f"{_MATERIAL}/multipart/presign-parts", PresignParts),
    post("materials.multipart_complete", f"{_MATERIAL}/multipart/complete", MultipartComplete),
    post("materials.multipart_abort", f"{_MATERIAL}/multipart/abort", MultipartRef),
    get("materials.list", "/assets/material/list", MaterialQuery),
    post("materials.delete", "/assets/material/delete", MaterialIdBody),
    post("voices.presets", "/assets/voice/basic/list", PresetVoiceQuery, key=False),
    post("voices.clones", "/assets/voice/clone/list", CloneVoiceQuery, key=False),
    post("voices.rename", "/assets/voice/clone/update", CloneRename),
    post("voices.delete", "/assets/voice/clone/delete", VoiceIdBody),
)

OPERATIONS_BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}
OPERATIONS_BY_PATH: dict[tuple[str, str], Operation] = {
    (op.method, op.path): op for op in OPERATIONS
}

__all__ = ["OPERATIONS", "OPERATIONS_BY_NAME", "OPERATIONS_BY_PATH"]
