"""Uploaded media (materials): ``client.materials``.

>>> material = client.materials.upload("talk.mp4")       # progress bar; resumes if interrupted
>>> material.material_id, material.duration_seconds, material.category
>>> client.materials.list().to_frame()                   # every page, newest first
>>> client.materials.delete(material)
>>> client.materials.abort("big.mov")                    # give up an interrupted upload

Only registered materials can feed media translation. A :class:`Material` returned by
``upload`` or ``list`` is registered by construction; a bare id string is checked with
:func:`require_registered` before it is sent anywhere.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterator

import pandas as pd

from .. import schema
from ..errors import NotFoundError, ValidationError
from ..uploads import MULTIPART_THRESHOLD, ProgressCallback, Upload
from ._base import Resource, iterate_pages

if TYPE_CHECKING:
    from ..client import Client

COLUMNS = ["material_id", "name", "category", "duration_s", "filesize", "resolution",
           "mime_type", "create_time"]


class Material(schema.Material):
    """A registered material (interface §3.1); in a notebook it shows a player."""

    @property
    def duration_seconds(self) -> float | None:
        return self.duration / 1000 if self.duration is not None else None

    def __repr__(self) -> str:
        return (f"Material({self.material_id!r}, {self.name!r}, {self.category}, "
                f"{self.duration_seconds or 0:.1f} s)")

    def _repr_html_(self) -> str:
        from ..widgets.uploads import material_html
        return material_html(self)


class MaterialList(list):
    """Materials from :meth:`MaterialsResource.list`; ``.to_frame()`` for a table."""

    def to_frame(self) -> pd.DataFrame:
        rows = [{**m.model_dump(), "duration_s": m.duration_seconds} for m in self]
        return pd.DataFrame(rows, columns=COLUMNS)

    def _repr_html_(self) -> str:
        return self.to_frame().to_html(index=False, na_rep="", escape=True)


class MaterialsResource(Resource):
    """``client.materials``: upload, list, delete; ids of registered materials are remembered."""

    def __init__(self, client: "Client") -> None:
        super().__init__(client)
        self._registered: set[str] = set()

    def upload(self, path: str | os.PathLike[str], *, name: str | None = None,
               progress: bool | ProgressCallback = True, part_size: int | None = None,
               concurrency: int = 4, multipart_threshold: int = MULTIPART_THRESHOLD,
               resume: bool = True, state_dir: str | os.PathLike[str] | None = None
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
        upload = Upload(self._client, path, name=name, part_size=part_size,
                        concurrency=concurrency, multipart_threshold=multipart_threshold,
                        resume=resume, state_dir=state_dir)     # bad input stops here
        upload.on_progress = _progress_display(progress, upload.name)
        record = upload.run()
        return self._seen(Material.model_validate(record))

    def list(self, *, limit: int | None = None, page_size: int = 100) -> MaterialList:
        """Every registered material of this key, newest first (``limit`` caps the count)."""
        return MaterialList(self.iterate(limit=limit, page_size=page_size))

    def iterate(self, *, limit: int | None = None, page_size: int = 100) -> Iterator[Material]:
        def fetch(page: int, size: int) -> dict[str, Any]:
            return self._client.call("materials.list", {"currentPage": page, "pageSize": size})
        for record in iterate_pages(fetch, page_size, limit):
            yield self._seen(Material.model_validate(record))

    def get(self, material_id: str) -> Material:
        """The registered material ``material_id`` (``NotFoundError`` if there is none)."""
        found = next((m for m in self.iterate() if m.material_id == material_id), None)
        if found is None:
            raise NotFoundError(f"no registered material {material_id!r} for this key", code=404)
        return found

    def find_by_hash(self, file_hash: str) -> Material | None:
        """The registered material with these bytes (MD5 hex), if any."""
        return next((m for m in self.iterate() if (m.file_hash or "").lower()
                     == file_hash.lower()), None)

    def delete(self, material: "Material | str") -> None:
        """Delete a material (soft: it leaves lists and cannot feed new tasks)."""
        material_id = material.material_id if isinstance(material, Material) else material
        self._client.call("materials.delete", {"materialId": material_id})
        self._registered.discard(material_id)

    def abort(self, path: str | os.PathLike[str], *,
              state_dir: str | os.PathLike[str] | None = None) -> bool:
        """Abort the interrupted upload of ``path``; False if none was pending."""
        return Upload(self._client, path, state_dir=state_dir).abort_pending()

    def is_registered(self, material_id: str) -> bool:
        """True if ``material_id`` is a live registered material (asks the service if unsure)."""
        if material_id in self._registered:
            return True
        return any(m.material_id == material_id for m in self.iterate())

    def _seen(self, material: Material) -> Material:
        self._registered.add(material.material_id)
        return material


def require_registered(client: "Client", material: "Material | str",
                       field: str = "source.materialId") -> str:
    """The id of a registered material, or ValidationError naming ``field`` before any task.

    A :class:`Material` is registered by construction; a string is checked against the ids
    this client has seen registered, then against the service's material list.

    >>> require_registered(client, material)             # -> 'mat_…'
    >>> require_registered(client, "mat_from_initiate")  # ValidationError: not registered
    """
    if isinstance(material, Material):
        return material.material_id
    if not isinstance(material, str) or not material.strip():
        raise ValidationError(field, f"expected a Material or a material id, got {material!r}")
    if not client.materials.is_registered(material):
        raise ValidationError(field, f"{material!r} is not a registered material of this key: "
                                     f"use an id from client.materials.upload() or "
                                     f"client.materials.list(); an id from gen-upload-url or "
                                     f"multipart initiate only identifies an unfinished upload")
    return material


def _progress_display(progress: bool | ProgressCallback, name: str) -> ProgressCallback | None:
    if callable(progress):
        return progress
    if not progress:
        return None
    from ..widgets.uploads import UploadProgressBar, in_notebook, terminal_progress
    return UploadProgressBar(name).show() if in_notebook() else terminal_progress(name)
