"""Files a replayed lesson points to, served at the paths they were recorded at.

A cassette (:mod:`dubkit.cassette`) holds the media its recorded answers point to. In replay
those answers point at this sandbox instead, so a remote browser reaches the media by the
same rules as the sandbox's own files (through the Jupyter server's proxy, or embedded when
short). The admin publishes each file's bytes under a path (``PUT
/_sandbox/replayed-files/<path>``); it is stored once by content hash and served under
``/files/<path>``, before any file of the sandbox's own there (a replayed voice preview is
the recorded one). The sandbox reads no file on anyone's say-so: the bytes come in the
request. Only media and subtitle types are served as themselves, with ``nosniff`` and a
sandboxing CSP; anything else is served as opaque bytes.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePosixPath

from .backend import Backend
from .service_error import ServiceError

SETTING = "replayed_files"
MAX_FILE = 2 * 1024**3  # bytes one published file may have (a long dub's video is far less)
# What a replayed file may be served as; anything else (HTML, script) as opaque bytes, so a
# shared cassette cannot run a page on the origin the Jupyter proxy gives the sandbox.
SERVED_TYPES = ("audio/", "video/", "image/", "text/plain", "text/vtt", "application/x-subrip")
HEADERS = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox"}
STORE = "replayed"  # under the files dir; not served under its own name (no owner rule)
MAX_PATH = 512


def publish(backend: Backend, relpath: str, data: bytes, media_type: str) -> str:
    """Serve ``data`` as ``media_type`` under ``/files/<relpath>``; its sha256."""
    relpath = _checked(relpath)
    digest = hashlib.sha256(data).hexdigest()
    store = backend.files_dir / STORE
    store.mkdir(mode=0o700, exist_ok=True)
    target = store / digest
    if not target.is_file():
        partial = target.with_suffix(f".{os.getpid()}.part")
        partial.write_bytes(data)
        partial.replace(target)  # whole or absent, never half a file under the hash
    served_as = media_type.split(";")[0].strip().lower()
    if not served_as.startswith(SERVED_TYPES):
        served_as = "application/octet-stream"
    table = dict(backend.setting(SETTING, {}))
    table[relpath] = {"sha256": digest, "type": served_as}
    backend.set_setting(SETTING, table)
    return digest


def served(backend: Backend, relpath: str) -> tuple[Path, str] | None:
    """The stored file and media type published under ``relpath``, or None."""
    entry = backend.setting(SETTING, {}).get(relpath)
    if entry is None:
        return None
    path = backend.files_dir / STORE / entry["sha256"]
    return (path, entry["type"]) if path.is_file() else None


def _checked(relpath: str) -> str:
    parts = PurePosixPath(relpath).parts
    if (
        not relpath
        or len(relpath) > MAX_PATH
        or relpath.startswith("/")
        or any(part in ("..", ".") for part in parts)
        or "\\" in relpath
        or "\x00" in relpath
        or parts[0] == STORE
    ):
        raise ServiceError(
            400, f"path: a relative file path without '..' of at most {MAX_PATH} characters"
        )
    return relpath
