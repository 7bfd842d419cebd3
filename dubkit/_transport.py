"""The one place dubkit sends HTTP: envelope, errors, idempotency, retries, timeouts.

Retry rules, and why. A call is a *read* when it is a GET or a POST the operation table marks
read-only (the two voice-list POSTs): repeating it changes nothing. Every other POST *changes*
something and may be charged.

* A connection that was never made (refused, connect timeout, failed TLS handshake) is always
  retried: nothing reached the service.
* A request that was sent but got no complete answer (read timeout, connection dropped
  mid-response), a 500 or a 502, is *ambiguous*: the service may have committed it.
  A read is simply retried, a read POST with a fresh idempotency key each time (so even a
  service that consumed keys there could not refuse a retried list; a 409 on a read is retried).
  A changing POST is retried with the **same** key. The service answers a reused key with 409
  instead of replaying. A 409 then means an attempt committed, or is still running (and may yet
  fail and free the key), so dubkit waits ``Retry-After`` and asks again; a retry that goes
  through means the first attempt never counted. After more than ``CONFLICT_CHECKS`` such 409s
  (counted over the whole call: a later 502 or timeout does not show the key was free) dubkit
  raises :class:`IdempotencyConflictError` with ``first_attempt_accepted=True`` rather than
  inventing a new key (which would create a second, double-charged task).
* 409 on a changing call before any ambiguous attempt means the caller reused a key: raised at
  once, never retried.
* 429 and 503 are throttling: retried after ``Retry-After`` (or the backoff).
* Every other business code is final. Redirects are never followed (``_redirect_refused``).
* A possible charge is never hidden: when a changing call ends in an error after an ambiguous
  attempt, the error has ``maybe_committed=True``, the call's ``idempotency_key`` and a message
  saying how to find out (:func:`dubkit.errors.possibly_committed`). Only refusals the same
  request gets every time (400, 401, 413, 422) show the earlier attempt was refused too.

Backoff is exponential with full jitter, capped; ``Retry-After`` wins when the service sends it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import time
import uuid
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urljoin, urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import NewConnectionError

from ._util.masking import mask_key
from ._version import __version__
from .errors import (APIConnectionError, APIError, APITimeoutError, DubkitError,
                     IdempotencyConflictError, ValidationError, error_class_for, origin_of,
                     possibly_committed)
from .schema import MAX_IDEMPOTENCY_KEY

log = logging.getLogger("dubkit")

API_PREFIX = "/openapi/v1"
_THROTTLED = {429, 503}
_AMBIGUOUS = {500, 502}
# Refusals the same request gets on every attempt: if a retry got one, so did the first attempt,
# which therefore committed nothing. (402 and 404 depend on state the first attempt may have
# changed, e.g. the credits it spent, so they prove nothing.)
_SAME_EVERY_TIME = {400, 401, 413, 422}
CONFLICT_CHECKS = 2   # 409s after a lost answer before concluding the first attempt committed


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
        return random.uniform(0, min(self.max_backoff, self.backoff * 2 ** attempt))


def new_idempotency_key() -> str:
    return f"dk-{uuid.uuid4().hex}"


def check_idempotency_key(key: str) -> str:
    if not isinstance(key, str) or not key.strip():
        raise ValidationError("X-Idempotency-Key", "must be a non-empty string")
    if len(key) > MAX_IDEMPOTENCY_KEY:
        raise ValidationError("X-Idempotency-Key",
                              f"at most {MAX_IDEMPOTENCY_KEY} characters, got {len(key)}")
    if not key.isprintable() or key[0].isspace():
        # A header cannot carry them: requests would fail mid-call instead of here.
        raise ValidationError("X-Idempotency-Key",
                              "must not start with whitespace or contain control characters")
    return key


def check_api_key(api_key: Any) -> str:
    """The key as given, or a ValidationError that never quotes it (it is a secret)."""
    if not isinstance(api_key, str) or not api_key:
        raise ValidationError("api_key", "an API key (a non-empty string) is required")
    for position, char in enumerate(api_key):
        if not "!" <= char <= "~":   # visible ASCII only: what an HTTP header carries intact
            kind = ("whitespace" if char.isspace() else "a control character"
                    if not char.isprintable() else "a non-ASCII character")
            raise ValidationError("api_key", (
                f"contains {kind} (U+{ord(char):04X}) at position {position + 1} of "
                f"{len(api_key)}; a key read from a file often ends with a newline: strip it"))
    return api_key


class Transport:
    """Sends one logical call, with its retries, and unwraps the envelope."""

    def __init__(self, api_key: str, base_url: str, *, timeout: Timeout | None = None,
                 retry: RetryPolicy | None = None, pool_size: int = 16) -> None:
        self._api_key = check_api_key(api_key)
        self.base_url = base_url.rstrip("/")
        self.origin = origin_of(self.base_url)   # what connection errors name, nothing more
        self.timeout = timeout or Timeout()
        self.retry = retry or RetryPolicy()
        self.session = requests.Session()
        # Pool as large as the helpers' concurrency so parallel chunks never wait for a socket.
        adapter = HTTPAdapter(pool_connections=pool_size, pool_maxsize=pool_size)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self.session.headers.update({"Authorization": f"Bearer {api_key}",
                                     "User-Agent": f"dubkit/{__version__}"})
        # requests re-reads proxy and CA-bundle variables from os.environ on every call
        # (~0.25 ms); read them once here and keep honouring them.
        self.session.proxies.update(requests.utils.get_environ_proxies(self.base_url))
        bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
        if bundle:
            self.session.verify = bundle
        self.session.trust_env = False

    def __repr__(self) -> str:
        return f"Transport(base_url={self.base_url!r}, api_key={mask_key(self._api_key)!r})"

    @property
    def masked_key(self) -> str:
        return mask_key(self._api_key)

    @property
    def account_id(self) -> str:
        """A stable, one-way id of the key, for local files kept per account (never the key)."""
        return hashlib.sha256(self._api_key.encode()).hexdigest()[:24]

    def url(self, path: str) -> str:
        """The full URL of an API path; absolute URLs must point at ``base_url``.

        The session carries the API key, so a URL on another host (a CDN file, a presigned
        storage URL) is refused rather than sent the key.
        """
        if path.startswith(("http://", "https://")):
            if not self._under_base(path):
                raise ValidationError("path", f"must be under the client's base_url "
                                              f"{self.base_url!r}; fetch other hosts without "
                                              f"the API key")
            return path
        if not path.startswith(API_PREFIX):
            path = API_PREFIX + (path if path.startswith("/") else "/" + path)
        return self.base_url + path

    def api_path(self, path: str) -> str:
        """``path`` as the operation table writes it (below the prefix, no query)."""
        return self.url(path)[len(self.base_url):].split("?")[0].removeprefix(API_PREFIX)

    def _under_base(self, url: str) -> bool:
        return url == self.base_url or url.startswith(self.base_url + "/")

    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                body: Any = None, idempotency_key: str | None = None,
                req_id: str | None = None, deadline: float | None = None,
                read: bool | None = None) -> Any:
        """Send one logical call and return the envelope's ``data``.

        POSTs carry an ``X-Idempotency-Key`` (the caller's, or one made here). ``read`` says
        the call changes nothing (default: only GETs do); a changing call keeps its key on
        every retry, a read POST gets a fresh one per retry. ``deadline`` (a
        ``time.monotonic()`` value) bounds the whole call, retries included.
        """
        method = method.upper()
        url = self.url(path)
        req_id = req_id or uuid.uuid4().hex
        key = check_idempotency_key(idempotency_key or new_idempotency_key()) \
            if method == "POST" else None
        call = _Call(method, url, {k: v for k, v in (params or {}).items() if v is not None},
                     body, key, method == "GET" if read is None else read,
                     {"method": method, "path": url[len(self.base_url):].split("?")[0],
                      "req_id": req_id})
        call.query["req_id"] = req_id

        retries = 0
        while True:
            data, error = self._attempt(call, deadline)
            if error is None:
                return data
            if isinstance(error, IdempotencyConflictError) and not call.read:
                # A 409 after an ambiguous attempt: an attempt of this call holds the key, it
                # either committed (the key stays used) or is still running (it may yet fail
                # and free the key). Ask again a couple of times before concluding it was
                # accepted. Never reset: no later answer shows the key was free.
                call.refusals += 1
                if not call.maybe_committed or call.refusals > CONFLICT_CHECKS:
                    raise _conflict(error, call.maybe_committed)
            elif not call.retryable or retries >= self.retry.max_retries:
                raise self._final(call, error)
            else:
                retries += 1
            delay = self.retry.delay(retries - 1, error.retry_after)
            if deadline is not None and time.monotonic() + delay >= deadline:
                raise self._final(call, error)
            log.info("retrying %s %s in %.2fs (req_id %s): %s", method,
                     call.context["path"], delay, req_id, error.message)
            time.sleep(delay)
            if call.read and call.key:
                call.key = new_idempotency_key()

    def _final(self, call: "_Call", error: DubkitError) -> DubkitError:
        """The error that ends the call, saying so when the call may have been committed."""
        if call.read or call.key is None:
            return error
        if isinstance(error, IdempotencyConflictError):
            return _conflict(error, call.maybe_committed)
        error.idempotency_key = call.key
        if call.maybe_committed and error.code not in _SAME_EVERY_TIME:
            why = call.ambiguity
            if call.refusals:
                why += ("; then a retry was refused with 409 (the service already held this "
                        "key), so most likely an attempt was committed")
            possibly_committed(error, call.key, why)
        return error

    def _attempt(self, call: "_Call", deadline: float | None) -> tuple[Any, DubkitError | None]:
        """One HTTP exchange: ``(data, None)`` on success, else ``(None, error)``; notes on
        ``call`` whether to retry and whether the service may have committed it."""
        read = self.timeout.read
        if deadline is not None:
            read = min(read, deadline - time.monotonic())
            if read <= 0:
                return None, APITimeoutError("the call's deadline passed", **call.context)
        call.retryable = True
        try:
            # Redirects are not followed: see _redirect_refused.
            response = self.session.request(call.method, call.url, params=call.query,
                                            json=call.body, headers=call.headers,
                                            timeout=(self.timeout.connect, read),
                                            allow_redirects=False)
        except requests.exceptions.ConnectTimeout:
            return None, APITimeoutError(f"could not connect to {self.origin} within "
                                         f"{self.timeout.connect}s", **call.context)
        except requests.exceptions.ReadTimeout:
            call.sent_without_answer(f"an attempt got no answer within the read timeout "
                                     f"of {read:.3g}s")
            return None, APITimeoutError(f"no answer within the read timeout of {read:.3g}s",
                                         **call.context)
        except requests.exceptions.ChunkedEncodingError:
            call.sent_without_answer("an attempt's connection dropped mid-answer")
            return None, APIConnectionError(f"the connection to {self.origin} dropped "
                                            "mid-answer", **call.context)
        except requests.exceptions.ConnectionError as exc:
            if _never_connected(exc):
                return None, APIConnectionError(f"could not connect to {self.origin}",
                                                **call.context)
            call.sent_without_answer("an attempt's connection dropped before the answer arrived")
            return None, APIConnectionError(f"the connection to {self.origin} dropped before "
                                            "the answer arrived", **call.context)

        status = response.status_code
        if response.is_redirect:
            call.retryable = False
            return None, self._redirect_refused(call, response)
        try:
            payload = response.json()
        except ValueError:   # not JSON: a proxy's error page, a truncated body
            payload = None
        code = payload.get("code") if isinstance(payload, dict) else None
        if code == 200:
            return payload.get("data"), None  # type: ignore[union-attr]
        code = code if isinstance(code, int) else status
        message = (payload.get("message") if isinstance(payload, dict) else None) or (
            f"the service answered HTTP {status} without a JSON envelope" if payload is None
            else f"the service answered code {code}")
        context = {**call.context, "code": code, "http_status": status}
        if code == 409 or status == 409:
            call.retryable = call.read   # a read's key means nothing: retry with a new one
            return None, IdempotencyConflictError(
                message, idempotency_key=call.key or "", first_attempt_accepted=False,
                retry_after=_retry_after(response), **context)
        error = error_class_for(code)(message, **context)
        error.retry_after = _retry_after(response)
        if code in _AMBIGUOUS or status in _AMBIGUOUS:
            call.sent_without_answer(f"an attempt was answered {code} ({message})")
        call.retryable = code in _AMBIGUOUS | _THROTTLED or status in _AMBIGUOUS | _THROTTLED
        return None, error

    def _redirect_refused(self, call: "_Call", response: requests.Response) -> DubkitError:
        """A redirect is answered with an error, never followed.

        Off ``base_url`` following would send the body, the idempotency key and (on some
        hops) the Authorization header to a host the caller never chose. Within ``base_url``
        we refuse too, by choice: the interface defines no redirects, so one means a wrong
        ``base_url`` or a proxy in the way; 301/302/303 would silently turn a POST into a GET
        without its body; and the idempotency key is scoped to the path it was sent to, so a
        create re-sent to another path would not be protected by it.
        """
        target = urljoin(call.url, response.headers["Location"])
        parts = urlsplit(target)
        if self._under_base(target):
            where, hint = f"to {parts.path}", "the interface defines no redirects"
        else:
            where = f"to another host, {parts.scheme}://{parts.netloc}"
            hint = "following it would send the request and the API key there"
        return APIError(f"the service answered HTTP {response.status_code}, redirecting {where}; "
                        f"dubkit does not follow redirects for API calls ({hint}): check "
                        f"base_url {self.base_url!r}", http_status=response.status_code,
                        **call.context)

    def close(self) -> None:
        self.session.close()


def _never_connected(exc: requests.exceptions.ConnectionError) -> bool:
    if isinstance(exc, requests.exceptions.SSLError):
        return True   # the TLS handshake comes before a byte of the request is sent
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, NewConnectionError)


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _conflict(refusal: IdempotencyConflictError,
              maybe_committed: bool) -> IdempotencyConflictError:
    key = refusal.idempotency_key
    if maybe_committed:
        message = (
            f"The first attempt of this call was accepted, but its answer was lost; retries "
            f"with the same idempotency key {key!r} were refused ({refusal.message}). dubkit "
            f"did not send it again, so no second task exists. Find the result in "
            f"client.tasks.list() or, for async creates, in the webhook whose "
            f"extraData.dubkitIdempotencyKey is {key!r}.")
    else:
        message = (f"{refusal.message}: the idempotency key {key!r} was already used on this "
                   f"path within the service's window. Use a new key for a new job.")
    return IdempotencyConflictError(
        message, idempotency_key=key, first_attempt_accepted=maybe_committed,
        retry_after=refusal.retry_after, code=409, http_status=refusal.http_status,
        method=refusal.method, path=refusal.path, req_id=refusal.req_id)


@dataclass
class _Call:
    """One logical call and what its attempts so far have taught us."""

    method: str
    url: str
    query: dict[str, Any]
    body: Any
    key: str | None
    read: bool                      # repeating it changes nothing (GET, or a read-only POST)
    context: dict[str, Any]
    maybe_committed: bool = False   # an attempt may have been accepted without our hearing
    ambiguity: str = ""             # what made the first such attempt ambiguous
    refusals: int = 0               # 409s after an ambiguous attempt, over the whole call
    retryable: bool = True

    @property
    def headers(self) -> dict[str, str]:
        return {"X-Idempotency-Key": self.key} if self.key else {}

    def sent_without_answer(self, why: str) -> None:
        """An attempt reached the service and its outcome is unknown (reads commit nothing)."""
        if not self.read and not self.maybe_committed:
            self.maybe_committed, self.ambiguity = True, why
