"""Where received bytes are written: a file of their own, or a part's slot of a bigger file.

Every write of a multipart session passes the session's :class:`Gate`; completing the session
shuts it first, so a part still arriving cannot change a file that is being registered.
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import Any


class Closed(Exception):
    """The session stopped taking bytes (completing, completed or aborted)."""


class Gate:
    """Every write of a session's bytes passes here; completion shuts it first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.shut = False

    def write(self, write: Any, data: bytes) -> None:
        with self.lock:  # held for one block at most, so closing never waits long
            if self.shut:
                raise Closed()
            write(data)


class FileSink:
    """Bytes for a file of their own: a temporary file, renamed into place when complete.

    With a ``gate`` (a part of a session), the write and the rename pass through it.
    """

    def __init__(self, target: Path, gate: Gate | None = None) -> None:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._target, self._gate = target, gate
        self._partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.partial")
        self._file = open(self._partial, "wb")

    def write(self, data: bytes) -> None:
        if self._gate is None:
            self._file.write(data)
        else:
            self._gate.write(self._file.write, data)

    def close(self, keep: bool) -> None:
        self._file.close()
        try:
            if keep and self._gate is not None:
                self._gate.write(lambda _: os.replace(self._partial, self._target), b"")
            elif keep:
                os.replace(self._partial, self._target)
        finally:
            self._partial.unlink(missing_ok=True)


class SlotSink:
    """Bytes for the part's region of the assembly file, written through the session's gate."""

    def __init__(self, assembly: Path, offset: int, gate: Gate) -> None:
        assembly.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._fd = os.open(assembly, os.O_WRONLY | os.O_CREAT, 0o600)
        self._offset, self._gate = offset, gate

    def write(self, data: bytes) -> None:
        self._gate.write(self._pwrite, data)

    def _pwrite(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.pwrite(self._fd, view, self._offset)
            self._offset += written
            view = view[written:]

    def close(self, keep: bool) -> None:
        os.close(self._fd)
