"""One logical exchange and what its attempts have taught us; the errors that end it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import DubkitError, IdempotencyConflictError, possibly_committed
from .keys import check_idempotency_key, new_idempotency_key
from .policy import Outcome, RetryPolicy, Verdict, verdict


@dataclass
class Exchange:
    """One logical call and its attempts: an API call (``raw`` False: the envelope is read) or
    a plain HTTP exchange (``raw``: a file download, a storage PUT, an admin call).

    The idempotency key is made here and only here: an API POST carries the caller's key or
    a new one, kept on every retry of a changing call and renewed on each retry of a read.
    """

    method: str
    url: str
    query: dict[str, Any]
    body: Any  # JSON for API calls
    read: bool  # repeating it changes nothing (GET, a read-only POST, a storage PUT)
    context: dict[str, Any]  # what its errors carry: method, path, req_id
    raw: bool = False
    data: Callable[[], Any] | None = None  # raw: a fresh body for each attempt
    headers: dict[str, str] = field(default_factory=dict)
    key: str | None = None  # X-Idempotency-Key (API POSTs)
    maybe_committed: bool = False  # an attempt may have been accepted without our hearing
    ambiguity: str = ""  # what made the first such attempt ambiguous
    conflicts: int = 0  # 409s after an ambiguous attempt, over the whole exchange
    operation: str | None = None  # the operation's name, for errors about its answer

    @classmethod
    def api(
        cls,
        method: str,
        url: str,
        *,
        query: dict[str, Any],
        body: Any,
        read: bool,
        context: dict[str, Any],
        idempotency_key: str | None,
    ) -> Exchange:
        key = None
        if method == "POST":
            key = (
                check_idempotency_key(idempotency_key) if idempotency_key else new_idempotency_key()
            )
        return cls(method, url, query, body, read, context, key=key)

    def request_headers(self) -> dict[str, str]:
        return {**self.headers, **({"X-Idempotency-Key": self.key} if self.key else {})}

    def judge(self, policy: RetryPolicy, outcome: Outcome, why: str) -> Verdict:
        """The policy's verdict on one attempt, noted: a possible commit (and ``why``), a 409."""
        judged = verdict(
            policy,
            outcome,
            read=self.read,
            raw=self.raw,
            ambiguous_before=self.maybe_committed,
            conflicts_before=self.conflicts,
        )
        if outcome.conflict and self.maybe_committed:
            self.conflicts += 1
        if judged.maybe_committed and not self.maybe_committed:
            self.maybe_committed, self.ambiguity = True, why
        return judged

    def next_attempt(self) -> None:
        """A read POST is sent again with a new key: even a service that consumed keys on
        reads could not refuse a retried list."""
        if self.read and self.key:
            self.key = new_idempotency_key()

    def final_error(self, error: DubkitError, policy: RetryPolicy) -> DubkitError:
        """The error that ends the exchange, saying so when it may have been committed."""
        if self.read or self.key is None:
            return error
        if isinstance(error, IdempotencyConflictError):
            return conflict(error, self.maybe_committed)
        error.idempotency_key = self.key
        if self.maybe_committed and error.code not in policy.same_every_time:
            why = self.ambiguity
            if self.conflicts:
                why += (
                    "; then a retry was refused with 409 (the service already held this "
                    "key), so most likely an attempt was committed"
                )
            possibly_committed(error, self.key, why)
        return error


def conflict(refusal: IdempotencyConflictError, maybe_committed: bool) -> IdempotencyConflictError:
    key = refusal.idempotency_key
    if maybe_committed:
        message = (
            f"The first attempt of this call was accepted, but its answer was lost; retries "
            f"with the same idempotency key {key!r} were refused ({refusal.message}). dubkit "
            f"did not send it again, so no second task exists. Find the result in "
            f"client.tasks.list() or, for async creates, in the webhook whose "
            f"extraData.dubkitIdempotencyKey is {key!r}."
        )
    else:
        message = (
            f"{refusal.message}: the idempotency key {key!r} was already used on this "
            f"path within the service's window. Use a new key for a new job."
        )
    return IdempotencyConflictError(
        message,
        idempotency_key=key or "",
        first_attempt_accepted=maybe_committed,
        retry_after=refusal.retry_after,
        code=409,
        http_status=refusal.http_status,
        method=refusal.method,
        path=refusal.path,
        req_id=refusal.req_id,
    )
