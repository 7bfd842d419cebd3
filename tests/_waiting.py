"""How tests wait for work: on the event that matters, never a tight wall-clock budget.

``PATIENCE`` is how long a test waits for real work (a dub, a delivery, a restart) before it
calls the work hung: far beyond what the work takes on a loaded machine, so only a hang reaches
it (pytest-timeout's 600 s per test is the last resort).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
PATIENCE = 300.0


def wait_for(check: Callable[[], T], limit: float = PATIENCE) -> T:
    """Poll ``check`` until it is truthy (its value) or ``limit`` seconds pass (its last value)."""
    deadline = time.monotonic() + limit
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return value
