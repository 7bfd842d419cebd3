"""Strict contract mode: what the sandbox receives and sends, checked against the document.

The sandbox always refuses a request that breaks the contract document (400 naming the field).
Strict mode (``DUBKIT_CONTRACT=strict``, ``start(strict=True)`` or ``dubkit sandbox --strict``)
also checks every answer and every webhook body it sends, and records each mismatch:

``answer``    an answer the document does not allow (a ``null`` where it says string, ...)
``webhook``   a webhook body or header the document does not allow
``models``    a request the document allows, refused by dubkit's models (they are too narrow)
``request``   a request from dubkit's client (its User-Agent) that breaks the document

A mismatch never changes the answer; it is kept in memory (``GET /_sandbox/contract``) and, with
``DUBKIT_CONTRACT_LOG`` set, appended to that file as one JSON line, so a test session (and the
notebooks' kernels, whose sandboxes inherit the variables) can fail on it, naming the operation,
the direction and the JSON path.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..contract import Problem

STRICT_ENV = "DUBKIT_CONTRACT"
LOG_ENV = "DUBKIT_CONTRACT_LOG"
_KEEP = 1000  # mismatches kept in memory; the log file keeps all


def strict_from_env() -> bool:
    return os.environ.get(STRICT_ENV, "").lower() == "strict"


class ContractLog:
    """The mismatches one sandbox has seen (only recorded in strict mode)."""

    def __init__(self, strict: bool, path: str | Path | None = None) -> None:
        self.strict = strict
        self.path = Path(path) if path else None
        self._seen: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def record(
        self, operation: str | None, direction: str, problems: Iterable[Problem], **context: Any
    ) -> None:
        entries = [
            {
                "operation": operation or "(unknown operation)",
                "direction": direction,
                "path": p.path,
                "message": p.message,
                **context,
            }
            for p in problems
        ]
        if not entries:
            return
        with self._lock:
            self._seen = (self._seen + entries)[-_KEEP:]
            if self.path is not None:
                with open(self.path, "a", encoding="utf-8") as handle:
                    for entry in entries:
                        handle.write(json.dumps(entry) + "\n")

    def mismatches(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._seen)
