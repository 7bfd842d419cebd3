"""English for counts, in reprs and messages."""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``count(1, "line")`` -> ``'1 line'``; ``count(2, "delivery", "deliveries")`` -> ``'2 deliveries'``."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
