"""What an upload reports while it runs: a snapshot, and when to hand it to the display."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

REPORT_EVERY = 0.2  # seconds between progress reports


@dataclass
class UploadProgress:
    """A snapshot for progress displays; ``phase`` is hashing, uploading, registering, done."""

    file_name: str
    total: int
    phase: str = "hashing"
    hashed: int = 0
    sent: int = 0
    parts_done: int = 0
    parts_total: int = 0
    resumed_parts: int = 0
    resumed_bytes: int = 0  # sent by an earlier, interrupted run
    verified: int = 0  # of those, re-read to check they are still the file's
    material_id: str | None = None
    duplicate: bool = False
    started: float = field(default_factory=time.monotonic)
    sending_since: float | None = None
    sending_until: float | None = None
    ended: float | None = None

    @property
    def rate(self) -> float:
        """Bytes per second sent by this run (0 before sending starts)."""
        if self.sending_since is None:
            return 0.0
        seconds = (self.sending_until or time.monotonic()) - self.sending_since
        return (self.sent - self.resumed_bytes) / seconds if seconds > 0 else 0.0

    @property
    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started


ProgressCallback = Callable[[UploadProgress], None]


class ProgressReport:
    """Counts what an upload did and shows it at most every 0.2 s (always on a phase change).

    Part threads only count (``sent``, ``part_done``); the display is called from the
    caller's thread only (``tick``), because widgets must be updated from it.
    """

    def __init__(self, file_name: str, total: int, show: ProgressCallback | None) -> None:
        self.progress = UploadProgress(file_name, total)
        self.show = show  # set later by whoever draws it, before run()
        self._lock = threading.Lock()
        self._last = 0.0

    def restart(self) -> None:
        self.progress = UploadProgress(self.progress.file_name, self.progress.total)

    def hashed(self, count: int) -> None:
        self.progress.hashed += count
        self.tick()

    def verified(self, count: int) -> None:
        self.progress.verified += count
        self.tick()

    def sent(self, count: int) -> None:
        with self._lock:
            self.progress.sent += count

    def part_done(self) -> None:
        with self._lock:
            self.progress.parts_done += 1

    def phase(self, phase: str) -> None:
        p = self.progress
        p.phase = phase
        if phase == "uploading" and p.sending_since is None:
            p.sending_since = time.monotonic()
        if phase in ("registering", "done") and p.sending_until is None:
            p.sending_until = time.monotonic()
        self.tick(force=True)

    def done(self, material_id: str | None) -> None:
        self.progress.material_id = material_id
        self.progress.ended = time.monotonic()
        self.phase("done")

    def tick(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.show is not None and (force or now - self._last >= REPORT_EVERY):
            self._last = now
            self.show(self.progress)
