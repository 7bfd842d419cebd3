"""The header that carries what a dubkit sandbox tells beyond the service's interface.

The sandbox answers and delivers only documented fields; its labelled extras (the delivery it
applied, a pseudo-translation's engine, a dub's notices...) travel beside the body in
``X-Dubkit-Sandbox-Extras``: the fields :func:`dubkit.contract.split` cut, as compact JSON,
zlib-compressed and base64url-encoded (a long dub's overlay is a few kilobytes this way, well
under a header line's limit). Code written against the sandbox therefore reads the same wire as
the service's; dubkit's client puts the extras back into the results it builds.
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

HEADER = "X-Dubkit-Sandbox-Extras"
MAX_HEADER = 60_000  # characters; http.client refuses header lines over 65536
MAX_INFLATED = 8 * 1024 * 1024  # bytes a header may inflate to (a zlib bomb stops here)


def encode(overlay: Any) -> str | None:
    """The header value of ``overlay``, or None when it is empty or too long to send."""
    if overlay is None:
        return None
    packed = zlib.compress(json.dumps(overlay, separators=(",", ":")).encode(), 6)
    text = base64.urlsafe_b64encode(packed).decode()
    return text if len(text) <= MAX_HEADER else None


def decode(value: str | None) -> dict[str, Any] | None:
    """The overlay a header value carries: None for no header, or one that is not an overlay
    the sandbox made (it never breaks reading the answer it came with)."""
    if not value:
        return None
    try:
        inflate = zlib.decompressobj()
        text = inflate.decompress(base64.urlsafe_b64decode(value.encode()), MAX_INFLATED)
        if inflate.unconsumed_tail:  # more than any overlay the sandbox sends: not one of its
            return None
        overlay = json.loads(text)
    except (ValueError, zlib.error, RecursionError):
        return None
    return overlay if isinstance(overlay, dict) else None
