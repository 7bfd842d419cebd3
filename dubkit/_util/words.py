"""English for counts, in reprs and messages."""

from __future__ import annotations


def noun(n: int, singular: str, plural: str | None = None) -> str:
    """The noun for ``n`` of them: ``noun(2, "line")`` -> ``'lines'``."""
    return singular if n == 1 else plural or singular + "s"


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``count(1, "line")`` -> ``'1 line'``; ``count(2, "delivery", "deliveries")`` -> ``'2 deliveries'``."""
    return f"{n} {noun(n, singular, plural)}"
