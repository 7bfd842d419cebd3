"""The one way dubkit reaches the wire: API calls, file downloads, storage PUTs, admin calls.

One retry loop and one error tree (:mod:`dubkit.errors`) for both transports: a ``requests``
session for the sync client, an ``httpx`` client for the async one.
The secret (the API key, or a sandbox's admin token) is attached only to requests below its
scope (:func:`~dubkit._transport.keys.in_scope`). Modules: ``core`` (the one retry loop as
steps a driver runs, request building and answer reading, with no I/O), ``transport`` (the
Transport: the core driven over ``requests``), ``async_transport`` (the AsyncTransport: the
core driven over ``httpx``), ``exchange`` (one logical call, its idempotency key, and the
errors that end it), ``budget``
(the client's ceiling on credits, checked before a paid call is sent), ``keys``
(secrets, checking idempotency keys), ``policy`` (timeouts, backoff, and :func:`verdict`, the one
rule on what each attempt's outcome means).

Retry rules, and why. A call is a *read* when it is a GET or a POST the operation table marks
read-only (the two voice-list POSTs): repeating it changes nothing. Every other POST *changes*
something and may be charged.

* A connection that was never made (refused, connect timeout, failed TLS handshake) is always
  retried: nothing reached the service.
* A request that was sent but got no complete answer (read timeout, connection dropped
  mid-response), a 500, 502 or 504 (``RetryPolicy.ambiguous``), is *ambiguous*: the service
  may have committed it (a gateway's 504 says nothing of what happened behind it).
  A read is simply retried, a read POST with a fresh idempotency key each time (so even a
  service that consumed keys there could not refuse a retried list; a 409 on a read is retried).
  A changing POST is retried with the **same** key. The service answers a reused key with 409
  instead of replaying. A 409 then means an attempt committed, or is still running (and may yet
  fail and free the key), so dubkit waits ``Retry-After`` and asks again; a retry that goes
  through means the first attempt never counted. After more than ``RetryPolicy.conflict_checks`` such 409s
  (counted over the whole call: a later 502 or timeout does not show the key was free) dubkit
  raises :class:`IdempotencyConflictError` with ``first_attempt_accepted=True`` rather than
  inventing a new key (which would create a second, double-charged task).
* 409 on a changing call before any ambiguous attempt means the caller reused a key: raised at
  once, never retried.
* 429 and 503 are throttling (``RetryPolicy.throttled``): the service did not take the call,
  which is retried (a changing call with its same idempotency key) after ``Retry-After``,
  given in seconds or as an HTTP date, capped by ``RetryPolicy.max_retry_after`` (or the
  backoff when it is absent).
* Every other business code is final. Redirects are never followed (``core.redirect_refused``).
* Plain exchanges (downloads, storage PUTs) retry what is safe to repeat (GET, PUT) on
  connection failures, the ambiguous statuses and throttling; anything else is final, raised in
  the same tree. They carry no idempotency key, so they are never flagged as possibly committed.
* A possible charge is never hidden: when a changing call ends in an error after an ambiguous
  attempt, the error has ``maybe_committed=True``, the call's ``idempotency_key`` and a message
  saying how to find out (:func:`dubkit.errors.possibly_committed`). Only refusals the same
  request gets every time (``RetryPolicy.same_every_time``: 400, 401, 413, 422) show the
  earlier attempt was refused too.

Backoff is exponential with full jitter, capped; ``Retry-After`` wins when the service sends it.
"""

from .async_transport import AsyncTransport
from .budget import Budget
from .keys import check_api_key, check_idempotency_key
from .policy import Outcome, RetryPolicy, Timeout, Verdict, is_read, verdict
from .transport import API_PREFIX, Transport

__all__ = [
    "Budget",
    "Transport",
    "AsyncTransport",
    "RetryPolicy",
    "Timeout",
    "API_PREFIX",
    "is_read",
    "check_api_key",
    "check_idempotency_key",
    "Outcome",
    "Verdict",
    "verdict",
]
