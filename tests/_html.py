"""Reading the HTML dubkit renders, in tests."""

from __future__ import annotations

import re

# An autoplay or loop attribute on a player tag. Attributes are separated by whitespace, which
# base64 never holds, so embedded audio that happens to spell "loop" is not mistaken for one.
_PLAYS_BY_ITSELF = re.compile(r"<(?:audio|video)\b[^>]*\s(?:autoplay|loop)(?=[\s>=/])", re.I)


def plays_by_itself(html: str) -> bool:
    """Whether any <audio> or <video> in ``html`` starts or repeats without being asked."""
    return bool(_PLAYS_BY_ITSELF.search(html))
