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


class SteppedClock:
    """A stand-in for the ``time`` module whose clock moves only when something sleeps on it.

    Patched into the modules that do a wait's arithmetic, it makes where each sleep ends and
    how long each poll may take the same on a busy machine as on an idle one: the polls are
    still real HTTP, they just take no time on this clock."""

    def __init__(self) -> None:
        self.start = self.now = time.monotonic()

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def __getattr__(self, name: str) -> object:  # time.time() and the rest stay real
        return getattr(time, name)
