"""How long to wait, how often to try again, and the one verdict on every attempt's outcome.

:func:`verdict` is the only place that decides whether an attempt is tried again and whether it
may have been committed (and charged) without our hearing; the status sets it reads are fields
of :class:`RetryPolicy`, so a caller can change them.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Literal

from ..schema import Operation

REPEATABLE = frozenset({"GET", "HEAD", "PUT"})  # plain exchanges safe to send again as they are


@dataclass(frozen=True)
class Timeout:
    """Separate connect and read timeouts, in seconds."""

    connect: float = 5.0
    read: float = 120.0


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and full jitter, and what each status means.

    >>> RetryPolicy(max_retries=5, backoff=0.2)
    >>> RetryPolicy(ambiguous=RetryPolicy().ambiguous - {500})   # a 500 is final here
    """

    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 30.0
    # Throttling: tried again after Retry-After; the service did not take the request.
    throttled: frozenset[int] = frozenset({429, 503})
    # The service (or a gateway in front of it) may have done the work: tried again, with the
    # same idempotency key for a changing call, which is then flagged maybe_committed.
    ambiguous: frozenset[int] = frozenset({500, 502, 504})
    # Refusals the same request gets on every attempt: if a retry got one, so did the first
    # attempt, which therefore committed nothing. (402 and 404 depend on state the first
    # attempt may have changed, e.g. the credits it spent, so they prove nothing.)
    same_every_time: frozenset[int] = frozenset({400, 401, 413, 422})
    # 409s after a lost answer before concluding the first attempt committed.
    conflict_checks: int = 2

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        return random.uniform(0, min(self.max_backoff, self.backoff * 2**attempt))


# --------------------------------------------------------------------------- the verdict


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to, as the verdict needs to know it.

    ``not_sent``: no connection was made (refused, connect timeout, TLS handshake), so nothing
    reached the service. ``no_answer``: the request went out and no complete answer came (read
    timeout, connection dropped). ``redirected``: a 3xx. ``answered``: an HTTP answer that is not
    a success, with its ``status`` and, for API calls, the envelope's business ``code``.
    """

    kind: Literal["not_sent", "no_answer", "redirected", "answered"]
    status: int | None = None
    code: int | None = None

    def said(self, statuses: frozenset[int]) -> bool:
        """Whether the HTTP status or the business code is one of ``statuses``."""
        return self.status in statuses or self.code in statuses

    @property
    def conflict(self) -> bool:
        return self.kind == "answered" and self.said(frozenset({409}))


@dataclass(frozen=True)
class Verdict:
    retry: bool  # send it again (if the retry budget and the deadline allow)
    maybe_committed: bool  # this attempt may have been accepted without our hearing of it


def verdict(
    policy: RetryPolicy,
    outcome: Outcome,
    *,
    read: bool,
    raw: bool = False,
    ambiguous_before: bool = False,
    conflicts_before: int = 0,
) -> Verdict:
    """Whether to try again after ``outcome``, and whether the attempt may have committed.

    ``read``: repeating the call changes nothing (a GET, a read-only POST, a storage PUT of the
    same bytes). ``raw``: a plain exchange (a download, a storage PUT, an admin call), which has
    no idempotency key to make a repeated change safe. ``ambiguous_before``: an earlier attempt
    of this call may have committed; ``conflicts_before``: 409s it met since.

    A 409 on a changing call is the service refusing a reused key. Before any ambiguous attempt
    it means the caller reused a key (final). After one, an attempt of this very call holds the
    key: it committed, or is still running and may yet fail and free the key; so the call asks
    again ``conflict_checks`` times before concluding it committed.
    """
    if outcome.kind == "not_sent":
        return Verdict(retry=True, maybe_committed=False)
    if outcome.kind == "redirected":
        return Verdict(retry=False, maybe_committed=False)
    if outcome.kind == "no_answer":
        return Verdict(retry=read or not raw, maybe_committed=not read)
    if raw:
        transient = outcome.said(policy.ambiguous | policy.throttled)
        return Verdict(retry=read and transient, maybe_committed=False)
    if outcome.conflict:
        # A read's key means nothing: it is simply sent again with a new one.
        again = read or (ambiguous_before and conflicts_before < policy.conflict_checks)
        return Verdict(retry=again, maybe_committed=False)
    if outcome.said(policy.ambiguous):
        return Verdict(retry=True, maybe_committed=not read)
    return Verdict(retry=outcome.said(policy.throttled), maybe_committed=False)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``Retry-After``: delay-seconds or an HTTP date (RFC 9110 10.2.3)."""
    value = (headers.get("Retry-After") or headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def is_read(op: Operation) -> bool:
    """GETs, and the POSTs the interface gives no idempotency key (the voice lists): safe to
    repeat, so retried freely and never reported as a possible charge."""
    return op.method == "GET" or not op.idempotency_required
