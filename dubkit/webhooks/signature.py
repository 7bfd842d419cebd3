"""Signing and verifying one delivery (interface §4.3).

>>> verify(secret, request.headers["X-Timestamp"], request.get_data(),
...        request.headers["X-Signature"])          # raises WebhookVerificationError
>>> verify([new_secret, old_secret], ...)           # during a secret rotation
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Sequence

from .._util.signing import sign
from ..errors import WebhookVerificationError

TOLERANCE_SECONDS = 300
_HEX = frozenset("0123456789abcdef")  # the service emits lowercase; compare exactly (§7.2.10)
# Epoch milliseconds have 13 digits until the year 2286. A longer string cannot be a send time,
# and arithmetic on it fails: int() refuses over 4300 digits (ValueError) and float - int
# overflows past ~309 digits (OverflowError); either would be a 500 instead of a 401.
_MAX_TIMESTAMP_DIGITS = 20


def verify(
    secret: str | Sequence[str],
    timestamp: str | bytes | None,
    raw_body: bytes,
    signature: str | bytes | None,
    tolerance: float = TOLERANCE_SECONDS,
    *,
    now: float | None = None,
) -> None:
    """Check one delivery: HMAC-SHA256(secret, timestamp + raw body) in constant time.

    ``secret`` may be a list (old and new during a rotation). ``raw_body`` must be the bytes as
    received, never re-serialized JSON. Deliveries more than ``tolerance`` seconds away from
    ``now`` (either way) are refused. Raises :class:`WebhookVerificationError` whose ``reason``
    is one of ``missing-header``, ``bad-timestamp``, ``stale``, ``bad-signature``; the message
    never contains the secret.
    """
    if not timestamp or not signature:
        raise WebhookVerificationError(
            "missing X-Timestamp or X-Signature header", reason="missing-header"
        )
    if isinstance(timestamp, bytes):
        timestamp = timestamp.decode("latin-1")
    if isinstance(signature, bytes):
        signature = signature.decode("latin-1")
    if not isinstance(raw_body, (bytes, bytearray)):
        raise TypeError("raw_body must be the raw request bytes, not parsed JSON or text")
    if not (
        timestamp.isascii()
        and timestamp.isdigit()  # int() takes "-5", " 12", "١٢"
        and len(timestamp) <= _MAX_TIMESTAMP_DIGITS
    ):
        raise WebhookVerificationError(
            "X-Timestamp is not epoch milliseconds", reason="bad-timestamp"
        )
    sent_ms = int(timestamp)
    now_ms = (time.time() if now is None else now) * 1000
    if abs(now_ms - sent_ms) > tolerance * 1000:
        raise WebhookVerificationError(
            f"X-Timestamp is {abs(now_ms - sent_ms) / 1000:.0f} s away from now "
            f"(tolerance {tolerance:g} s)",
            reason="stale",
        )
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise ValueError("no webhook secret given")
    if len(signature) != 64 or not all(c in _HEX for c in signature):
        raise WebhookVerificationError(
            "X-Signature is not 64 lowercase hex characters", reason="bad-signature"
        )
    matched = False
    for candidate in secrets:  # check every secret so timing does not reveal which matched
        matched |= hmac.compare_digest(sign(candidate, timestamp, raw_body), signature)
    if not matched:
        raise WebhookVerificationError("signature does not match", reason="bad-signature")
