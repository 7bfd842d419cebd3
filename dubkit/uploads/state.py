"""The small JSON file that lets an interrupted multipart upload resume."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..schema import MultipartInitiateAnswer, MultipartRef


def default_state_dir() -> Path:
    """Where resume states live: ``$DUBKIT_UPLOAD_STATE_DIR``; else, when the sandbox's data is
    moved with ``$DUBKIT_SANDBOX_DIR``, beside it (``<that dir>-uploads``: Binder, a test
    session and a class keep all of dubkit's state in one place); else
    ``~/.cache/dubkit/uploads``."""
    own = os.environ.get("DUBKIT_UPLOAD_STATE_DIR")
    if own:
        return Path(own)
    sandbox = os.environ.get("DUBKIT_SANDBOX_DIR")
    if sandbox:
        folder = Path(sandbox)
        return folder.with_name(folder.name + "-uploads")
    return Path.home() / ".cache" / "dubkit" / "uploads"


class UploadState:
    """What a multipart upload needs to resume, saved atomically after every part.

    ``parts`` maps each sent part to its ETag (for completion); ``partDigests`` maps it to the
    digest of the bytes sent (:func:`dubkit.uploads.files.new_part_digest`), so a resume can
    check those bytes are still the file's. States written before ``partDigests`` existed
    (version 1) have none: their parts cannot be checked and are not trusted.
    """

    VERSION = 2

    def __init__(self, file: Path, data: dict[str, Any]) -> None:
        self.file = file
        self.data = data
        self._lock = threading.Lock()

    @staticmethod
    def location(state_dir: Path | None, account: str, path: Path) -> Path:
        """One file per (account, file). ``account`` is a one-way hash of the key: it stays the
        same when the embedded sandbox restarts on another port, so an upload resumes across
        restarts, and two keys never share state."""
        ident = hashlib.sha1(f"{account}\n{path.resolve()}".encode()).hexdigest()[:20]
        return (state_dir or default_state_dir()) / f"{ident}.json"

    @classmethod
    def begin(
        cls,
        file: Path,
        path: Path,
        file_hash: str,
        file_name: str,
        started: MultipartInitiateAnswer,
        part_size: int,
    ) -> UploadState:
        """The state of a session ``multipart/initiate`` just ``started``, saved."""
        stat = path.stat()
        state = cls(
            file,
            {
                "version": cls.VERSION,
                "path": str(path.resolve()),
                "size": stat.st_size,
                "mtimeNs": stat.st_mtime_ns,
                "fileHash": file_hash,
                "fileName": file_name,
                "materialId": started.material_id,
                "uploadId": started.upload_id,
                "partSize": part_size,
                "parts": {},
                "partDigests": {},
            },
        )
        state.save()
        return state

    @classmethod
    def load(cls, file: Path) -> UploadState | None:
        try:
            return cls(file, json.loads(file.read_text()))
        except (OSError, ValueError):
            return None

    def matches(self, path: Path) -> bool:
        """True if the file is unchanged since the state was written."""
        stat = path.stat()
        return (self.data.get("size"), self.data.get("mtimeNs")) == (stat.st_size, stat.st_mtime_ns)

    def ref(self) -> MultipartRef:
        """What names the session in the service's multipart calls."""
        data = self.data
        return MultipartRef(
            material_id=data.get("materialId"),
            upload_id=data.get("uploadId"),
            file_hash=data.get("fileHash"),
            file_name=data.get("fileName"),
        )

    @property
    def etags(self) -> dict[int, str]:
        return {int(n): tag for n, tag in self.data.get("parts", {}).items()}

    @property
    def part_digests(self) -> dict[int, str]:
        return {int(n): digest for n, digest in self.data.get("partDigests", {}).items()}

    def record_part(self, number: int, etag: str, digest: str) -> None:
        """Note a sent part; ETag and digest land in the same atomic save."""
        with self._lock:
            self.data.setdefault("parts", {})[str(number)] = etag
            self.data.setdefault("partDigests", {})[str(number)] = digest
            self.save()

    def save(self) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        partial = self.file.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        partial.write_text(json.dumps(self.data))
        os.replace(partial, self.file)

    def delete(self) -> None:
        self.file.unlink(missing_ok=True)


def pending_states(state_dir: str | os.PathLike[str] | None = None) -> Iterator[UploadState]:
    """Every resumable upload recorded in ``state_dir``."""
    folder = Path(state_dir) if state_dir else default_state_dir()
    for file in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        state = UploadState.load(file)
        if state is not None:
            yield state
