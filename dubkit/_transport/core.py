"""The transports' one core, with no I/O: building a call, the retry loop, reading answers.

Both transports (:class:`~dubkit._transport.Transport` on ``requests``,
:class:`~dubkit._transport.AsyncTransport` on ``httpx``) are a thin driver around
:meth:`TransportCore.steps`, a generator that says what to do next (:class:`Send` the
exchange's next attempt with a read timeout, or :class:`Sleep`) and is told what came of it
(a :class:`Reply`, or a :class:`Failure` the driver classified from its library's exception).
The rules (which call is a read, the idempotency key, the verdict on every attempt, backoff and
deadlines, the envelope, the error tree, a possible charge never hidden) live here once.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlencode, urljoin, urlsplit

import pydantic

from .. import contract
from .._util import extras_header
from .._util.masking import mask_key, mask_secrets
from .._util.urls import is_web_url
from .._version import __version__
from .._wire import M, answer_as, checked
from ..errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    DubkitError,
    IdempotencyConflictError,
    ValidationError,
    error_class_for,
    origin_of,
)
from ..schema import (
    OPERATIONS,
    OPERATIONS_BY_PATH,
    Operation,
    product_of_operation,
    with_idempotency_key,
)
from .budget import Budget
from .exchange import Exchange
from .keys import check_api_key, in_scope, new_id
from .policy import REPEATABLE, Outcome, RetryPolicy, Timeout, is_read, retry_after_seconds

log = logging.getLogger("dubkit")
API_PREFIX = "/openapi/v1"
USER_AGENT = f"dubkit/{__version__}"
OPS: dict[str, Operation] = {op.name: op for op in OPERATIONS}
ANSWERED = Outcome("answered")  # a success's outcome: the retry loop reads no more of it
EXCERPT = 200  # characters of a body kept in an error

# The last API call answered, per thread and per asyncio task (each has its own context):
# (id of the transport, the call's method/path/req_id, its operation name).
_LAST: contextvars.ContextVar[tuple[int, dict[str, Any], str | None]] = contextvars.ContextVar(
    "dubkit_last_answered"
)


# --------------------------------------------------------------------------- the driver's words


@dataclass(frozen=True)
class Send:
    """Send the exchange's next attempt (:meth:`TransportCore.wire_request`), reading for at
    most ``read`` seconds."""

    read: float


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Reply:
    """An HTTP answer as the core reads it, whichever library brought it (``native``: that
    library's response, what a plain exchange returns)."""

    status: int
    headers: Mapping[str, str]  # case-insensitive, as both libraries give them
    content: bytes
    native: Any
    reason: str = ""

    @property
    def is_redirect(self) -> bool:
        return 300 <= self.status < 400 and "location" in self.headers

    def json(self) -> Any:
        return json.loads(self.content)


FailureKind = Literal["connect_timeout", "read_timeout", "dropped_mid_answer", "refused", "dropped"]


@dataclass(frozen=True)
class Failure:
    """An attempt that got no HTTP answer, as the driver classified its library's exception:
    ``connect_timeout`` and ``refused`` (nothing was sent: no connection, no TLS handshake),
    ``read_timeout``, ``dropped_mid_answer`` and ``dropped`` (sent, no complete answer)."""

    kind: FailureKind


@dataclass(frozen=True)
class WireRequest:
    """One attempt, ready for either library: the secret is added only below its scope."""

    method: str
    url: str
    headers: dict[str, str]
    json: Any
    data: Any


Step = Send | Sleep
Steps = Generator[Step, "Reply | Failure | None", Any]


class TransportCore:
    """What both transports share: the secret and its scope, URLs, call building, the steps
    of one logical call, and reading answers. Subclasses only move bytes and sleep."""

    def __init__(
        self,
        secret: str | None,
        base_url: str,
        *,
        timeout: Timeout | None = None,
        retry: RetryPolicy | None = None,
        header: str = "Authorization",
        scheme: str = "Bearer ",
        scope: str = API_PREFIX,
    ) -> None:
        self._secret = check_api_key(secret) if secret is not None else None
        self.base_url = base_url.rstrip("/")
        self.origin = origin_of(self.base_url)  # what connection errors name, nothing more
        self.timeout = timeout or Timeout()
        self.retry = retry or RetryPolicy()
        self._auth_header = (header, scheme + secret) if secret is not None else None
        self._auth_scope = (self.base_url + scope).rstrip("/")
        # Whose answers answered() and read() speak of: this transport's own, or (for the async
        # transport's sync twin, which makes results off the loop) the async transport's.
        self.answers_of: int = id(self)
        self.budget: Budget | None = None  # the client's ceiling on credits, if it set one
        # Whether a dubkit sandbox answers (it sends its labelled extras beside the body).
        self.talks_to_sandbox = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, secret={self.masked_key!r})"

    @property
    def masked_key(self) -> str:
        return mask_key(self._secret) if self._secret is not None else "none"

    @property
    def account_id(self) -> str:
        """A stable, one-way id of the key, for local files kept per account (never the key)."""
        return hashlib.sha256((self._secret or "").encode()).hexdigest()[:24]

    def secret_applies(self, url: str) -> bool:
        """Whether ``url`` is below the secret's scope (downloads and storage PUTs on the same
        host, as the sandbox serves them, never get it)."""
        return in_scope(url, self._auth_scope)

    # ------------------------------------------------------------------ building calls

    def prepare_call(
        self, name: str, payload: Any, idempotency_key: str | None, *, echo_key: bool
    ) -> tuple[Exchange, tuple[str, Any] | None]:
        """Operation ``name``'s exchange, ``payload`` checked against it before the network
        (bad input costs nothing and the error names the field), and what the budget prices."""
        op = OPS[name]
        model = op.body or op.query
        body = checked(model, payload if payload is not None else {}) if model else None
        get = op.method == "GET"
        exchange = self.exchange(
            op.method,
            op.path,
            params=body.to_wire() if get and body else None,
            body=None,
            read=is_read(op),
            idempotency_key=idempotency_key,
        )
        exchange.operation = name
        if not get and body is not None:
            if echo_key and exchange.key:
                body = with_idempotency_key(body, exchange.key)
            exchange.body = body.to_wire()
        return exchange, ((name, body) if body is not None else None)

    @staticmethod
    def check_task_create(name: str) -> None:
        if not OPS[name].asynchronous:
            raise ValueError(f"{name} is not an asynchronous create")

    def priced(self, method: str, path: str, body: Any) -> tuple[str, Any] | None:
        """A paid create sent through ``request`` as it would go through ``call``: its
        operation and typed body, for the budget (None for any other call, or no budget)."""
        if self.budget is None:  # the usual case: nothing to look up
            return None
        op = OPERATIONS_BY_PATH.get((method.upper(), self.api_path(path)))
        if op is None or op.body is None or product_of_operation(op.name) is None:
            return None
        return op.name, checked(op.body, body if body is not None else {})

    def exchange(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None,
        body: Any,
        read: bool | None,
        idempotency_key: str | None,
        req_id: str | None = None,
    ) -> Exchange:
        method = method.upper()
        url = self.url(path)
        req_id = req_id or new_id()
        query = {k: v for k, v in (params or {}).items() if v is not None}
        query["req_id"] = req_id
        return Exchange.api(
            method,
            url,
            query=query,
            body=body,
            read=method == "GET" if read is None else read,
            context={
                "method": method,
                "path": url[len(self.base_url) :].split("?")[0],
                "req_id": req_id,
            },
            idempotency_key=idempotency_key,
        )

    def plain_exchange(
        self,
        method: str,
        url: str,
        *,
        data: Any = None,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
    ) -> Exchange:
        """A plain HTTP exchange (a file, a storage PUT, an admin call). ``data`` may be a
        callable that makes a fresh body for each attempt."""
        method = method.upper()
        if not is_web_url(url):
            shown = mask_secrets(url)[:80] if isinstance(url, str) else type(url).__name__
            raise ValidationError("url", f"must be an absolute http(s) URL, got {shown!r}")
        return Exchange(
            method,
            url,
            dict(params or {}),
            json,
            method in REPEATABLE,
            {"method": method, "path": urlsplit(url).path},
            raw=True,
            data=data if callable(data) or data is None else (lambda: data),
            headers=dict(headers or {}),
        )

    def wire_request(self, exchange: Exchange, base_headers: Mapping[str, str]) -> WireRequest:
        """The exchange's next attempt as either library sends it."""
        url = with_query(exchange.url, exchange.query)
        headers = {**base_headers, **exchange.request_headers()}
        if self._auth_header is not None and self.secret_applies(url):
            headers[self._auth_header[0]] = self._auth_header[1]
        data = exchange.data() if exchange.data else None
        return WireRequest(exchange.method, url, headers, exchange.body, data)

    # ------------------------------------------------------------------ urls

    def url(self, path: str) -> str:
        """The full URL of an API path; absolute URLs must point at ``base_url``.

        Calls carry the API key, so a URL on another host (a CDN file, a presigned storage
        URL) is refused rather than sent the key.
        """
        if path.startswith(("http://", "https://")):
            if not self._under_base(path):
                raise ValidationError(
                    "path",
                    f"must be under the client's base_url "
                    f"{self.base_url!r}; fetch other hosts without "
                    f"the API key",
                )
            return path
        if not path.startswith(API_PREFIX):
            path = API_PREFIX + (path if path.startswith("/") else "/" + path)
        return self.base_url + path

    def api_path(self, path: str) -> str:
        """``path`` as the operation table writes it (below the prefix, no query)."""
        return self.url(path)[len(self.base_url) :].split("?")[0].removeprefix(API_PREFIX)

    def _under_base(self, url: str) -> bool:
        return url == self.base_url or url.startswith(self.base_url + "/")

    # ------------------------------------------------------------------ the one retry loop

    def steps(self, exchange: Exchange, deadline: float | None) -> Steps:
        """One logical call as steps for a driver; its value is the call's result (the
        envelope's data, or a plain exchange's native response). Raises its final error."""
        retries = 0
        while True:
            data, error, outcome, why = yield from self._attempt(exchange, deadline)
            if error is None:
                _LAST.set((self.answers_of, exchange.context, exchange.operation))
                return data
            judged = exchange.judge(self.retry, outcome, why)
            if not judged.retry:
                raise exchange.final_error(error, self.retry)
            if not (outcome.conflict and not exchange.read):  # asking after a lost answer
                if retries >= self.retry.max_retries:
                    raise exchange.final_error(error, self.retry)
                retries += 1
            delay = self.retry.delay(retries - 1, error.retry_after)
            if deadline is not None and time.monotonic() + delay >= deadline:
                raise exchange.final_error(error, self.retry)
            _log_retry(exchange, delay, error)
            yield Sleep(delay)
            exchange.next_attempt()

    def _attempt(
        self, exchange: Exchange, deadline: float | None
    ) -> Generator[Step, Reply | Failure | None, tuple[Any, DubkitError | None, Outcome, str]]:
        """One attempt: ``(data, None, …)`` on success, else ``(None, error, outcome, why)``:
        what the attempt came to, for the verdict, and why it may have committed."""
        read = self.timeout.read
        if deadline is not None:
            read = min(read, deadline - time.monotonic())
            if read <= 0:
                expired = APITimeoutError("the call's deadline passed", **exchange.context)
                return None, expired, Outcome("not_sent"), ""
        got = yield Send(read)
        if isinstance(got, Failure):
            return self._failed(exchange, got, read)
        assert isinstance(got, Reply)
        if got.is_redirect:
            target = urljoin(exchange.url, got.headers["location"])
            redirect = redirect_refused(exchange, got, self.base_url, self._under_base(target))
            return None, redirect, Outcome("redirected", got.status), ""
        if exchange.raw:
            return self._raw_answer(exchange, got)
        return self._api_answer(exchange, got)

    def _failed(
        self, exchange: Exchange, failure: Failure, read: float
    ) -> tuple[None, DubkitError, Outcome, str]:
        context, origin = exchange.context, origin_of(exchange.url)
        if failure.kind == "connect_timeout":
            message = f"could not connect to {origin} within {self.timeout.connect}s"
            return None, APITimeoutError(message, **context), Outcome("not_sent"), ""
        if failure.kind == "refused":
            refused = APIConnectionError(f"could not connect to {origin}", **context)
            return None, refused, Outcome("not_sent"), ""
        if failure.kind == "read_timeout":
            return (
                None,
                APITimeoutError(f"no answer within the read timeout of {read:.3g}s", **context),
                Outcome("no_answer"),
                f"an attempt got no answer within the read timeout of {read:.3g}s",
            )
        where = (
            "mid-answer" if failure.kind == "dropped_mid_answer" else "before the answer arrived"
        )
        return (
            None,
            APIConnectionError(f"the connection to {origin} dropped {where}", **context),
            Outcome("no_answer"),
            f"an attempt's connection dropped {where}",
        )

    # ------------------------------------------------------------------ reading answers

    def _api_answer(
        self, exchange: Exchange, reply: Reply
    ) -> tuple[Any, DubkitError | None, Outcome, str]:
        status = reply.status
        try:
            payload = reply.json()
        except ValueError:  # not JSON: a proxy's error page, a truncated body
            payload = None
        code = payload.get("code") if isinstance(payload, dict) else None
        if isinstance(code, float) and code.is_integer():  # JSON has one number type: 200.0 is 200
            code = int(code)
        if code == 200:
            assert isinstance(payload, dict)
            data = payload.get("data")
            overlay = extras_header.decode(reply.headers.get(extras_header.HEADER))
            if overlay is not None:  # a dubkit sandbox's labelled extras, put back
                self.talks_to_sandbox = True
                data = contract.merge(data, overlay.get("data"))
            return data, None, ANSWERED, ""
        enveloped = isinstance(code, int) and not isinstance(code, bool)
        code = code if isinstance(code, int) and enveloped else status
        wire = _wire_facts(reply)
        if enveloped:
            assert isinstance(payload, dict)
            said = payload.get("message")
            message = (
                said if isinstance(said, str) and said else f"the service answered code {code}"
            )
        else:  # a gateway's or proxy's own page: keep what it said
            message = (
                f"the service answered HTTP {status} ({wire['content_type'] or 'no content type'}) "
                f"without its envelope: {wire['body_excerpt']!r}"
            )
        context = {**exchange.context, "code": code, "http_status": status}
        outcome = Outcome("answered", status, code)
        error: DubkitError
        if outcome.conflict:
            error = IdempotencyConflictError(
                message,
                idempotency_key=exchange.key or "",
                first_attempt_accepted=False,
                retry_after=retry_after_seconds(reply.headers),
                **context,
            )
        else:
            error = error_class_for(code)(message, **context)
            error.retry_after = retry_after_seconds(reply.headers)
        if not enveloped:
            error.content_type, error.body_excerpt = wire["content_type"], wire["body_excerpt"]
        return None, error, outcome, f"an attempt was answered {code} ({message})"

    def _raw_answer(
        self, exchange: Exchange, reply: Reply
    ) -> tuple[Any, DubkitError | None, Outcome, str]:
        status = reply.status
        outcome = Outcome("answered", status)
        if 200 <= status < 300:
            return reply.native, None, outcome, ""
        try:
            body = reply.json()
            message = body.get("message") if isinstance(body, dict) else None
        except ValueError:
            message = None
        # A plain exchange has no idempotency key: its 409 is the server's conflict, not a
        # refused key.
        cls = error_class_for(status)
        cls = APIError if cls is IdempotencyConflictError else cls
        text = reply.content[:800].decode("utf-8", "replace")[:200]
        error = cls(
            f"HTTP {status}: {message or text or reply.reason or 'no reason given'}",
            code=status,
            http_status=status,
            **exchange.context,
        )
        error.retry_after = retry_after_seconds(reply.headers)
        return None, error, outcome, ""

    def answered(self) -> dict[str, Any]:
        """``method``, ``path`` and ``req_id`` of the last API call this thread (or asyncio
        task) got an answer to: what an error about that answer's content carries."""
        last = _LAST.get(None)
        return dict(last[1]) if last is not None and last[0] == self.answers_of else {}

    def read(self, model: type[M], data: Any, operation: str | None = None) -> M:
        """``data`` of the last answer as ``model``; an answer that does not fit is an
        :class:`UnexpectedAnswerError` naming ``operation`` (by default the call answered)
        and keeping the answer's req_id."""
        try:
            return model.model_validate(data)
        except pydantic.ValidationError:
            pass  # read again below, by what makes the error (only a misfit pays for it)
        last = _LAST.get(None)
        named = last[2] if last is not None and last[0] == self.answers_of else None
        said = operation or named or "an answer"
        return answer_as(model, data, operation=said, context=self.answered())


def redirect_refused(
    exchange: Exchange, response: Reply, base_url: str, within_base: bool
) -> DubkitError:
    """A redirect is answered with an error, never followed.

    Off ``base_url`` following would send the body, the idempotency key and (on some hops)
    the Authorization header to a host the caller never chose. Within ``base_url`` we refuse
    too, by choice: the interface defines no redirects, so one means a wrong ``base_url`` or a
    proxy in the way; 301/302/303 would silently turn a POST into a GET without its body; and
    the idempotency key is scoped to the path it was sent to, so a create re-sent to another
    path would not be protected by it.
    """
    parts = urlsplit(urljoin(exchange.url, response.headers["location"]))
    if within_base:
        where, hint = f"to {parts.path}", "the interface defines no redirects"
    else:
        where = f"to another host, {parts.scheme}://{parts.netloc}"
        hint = "following it would send the request and the API key there"
    return APIError(
        f"the service answered HTTP {response.status}, redirecting {where}; "
        f"dubkit does not follow redirects for API calls ({hint}): check "
        f"base_url {base_url!r}",
        http_status=response.status,
        **exchange.context,
    )


def with_query(url: str, query: Mapping[str, Any]) -> str:
    """``url`` with ``query`` encoded as requests encodes ``params`` (a list value repeats its
    key; None values are left out)."""
    pairs = [
        (key, value)
        for key, values in query.items()
        for value in (values if isinstance(values, (list, tuple)) else (values,))
        if value is not None
    ]
    if not pairs:
        return url
    return url + ("&" if "?" in url else "?") + urlencode(pairs)


def _wire_facts(reply: Reply) -> dict[str, str]:
    """What an answer without the envelope said: its content type and the start of its body,
    on one line, with anything shaped like a secret masked."""
    text = reply.content[: EXCERPT * 4].decode("utf-8", "replace")
    excerpt = mask_secrets(" ".join(text.split()))[:EXCERPT]
    return {"content_type": reply.headers.get("content-type", ""), "body_excerpt": excerpt}


def _log_retry(exchange: Exchange, delay: float, error: DubkitError) -> None:
    log.info(
        "retrying %s %s in %.2fs (req_id %s): %s",
        exchange.method,
        exchange.context["path"],
        delay,
        exchange.context.get("req_id"),
        error.message,
    )
