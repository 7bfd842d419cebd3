"""The Transport: one session, one retry loop, one error tree for every request dubkit sends."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

import pydantic
import requests
from requests.adapters import HTTPAdapter

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
from .exchange import Exchange, never_connected, redirect_refused
from .keys import SecretHeader, check_api_key, new_id
from .policy import REPEATABLE, Outcome, RetryPolicy, Timeout, is_read, retry_after

log = logging.getLogger("dubkit")
API_PREFIX = "/openapi/v1"
_OPS: dict[str, Operation] = {op.name: op for op in OPERATIONS}
ANSWERED = Outcome("answered")  # a success's outcome: the retry loop reads no more of it


class Transport:
    """Sends one logical call, with its retries, and reads the answer.

    ``secret`` goes in ``header`` (``Authorization: Bearer <key>`` for the service's API) on
    requests below ``base_url + scope`` only; downloads and storage PUTs never carry it. (A
    sandbox handle without an admin token has no secret: its calls go out bare.)
    """

    def __init__(
        self,
        secret: str | None,
        base_url: str,
        *,
        timeout: Timeout | None = None,
        retry: RetryPolicy | None = None,
        pool_size: int = 16,
        header: str = "Authorization",
        scheme: str = "Bearer ",
        scope: str = API_PREFIX,
    ) -> None:
        self._secret = check_api_key(secret) if secret is not None else None
        self.base_url = base_url.rstrip("/")
        self.origin = origin_of(self.base_url)  # what connection errors name, nothing more
        self.timeout = timeout or Timeout()
        self.retry = retry or RetryPolicy()
        self.session = requests.Session()
        # Pool as large as the helpers' concurrency so parallel chunks never wait for a socket.
        adapter = HTTPAdapter(pool_connections=pool_size, pool_maxsize=pool_size)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        if secret is not None:
            self.session.auth = SecretHeader(header, scheme + secret, self.base_url + scope)
        self.session.headers["User-Agent"] = f"dubkit/{__version__}"
        # requests re-reads proxy and CA-bundle variables from os.environ on every call
        # (~0.25 ms); read them once here and keep honouring them.
        self.session.proxies.update(requests.utils.get_environ_proxies(self.base_url))
        bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
        if bundle:
            self.session.verify = bundle
        self.session.trust_env = False
        self._answered = threading.local()  # the last call this thread got an answer to
        self.budget: Budget | None = None  # the client's ceiling on credits, if it set one
        # Whether a dubkit sandbox answers (it sends its labelled extras beside the body).
        self.talks_to_sandbox = False

    def __repr__(self) -> str:
        return f"Transport(base_url={self.base_url!r}, secret={self.masked_key!r})"

    @property
    def masked_key(self) -> str:
        return mask_key(self._secret) if self._secret is not None else "none"

    @property
    def account_id(self) -> str:
        """A stable, one-way id of the key, for local files kept per account (never the key)."""
        return hashlib.sha256((self._secret or "").encode()).hexdigest()[:24]

    # ------------------------------------------------------------------ the service's API

    def call(
        self,
        name: str,
        payload: Any = None,
        *,
        idempotency_key: str | None = None,
        deadline: float | None = None,
    ) -> Any:
        """Validate ``payload`` against operation ``name`` and send it; the envelope's data.

        Validation happens before the network, so bad input costs nothing and the error names
        the field. ``payload`` may be a model, a snake_case dict or the raw camelCase wire dict.
        """
        data, _key = self._call(name, payload, idempotency_key, deadline, echo_key=False)
        return data

    def start_task(
        self, name: str, payload: Any = None, *, idempotency_key: str | None = None
    ) -> tuple[Any, str]:
        """Send the asynchronous create ``name``: its acceptance, and the idempotency key it
        carried, also in ``extraData.dubkitIdempotencyKey`` so that its webhook can be matched
        to the call even when the acceptance answer is lost."""
        op = _OPS[name]
        if not op.asynchronous:
            raise ValueError(f"{name} is not an asynchronous create")
        data, key = self._call(name, payload, idempotency_key, None, echo_key=True)
        assert key is not None  # a POST always carries one
        return data, key

    def _call(
        self,
        name: str,
        payload: Any,
        idempotency_key: str | None,
        deadline: float | None,
        *,
        echo_key: bool,
    ) -> tuple[Any, str | None]:
        op = _OPS[name]
        model = op.body or op.query
        body = checked(model, payload if payload is not None else {}) if model else None
        get = op.method == "GET"
        exchange = self._exchange(
            op.method,
            op.path,
            params=body.to_wire() if get and body else None,
            body=None,
            read=is_read(op),
            idempotency_key=idempotency_key,
        )
        if not get and body is not None:
            if echo_key and exchange.key:
                body = with_idempotency_key(body, exchange.key)
            exchange.body = body.to_wire()
        data = self._spending(exchange, deadline, (name, body) if body is not None else None)
        self._answered.operation = name
        return data, exchange.key

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        idempotency_key: str | None = None,
        req_id: str | None = None,
        deadline: float | None = None,
        read: bool | None = None,
    ) -> Any:
        """Send one API call and return the envelope's ``data``.

        POSTs carry an ``X-Idempotency-Key`` (the caller's, or one made here). ``read`` says
        the call changes nothing (default: only GETs do); a changing call keeps its key on
        every retry, a read POST gets a fresh one per retry. ``deadline`` (a
        ``time.monotonic()`` value) bounds the whole call, retries included.
        """
        exchange = self._exchange(
            method,
            path,
            params=params,
            body=body,
            read=read,
            idempotency_key=idempotency_key,
            req_id=req_id,
        )
        return self._spending(exchange, deadline, self._priced(exchange.method, path, body))

    def _spending(
        self, exchange: Exchange, deadline: float | None, call: tuple[str, Any] | None
    ) -> Any:
        """Run ``exchange``; a ``call`` (operation, typed body) under the client's budget."""
        if self.budget is None or call is None:
            return self._run(exchange, deadline)
        with self.budget.spending(call[0], call[1], exchange.key):
            return self._run(exchange, deadline)

    def _priced(self, method: str, path: str, body: Any) -> tuple[str, Any] | None:
        """A paid create sent through :meth:`request` as it would go through :meth:`call`:
        its operation and typed body, for the budget (None for any other call, or no budget)."""
        if self.budget is None:  # the usual case: nothing to look up
            return None
        op = OPERATIONS_BY_PATH.get((method, self.api_path(path)))
        if op is None or op.body is None or product_of_operation(op.name) is None:
            return None
        return op.name, checked(op.body, body if body is not None else {})

    def _exchange(
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

    # ------------------------------------------------------------------ plain HTTP

    def send(
        self,
        method: str,
        url: str,
        *,
        data: Callable[[], Any] | bytes | None = None,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
    ) -> requests.Response:
        """One plain HTTP exchange (a file, a storage PUT, an admin call), with the same retries
        and errors as API calls; the 2xx response. ``data`` may be a callable that makes a
        fresh body for each attempt (a file slice is read once per attempt)."""
        method = method.upper()
        if not is_web_url(url):
            shown = mask_secrets(url)[:80] if isinstance(url, str) else type(url).__name__
            raise ValidationError("url", f"must be an absolute http(s) URL, got {shown!r}")
        exchange = Exchange(
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
        response: requests.Response = self._run(exchange, None)
        return response

    def answered(self) -> dict[str, Any]:
        """``method``, ``path`` and ``req_id`` of the last API call this thread got an answer
        to: what an error about that answer's content carries."""
        context: dict[str, Any] = getattr(self._answered, "context", {})
        return dict(context)

    def read(self, model: type[M], data: Any, operation: str | None = None) -> M:
        """``data`` of the last answer as ``model``; an answer that does not fit is an
        :class:`UnexpectedAnswerError` naming ``operation`` (by default the call answered)
        and keeping the answer's req_id."""
        try:
            return model.model_validate(data)
        except pydantic.ValidationError:
            pass  # read again below, by what makes the error (only a misfit pays for it)
        said = operation or getattr(self._answered, "operation", None) or "an answer"
        return answer_as(model, data, operation=said, context=self.answered())

    def download(self, url: str) -> bytes:
        """The bytes behind a file URL (a TTS clip, a dub, a subtitle file)."""
        return self.send("GET", url).content

    # ------------------------------------------------------------------ urls

    def url(self, path: str) -> str:
        """The full URL of an API path; absolute URLs must point at ``base_url``.

        The session carries the API key, so a URL on another host (a CDN file, a presigned
        storage URL) is refused rather than sent the key.
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

    def _run(self, exchange: Exchange, deadline: float | None) -> Any:
        retries = 0
        while True:
            data, error, outcome, why = self._attempt(exchange, deadline)
            if error is None:
                self._answered.context = exchange.context
                self._answered.operation = None  # a plain exchange; _call names an API one
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
            log.info(
                "retrying %s %s in %.2fs (req_id %s): %s",
                exchange.method,
                exchange.context["path"],
                delay,
                exchange.context.get("req_id"),
                error.message,
            )
            time.sleep(delay)
            exchange.next_attempt()

    def _attempt(
        self, exchange: Exchange, deadline: float | None
    ) -> tuple[Any, DubkitError | None, Outcome, str]:
        """One HTTP exchange: ``(data, None, …)`` on success, else ``(None, error, outcome,
        why)``: what the attempt came to, for the verdict, and why it may have committed."""
        read = self.timeout.read
        context = exchange.context
        if deadline is not None:
            read = min(read, deadline - time.monotonic())
            if read <= 0:
                expired = APITimeoutError("the call's deadline passed", **context)
                return None, expired, Outcome("not_sent"), ""
        try:
            response = self._send(exchange, read)
        except requests.exceptions.ConnectTimeout:
            message = (
                f"could not connect to {origin_of(exchange.url)} within {self.timeout.connect}s"
            )
            return None, APITimeoutError(message, **context), Outcome("not_sent"), ""
        except requests.exceptions.ReadTimeout:
            return (
                None,
                APITimeoutError(f"no answer within the read timeout of {read:.3g}s", **context),
                Outcome("no_answer"),
                f"an attempt got no answer within the read timeout of {read:.3g}s",
            )
        except requests.exceptions.ChunkedEncodingError:
            return (
                None,
                APIConnectionError(
                    f"the connection to {origin_of(exchange.url)} dropped mid-answer", **context
                ),
                Outcome("no_answer"),
                "an attempt's connection dropped mid-answer",
            )
        except requests.exceptions.ConnectionError as exc:
            if never_connected(exc):
                origin = origin_of(exchange.url)
                refused = APIConnectionError(f"could not connect to {origin}", **context)
                return None, refused, Outcome("not_sent"), ""
            return (
                None,
                APIConnectionError(
                    f"the connection to {origin_of(exchange.url)} dropped before the answer arrived",
                    **context,
                ),
                Outcome("no_answer"),
                "an attempt's connection dropped before the answer arrived",
            )
        if response.is_redirect:
            target = urljoin(exchange.url, response.headers["Location"])
            redirect = redirect_refused(exchange, response, self.base_url, self._under_base(target))
            return None, redirect, Outcome("redirected", response.status_code), ""
        if exchange.raw:
            return self._raw_answer(exchange, response)
        return self._api_answer(exchange, response)

    def _send(self, exchange: Exchange, read: float) -> requests.Response:
        """One attempt on the wire, through the session's adapters (and so any mounted seam).

        The request is prepared here with the session's settings, read as they stand, rather
        than by ``Session.request``: that call rebuilds its cookie jars and re-merges headers,
        params, hooks and environment settings on every request, which under requests 2.34 on
        Python 3.11 (runtime protocol checks) costs more than all of dubkit's own work on a
        call. Cookies the session holds are still sent and kept. Redirects are not followed:
        see exchange.redirect_refused.
        """
        session = self.session
        prepared = requests.PreparedRequest()
        prepared.prepare(
            method=exchange.method,
            url=with_query(exchange.url, exchange.query),
            headers={**session.headers, **exchange.request_headers()},
            data=exchange.data() if exchange.data else None,
            json=exchange.body,
            auth=session.auth,
            cookies=session.cookies,
            hooks=session.hooks,
        )
        # verify, cert and stream: the session's own, as send reads them
        return session.send(
            prepared,
            timeout=(self.timeout.connect, read),
            allow_redirects=False,
            proxies=session.proxies,
        )

    def _api_answer(
        self, exchange: Exchange, response: requests.Response
    ) -> tuple[Any, DubkitError | None, Outcome, str]:
        status = response.status_code
        try:
            payload = response.json()
        except ValueError:  # not JSON: a proxy's error page, a truncated body
            payload = None
        code = payload.get("code") if isinstance(payload, dict) else None
        if isinstance(code, float) and code.is_integer():  # JSON has one number type: 200.0 is 200
            code = int(code)
        if code == 200:
            data = payload.get("data")
            overlay = extras_header.decode(response.headers.get(extras_header.HEADER))
            if overlay is not None:  # a dubkit sandbox's labelled extras, put back
                self.talks_to_sandbox = True
                data = contract.merge(data, overlay.get("data"))
            return data, None, ANSWERED, ""
        enveloped = isinstance(code, int) and not isinstance(code, bool)
        code = code if isinstance(code, int) and enveloped else status
        wire = _wire_facts(response)
        if enveloped:
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
                retry_after=retry_after(response),
                **context,
            )
        else:
            error = error_class_for(code)(message, **context)
            error.retry_after = retry_after(response)
        if not enveloped:
            error.content_type, error.body_excerpt = wire["content_type"], wire["body_excerpt"]
        return None, error, outcome, f"an attempt was answered {code} ({message})"

    def _raw_answer(
        self, exchange: Exchange, response: requests.Response
    ) -> tuple[Any, DubkitError | None, Outcome, str]:
        status = response.status_code
        outcome = Outcome("answered", status)
        if 200 <= status < 300:
            return response, None, outcome, ""
        try:
            body = response.json()
            message = body.get("message") if isinstance(body, dict) else None
        except ValueError:
            message = None
        # A plain exchange has no idempotency key: its 409 is the server's conflict, not a
        # refused key.
        cls = error_class_for(status)
        cls = APIError if cls is IdempotencyConflictError else cls
        error = cls(
            f"HTTP {status}: {message or response.text[:200] or response.reason}",
            code=status,
            http_status=status,
            **exchange.context,
        )
        error.retry_after = retry_after(response)
        return None, error, outcome, ""

    def mount(self, adapter: requests.adapters.BaseAdapter) -> None:
        """Send every request through ``adapter`` (the seam a cassette records and replays
        at: this session only, nothing process-wide)."""
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    def close(self) -> None:
        self.session.close()


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


EXCERPT = 200  # characters of a body kept in an error


def _wire_facts(response: requests.Response) -> dict[str, str]:
    """What an answer without the envelope said: its content type and the start of its body,
    on one line, with anything shaped like a secret masked."""
    text = response.content[: EXCERPT * 4].decode("utf-8", "replace")
    excerpt = mask_secrets(" ".join(text.split()))[:EXCERPT]
    return {"content_type": response.headers.get("Content-Type", ""), "body_excerpt": excerpt}
