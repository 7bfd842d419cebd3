"""The small JSON file that lets an interrupted multipart upload resume."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Iterator


def default_state_dir() -> Path:
    """``$DUBKIT_UPLOAD_STATE_DIR``, else ``~/.cache/dubkit/uploads``."""
    return Path(os.environ.get("DUBKIT_UPLOAD_STATE_DIR")
                or Path.home() / ".cache" / "dubkit" / "uploads")


class UploadState:
    """What a multipart upload needs to resume, saved atomically after every part."""

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
    def load(cls, file: Path) -> "UploadState | None":
        try:
            return cls(file, json.loads(file.read_text()))
        except (OSError, ValueError):
            return None

    def matches(self, path: Path) -> bool:
        """True if the file is unchanged since the state was written."""
        stat = path.stat()
        return (self.data.get("size"), self.data.get("mtimeNs")) == (stat.st_size,
                                                                     stat.st_mtime_ns)

    @property
    def etags(self) -> dict[int, str]:
        return {int(n): tag for n, tag in self.data.get("parts", {}).items()}

    def record_part(self, number: int, etag: str) -> None:
        with self._lock:
            self.data.setdefault("parts", {})[str(number)] = etag
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
