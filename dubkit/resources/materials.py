"""Uploaded media (materials): ``client.materials``.

>>> material = client.materials.upload("talk.mp4")       # progress bar; resumes if interrupted
>>> material.material_id, material.duration_seconds, material.category
>>> client.materials.list().to_frame()                   # every page, newest first
>>> client.materials.delete(material)
>>> client.materials.abort("big.mov")                    # give up an interrupted upload

Only registered materials can be dubbed. A :class:`Material` returned by ``upload`` or
``list`` is registered by construction; a bare id string is checked (``is_registered``) before
``client.dubbing.create`` sends anything.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from .._transport import Transport
from .._util.deprecation import renamed
from ..errors import NotFoundError, ValidationError
from ..results import Material, MaterialList
from ..uploads import MULTIPART_THRESHOLD, ProgressCallback, Upload, check_media_file
from ._base import Offloaded, Resource, offloaded

# Makes the progress display ``progress=True`` asks for (the Client passes the widgets' one).
ProgressDisplay = Callable[[str], ProgressCallback]


class MaterialsResource(Resource):
    """``client.materials``: upload, list, delete; ids of registered materials are remembered."""

    def __init__(
        self, transport: Transport, *, progress_display: ProgressDisplay | None = None
    ) -> None:
        super().__init__(transport)
        self._registered: dict[str, Material] = {}  # live materials seen, by id
        self._progress_display = progress_display

    def upload(
        self,
        path: str | os.PathLike[str],
        *,
        name: str | None = None,
        progress: bool | ProgressCallback = True,
        part_size: int | None = None,
        concurrency: int = 4,
        multipart_threshold: int = MULTIPART_THRESHOLD,
        resume: bool = True,
        state_dir: str | os.PathLike[str] | None = None,
    ) -> Material:
        """Upload a local audio or video file and return it registered.

        Bad input (missing, empty or text file, part size under 5 MiB) is refused before any
        request. Files of ``multipart_threshold`` bytes or more go in parallel parts; an
        interrupted multipart upload resumes from its state file when called again
        (``resume=False`` aborts it and starts over). ``progress``: True shows a bar (a widget
        in notebooks), False nothing, or a callable receiving
        :class:`dubkit.uploads.UploadProgress` snapshots.

        >>> m = client.materials.upload("talk.mp4", concurrency=8)
        """
        upload = Upload(
            self._transport,
            path,
            find_by_hash=self._record_by_hash,
            name=name,
            part_size=part_size,
            concurrency=concurrency,
            multipart_threshold=multipart_threshold,
            resume=resume,
            state_dir=state_dir,
        )  # bad input stops here
        if callable(progress):
            upload.report.show = progress
        elif progress and self._progress_display is not None:
            upload.report.show = self._progress_display(upload.name)
        record = upload.run()
        return self._seen(
            self._transport.read(Material, record, "materials.complete")
        ).hold_thumbnail(self._transport)

    def list(
        self, *, mime_type: str | None = None, limit: int | None = None, page_size: int = 100
    ) -> MaterialList:
        """Every registered material of this key, newest first (``limit`` caps the count);
        ``mime_type`` keeps those of one MIME type (``"video/mp4"``), or of any subtype
        (``"video/*"``). A type no material has gives an empty list.

        >>> client.materials.list(mime_type="video/*").to_frame()
        """
        return MaterialList(self.iterate(mime_type=mime_type, limit=limit, page_size=page_size))

    def iterate(
        self, *, mime_type: str | None = None, limit: int | None = None, page_size: int = 100
    ) -> Iterator[Material]:
        """Every registered material, newest first, read page by page as they are taken."""
        query = {} if mime_type is None else {"mime_type": _mime_type(mime_type)}
        for record in self._pages("materials.list", query, page_size, limit):
            yield self._seen(self._transport.read(Material, record, "materials.list"))

    def get(self, material_id: str) -> Material:
        """The registered material ``material_id`` (``NotFoundError`` if there is none)."""
        found = next((m for m in self.iterate() if m.material_id == material_id), None)
        if found is None:
            raise NotFoundError(
                f"no registered material {material_id!r} for this key",
                code=404,
                **self._transport.answered(),
            )
        return found.hold_thumbnail(self._transport)

    def find_by_hash(self, file_hash: str) -> Material | None:
        """The registered material with these bytes (MD5 hex), if any."""
        return next(
            (m for m in self.iterate() if (m.file_hash or "").lower() == file_hash.lower()), None
        )

    def delete(self, material: Material | str) -> None:
        """Delete a material (soft: it leaves lists and cannot feed new tasks)."""
        material_id = material.material_id if isinstance(material, Material) else material
        self._transport.call("materials.delete", {"material_id": material_id})
        self._registered.pop(material_id or "", None)

    def abort(
        self, path: str | os.PathLike[str], *, state_dir: str | os.PathLike[str] | None = None
    ) -> bool:
        """Abort the interrupted upload of ``path``; False if none was pending."""
        return Upload(
            self._transport, path, find_by_hash=self._record_by_hash, state_dir=state_dir
        ).abort_pending()

    def is_registered(self, material_id: str) -> bool:
        """True if ``material_id`` is a live registered material (asks the service if unsure)."""
        if material_id in self._registered:
            return True
        return any(m.material_id == material_id for m in self.iterate())

    def _require_registered(
        self, material: Material | str, field: str = "source.materialId"
    ) -> str:
        """The id of a registered material, or ValidationError naming ``field`` before any task.

        A :class:`Material` is registered by construction; a string is checked against the ids
        this client has seen registered, then against the service's material list.
        """
        if isinstance(material, Material) and material.material_id:
            return material.material_id
        if not isinstance(material, str) or not material.strip():
            raise ValidationError(field, f"expected a Material or a material id, got {material!r}")
        if not self.is_registered(material):
            raise ValidationError(
                field,
                f"{material!r} is not a registered material of this "
                f"key: use an id from client.materials.upload() or "
                f"client.materials.list(); an id from gen-upload-url "
                f"or multipart initiate only identifies an "
                f"unfinished upload",
            )
        return material

    def _audio_url(self, recording: Any, field: str) -> str:
        """An http(s) URL for a recording (a reference voice, an emotion reference): URLs
        pass, Materials give their audio URL, local files are uploaded as materials first
        (checked before any request: missing, empty, text); errors name ``field``."""
        if isinstance(recording, Material):
            url = recording.audio_url or recording.address_url
            if not url:
                raise ValidationError(field, f"material {recording.material_id} has no audio URL")
            return url
        if recording is None or (isinstance(recording, str) and not recording.strip()):
            raise ValidationError(
                field, "is required: a local audio file, an http(s) URL or a Material"
            )
        if isinstance(recording, str) and recording.startswith(("http://", "https://")):
            return recording
        if not isinstance(recording, (str, os.PathLike)):
            raise ValidationError(
                field,
                f"expected a local audio file, an http(s) URL or a "
                f"Material, got {type(recording).__name__}",
            )
        check_media_file(recording, field)
        return self._audio_url(self.upload(recording, progress=False), field)

    require_registered = renamed("_require_registered")
    audio_url = renamed("_audio_url")

    def _record_by_hash(self, file_hash: str) -> dict[str, Any] | None:
        found = self.find_by_hash(file_hash)
        return found.to_wire() if found is not None else None

    def _seen(self, material: Material) -> Material:
        if material.material_id:
            self._registered[material.material_id] = material
        return material

    def _known(self, material_id: str) -> Material:
        """The record of a material, from what this client saw if it saw it (a material's
        length never changes), else from the service's list."""
        return self._registered.get(material_id) or self.get(material_id)


class AsyncMaterialsResource(Offloaded[MaterialsResource]):
    """``client.materials`` of :class:`dubkit.AsyncClient`: :class:`MaterialsResource`'s
    calls, awaited (run off the loop, see :class:`~dubkit.resources._base.Offloaded`).

    >>> material = await client.materials.upload("talk.mp4", concurrency=8)
    >>> async for material in client.materials.iterate():
    ...     print(material.name)
    """

    upload = offloaded(MaterialsResource.upload)
    list = offloaded(MaterialsResource.list)
    get = offloaded(MaterialsResource.get)
    find_by_hash = offloaded(MaterialsResource.find_by_hash)
    delete = offloaded(MaterialsResource.delete)
    abort = offloaded(MaterialsResource.abort)
    is_registered = offloaded(MaterialsResource.is_registered)

    def iterate(
        self, *, mime_type: str | None = None, limit: int | None = None, page_size: int = 100
    ) -> AsyncIterator[Material]:
        """Every registered material, newest first, page by page: ``async for m in …``."""
        records = self._sync.iterate(mime_type=mime_type, limit=limit, page_size=page_size)
        return self._iterate(records)


def _mime_type(value: Any) -> str:
    """A MIME type filter as sent (``type/subtype`` or ``type/*``), or a ValidationError."""
    if not isinstance(value, str) or value.count("/") != 1 or not all(value.strip().split("/")):
        raise ValidationError(
            "mimeType", f"expected a MIME type such as 'video/mp4' or 'video/*', got {value!r}"
        )
    return value.strip()
