"""The header that carries what a dubkit sandbox tells beyond the service's interface.

The sandbox answers and delivers only documented fields; its labelled extras (the delivery it
applied, a pseudo-translation's engine, a dub's notices...) travel beside the body in
``X-Dubkit-Sandbox-Extras``: the fields :func:`dubkit.contract.split` cut, as compact JSON,
zlib-compressed and base64url-encoded (a long dub's overlay is a few kilobytes this way, well
under a header line's limit). A short overlay (a pseudo-translation's engine) is sent as the
JSON text itself, ASCII-escaped (a header value may hold any printable ASCII): read on every
call, it is read fastest so, and ``{`` never starts base64, so the reader tells the two apart. Code written against the sandbox therefore reads the same wire as
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
PLAIN_UP_TO = 256  # characters of JSON sent as they are; longer ones are compressed


def encode(overlay: Any) -> str | None:
    """The header value of ``overlay``, or None when it is empty or too long to send."""
    if overlay is None:
        return None
    plain = json.dumps(overlay, separators=(",", ":"))  # ASCII: non-ASCII is \u-escaped
    if len(plain) <= PLAIN_UP_TO:
        return plain
    text = base64.urlsafe_b64encode(zlib.compress(plain.encode(), 6)).decode()
    return text if len(text) <= MAX_HEADER else None


def decode(value: str | None) -> dict[str, Any] | None:
    """The overlay a header value carries: None for no header, or one that is not an overlay
    the sandbox made (it never breaks reading the answer it came with)."""
    if not value:
        return None
    try:
        text = value  # a short overlay, sent as it is
        if value[0] != "{":
            inflate = zlib.decompressobj()
            packed = inflate.decompress(base64.urlsafe_b64decode(value), MAX_INFLATED)
            if inflate.unconsumed_tail:  # more than any overlay the sandbox sends: not its own
                return None
            text = packed.decode()  # a str parses faster than bytes (no detection)
        overlay = json.loads(text)
    except (ValueError, zlib.error, RecursionError):
        return None
    return overlay if isinstance(overlay, dict) else None
