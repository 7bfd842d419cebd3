"""A thread-safe list of callbacks where one failing callback never stops the others."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("dubkit.webhooks")


class Listeners:
    def __init__(self, what: str) -> None:
        self._what = what
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[Any], None]] = []

    def add(self, callback: Callable[[Any], None]) -> Callable[[], None]:
        """Register ``callback``; returns the function that removes it again."""
        with self._lock:
            self._callbacks.append(callback)

        def remove() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return remove

    def call(self, value: Any) -> None:
        with self._lock:
            callbacks = list(self._callbacks)
        for callback in callbacks:
            try:
                callback(value)
            except Exception:
                log.exception("%s %r failed", self._what, callback)
