"""Answers lined up with the lines sent: one item a line, in order, whatever the answer holds.

The interface says a TTS answer has one result a line and a translation one item a segment,
in order. An answer with fewer marks the lines it did not answer as failed; extra items (they
answer no line sent) are dropped. Nothing after a gap shifts onto the wrong line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def lined_up(items: Sequence[T], count: int, missing: Callable[[str], T], what: str) -> list[T]:
    """``items`` as ``count`` of them: the first ``count``, then ``missing(reason)`` for each
    line the answer left out. ``what`` names the items (``results``, ``items``)."""
    if len(items) == count:
        return list(items)
    reason = f"no answer for this line: the service answered {len(items)} {what} for {count} lines"
    return list(items[:count]) + [missing(reason) for _ in range(count - len(items))]
