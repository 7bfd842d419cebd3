"""Which files under ``/files`` may still be read: a file is served while its owner lives.

=====================  =================================================================
``voices/...``         catalogue previews and covers: public (made when first fetched)
``materials/<id>/...`` a material's files, until the material is deleted
``media/<taskId>/...`` a dub's deliverables, until the task is deleted
``clones/<taskId>/...`` a clone's copy of its reference, until the clone is deleted
``tts/...``            a TTS result (identical lines share one file), while a live task of
                       the key that asked for it answered with it
``buckets/...``        a dub delivered to a customer's bucket (``output``): the stand-in for
                       storage the customer owns, so it outlives the task (products.buckets)
=====================  =================================================================

Anything else, a path that resolves outside the files directory (``..``, a symlink), or a
file whose owner is gone, is 404 with no hint of which: links stop working when what they
belong to is deleted, the way a CDN's do when the object is removed.
"""

from __future__ import annotations

from pathlib import Path

from . import catalogue_files
from .backend import Backend
from .products import materials, tts_takes, voices


def served_path(backend: Backend, relpath: str) -> Path | None:
    """The file to send for ``/files/<relpath>``, or None (404)."""
    root = backend.files_dir.resolve()
    path = (root / relpath).resolve()
    if not path.is_relative_to(root):
        return None
    catalogue_files.make_if_missing(backend.files_dir, relpath)
    if not path.is_file() or not _owner_lives(backend, relpath):
        return None
    return path


def _owner_lives(backend: Backend, relpath: str) -> bool:
    head, _, rest = relpath.partition("/")
    owner = rest.partition("/")[0]
    if head in ("voices", "buckets"):
        return True
    if head == "materials":
        return materials.is_live(backend, owner)
    if head == "media":
        return backend.task_is_live(owner)
    if head == "clones":
        return voices.clone_of_task_is_live(backend, owner)
    if head == "tts":
        return tts_takes.answered_by_live_task(backend, relpath)
    return False
