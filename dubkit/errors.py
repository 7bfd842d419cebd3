"""The dubkit error tree: one class per business code, plus the client's own failures.

Every error raised by a request carries what a person needs to report or debug it:
``code`` (the service's business code), ``message``, ``http_status``, ``method``/``path``
and the ``req_id`` dubkit sent. None of them ever contains the API key.

A call that changes something (a create, a delete, an upload step) can end in an error after
the service may already have done the work: an attempt got a 500/502/504, no answer in time, or a
dropped connection. Such an error has ``maybe_committed`` True, carries the call's
``idempotency_key``, and its text says how to find out. Reads never claim that.

>>> try:
...     client.tasks.get("no-such-task")
... except dubkit.NotFoundError as err:
...     print(err.code, err.req_id)
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit


class DubkitError(Exception):
    """Base of every error dubkit raises."""

    code: int | None = None
    retry_after: float | None = None  # seconds the service asked us to wait, if it said
    # True when the call may have been committed (and charged) although it ended in this error.
    maybe_committed: bool = False
    idempotency_key: str | None = None  # the key every attempt of a changing call carried

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        http_status: int | None = None,
        method: str | None = None,
        path: str | None = None,
        req_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.http_status = http_status
        self.method = method
        self.path = path
        self.req_id = req_id

    def __str__(self) -> str:
        where = " ".join(p for p in (self.method, self.path) if p)
        facts = [
            f"code {self.code}" if self.code is not None else None,
            f"HTTP {self.http_status}" if self.http_status is not None else None,
            where or None,
            f"req_id {self.req_id}" if self.req_id else None,
        ]
        detail = ", ".join(f for f in facts if f)
        return f"{self.message} ({detail})" if detail else self.message


class ValidationError(DubkitError, ValueError):
    """Bad input caught by dubkit before anything was sent (so no credits were spent).

    ``field`` is the wire name of the offending field, e.g. ``segments[3].end``. ``rule`` is
    true when the shape was fine and a rule the interface states refused it (``end >= start``).
    """

    def __init__(self, field: str, problem: str, *, rule: bool = False, **context: Any) -> None:
        super().__init__(f"{field}: {problem}", **context)
        self.field = field
        self.problem = problem
        self.rule = rule


class BudgetExceededError(DubkitError):
    """A call refused by the client's budget before it was sent (so nothing was spent).

    ``budget``, ``spent`` (credits of the calls this client sent that may have been charged)
    and ``cost`` (the call's quote) are numbers; ``quote`` says how the cost was reckoned.
    """

    def __init__(self, budget: float, spent: float, quote: Any) -> None:
        left = max(0.0, budget - spent)
        super().__init__(
            f"over budget: this call would cost {quote}; the budget is {budget:g} credits, "
            f"{spent:g} spent, {left:g} left. Nothing was sent"
        )
        self.budget, self.spent, self.cost, self.quote = budget, spent, quote.credits, quote


class BatchOverBudgetError(BudgetExceededError):
    """A batch whose rows do not all fit its ``budget``: refused before any upload, naming the
    rows that do not fit (``rows``, as "talk → fr-FR"); ``cost`` is what they would add."""

    def __init__(self, budget: float, spent: float, cost: float, rows: list[str]) -> None:
        left = max(0.0, budget - spent)
        shown = ", ".join(rows[:10]) + (f" and {len(rows) - 10} more" if len(rows) > 10 else "")
        DubkitError.__init__(
            self,
            f"over budget: the budget is {budget:g} credits ({spent:g} spent by this batch, "
            f"{left:g} left); {len(rows)} rows do not fit, {cost:g} credits more: {shown}. "
            f"Nothing was sent: raise budget=, or pass over_budget='skip' to dub the rows that "
            f"fit",
        )
        self.budget, self.spent, self.cost, self.rows = budget, spent, cost, rows
        self.quote = None


class APIError(DubkitError):
    """The service answered with a business code other than 200.

    An answer without the service's ``{code, message, data}`` envelope (a gateway's page)
    keeps its ``content_type`` and a short ``body_excerpt`` (secrets masked).
    """

    content_type: str | None = None
    body_excerpt: str | None = None


class BadRequestError(APIError):
    code = 400


class AuthenticationError(APIError):
    code = 401


class InsufficientCreditsError(APIError):
    """Not enough credits, or a quota reached (402): the task was not started, nothing was
    charged; the message says which quota and who can raise it."""

    code = 402


class RateLimitError(APIError):
    """Throttled (429): the call was not taken; dubkit waited ``retry_after`` and tried again
    ``RetryPolicy.max_retries`` times before raising this."""

    code = 429


class NotFoundError(APIError):
    code = 404


class IdempotencyConflictError(APIError):
    """The service refused an ``X-Idempotency-Key`` it had already seen on this path (409).

    The service does not replay the first answer. ``first_attempt_accepted`` is True when
    dubkit itself sent the first attempt of this very call and lost its response: the work
    was accepted exactly once, and dubkit did not create a second task. Its result arrives by
    webhook (async creates carry the key in ``extraData["dubkitIdempotencyKey"]``) or shows in
    ``client.tasks.list()``.
    """

    code = 409

    def __init__(
        self,
        message: str,
        *,
        idempotency_key: str,
        first_attempt_accepted: bool,
        retry_after: float | None = None,
        **context: Any,
    ) -> None:
        super().__init__(message, **context)
        self.idempotency_key = idempotency_key
        self.first_attempt_accepted = first_attempt_accepted
        self.maybe_committed = first_attempt_accepted  # accepted: committed exactly once
        self.retry_after = retry_after


class PayloadTooLargeError(APIError):
    code = 413


class UnprocessableError(APIError):
    code = 422


class ServerError(APIError):
    code = 500


class UpstreamError(APIError):
    """502 (and a gateway's 504): upstream processing failed or timed out; an async task may
    still finish."""

    code = 502


class UnexpectedAnswerError(APIError):
    """The service answered (code 200, or an error without its envelope) with something the
    contract allows but dubkit cannot turn into what was asked: no line for a line sent, no
    URL for a part asked for, another voice than the one asked for. ``operation`` names the
    call; ``method``, ``path`` and ``req_id`` are those of the answer."""

    def __init__(self, message: str, *, operation: str, **context: Any) -> None:
        super().__init__(f"{operation}: {message}", **context)
        self.operation = operation


class APIConnectionError(DubkitError):
    """No answer from the service: connection refused, reset, or the response was lost."""


def origin_of(url: str) -> str:
    """``https://api.example.com/v1?x=1`` -> ``https://api.example.com:443``: the host a
    connection error names, without the path, query or user info a secret could hide in."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    try:
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:  # not a number: the URL is refused elsewhere; name the host alone
        port = None
    return (
        f"{parts.scheme}://" + (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    )


class APITimeoutError(APIConnectionError):
    """The service did not answer within the read timeout."""


class TaskFailedError(DubkitError):
    """A task ended with status ``failed``; ``task`` holds its last known state."""

    def __init__(self, message: str, *, task: Any, **context: Any) -> None:
        super().__init__(message, **context)
        self.task = task


class TaskTimeoutError(DubkitError, TimeoutError):
    """``Task.wait()`` ran past its overall deadline; ``last_status`` says where it was."""

    def __init__(self, message: str, *, task: Any, last_status: str | None) -> None:
        super().__init__(message)
        self.task = task
        self.last_status = last_status


class WebhookVerificationError(DubkitError):
    """A webhook delivery failed verification; ``reason`` is a short machine-readable word."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class ReplayMissError(DubkitError):
    """A replaying client was asked for a call its cassette does not hold, and it may not
    send it on (strict replay, or not an API call: replay reaches no network). ``call`` is
    the call, as ``METHOD /path``."""

    def __init__(self, message: str, *, call: str) -> None:
        super().__init__(message)
        self.call = call


# The error class of each business code (or HTTP status); any other is a plain APIError.
_BY_CODE: dict[int, type[APIError]] = {
    **{
        cls.code: cls
        for cls in (
            BadRequestError,
            AuthenticationError,
            InsufficientCreditsError,
            RateLimitError,
            NotFoundError,
            IdempotencyConflictError,
            PayloadTooLargeError,
            UnprocessableError,
            ServerError,
            UpstreamError,
        )
    },
    504: UpstreamError,  # a gateway that timed out waiting for the service
}


def possibly_committed(error: DubkitError, idempotency_key: str, why: str) -> DubkitError:
    """Mark ``error`` as ending a call the service may have committed, and say so in its text.

    The error stays of its own class (an :class:`UpstreamError` is still one), so existing
    ``except`` clauses keep working; ``maybe_committed`` and the message carry the warning.
    """
    error.maybe_committed = True
    error.idempotency_key = idempotency_key
    error.message = (
        f"{error.message}. This call MAY HAVE BEEN COMMITTED (and, if it is paid, charged): "
        f"{why}. Do not send it again with a new key. To find out: send it again with "
        f"idempotency_key={idempotency_key!r} (the service answers 409 if it was committed, "
        f"and does the work once if it was not); or wait for the webhook whose "
        f"extraData.dubkitIdempotencyKey is {idempotency_key!r} (async creates); or look in "
        f"client.tasks.list()"
    )
    error.args = (error.message,)
    return error


def error_class_for(code: int) -> type[APIError]:
    """The error class for a business code; unknown codes map to :class:`APIError`."""
    return _BY_CODE.get(code, APIError)
