"""The webhook signature (interface §4.3): the sandbox signs with it, the Receiver checks it."""

from __future__ import annotations

import hashlib
import hmac


def sign(secret: str, timestamp: str, raw_body: bytes) -> str:
    """Lowercase hex HMAC-SHA256 of ``timestamp`` + ``raw_body``, keyed by ``secret``.

    What the service puts in ``X-Signature``; the sandbox signs with it, tests forge with it.
    """
    return hmac.new(
        secret.encode(), timestamp.encode() + bytes(raw_body), hashlib.sha256
    ).hexdigest()
