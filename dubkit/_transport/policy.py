"""How long to wait, how often to try again, and which answers say what."""

from __future__ import annotations

import random
from dataclasses import dataclass

import requests

from ..schema import Operation

THROTTLED = {429, 503}
AMBIGUOUS = {500, 502}  # the service may have done the work
# Refusals the same request gets on every attempt: if a retry got one, so did the first attempt,
# which therefore committed nothing. (402 and 404 depend on state the first attempt may have
# changed, e.g. the credits it spent, so they prove nothing.)
SAME_EVERY_TIME = {400, 401, 413, 422}
CONFLICT_CHECKS = 2  # 409s after a lost answer before concluding the first attempt committed
REPEATABLE = {"GET", "HEAD", "PUT"}  # raw exchanges safe to send again as they are


@dataclass(frozen=True)
class Timeout:
    """Separate connect and read timeouts, in seconds."""

    connect: float = 5.0
    read: float = 120.0


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and full jitter.

    >>> RetryPolicy(max_retries=5, backoff=0.2)
    """

    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 30.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        return random.uniform(0, min(self.max_backoff, self.backoff * 2**attempt))


def retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def is_read(op: Operation) -> bool:
    """GETs, and the POSTs the interface gives no idempotency key (the voice lists): safe to
    repeat, so retried freely and never reported as a possible charge."""
    return op.method == "GET" or not op.idempotency_required
