"""The one place dubkit sends HTTP: envelope, errors, idempotency, retries, timeouts.

Retry rules, and why:

* A connection that was never made (refused, connect timeout) is always retried: nothing
  reached the service.
* A request that was sent but got no complete answer (read timeout, connection dropped
  mid-response), a 500 or a 502, is *ambiguous*: the service may have committed it. A GET is
  simply retried. A POST is retried with the **same** idempotency key. The service answers a
  reused key with 409 instead of replaying, so if the retry meets 409 the first attempt was
  accepted: dubkit stops and raises :class:`IdempotencyConflictError` with
  ``first_attempt_accepted=True`` rather than inventing a new key (which would create a second,
  double-charged task).
* 409 on a first attempt means the caller reused a key: raised at once, never retried.
* 429 and 503 are throttling: retried after ``Retry-After`` (or the backoff).
* Every other business code is final.

Backoff is exponential with full jitter, capped; ``Retry-After`` wins when the service sends it.
"""

from __future__ import annotations

import logging
import os
import random
import time
import uuid
from dataclasses import dataclass
from typing import Any, Mapping

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import NewConnectionError

from ._version import __version__
from .errors import (APIConnectionError, APITimeoutError, DubkitError, IdempotencyConflictError,
                     ValidationError, error_class_for)
from .schema import MAX_IDEMPOTENCY_KEY

log = logging.getLogger("dubkit")

API_PREFIX = "/openapi/v1"
_THROTTLED = {429, 503}
_AMBIGUOUS = {500, 502}


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


def mask_key(api_key: str | None) -> str:
    """``sk_live_abcdef123456`` -> ``sk_…3456``: enough to tell keys apart, never enough to use."""
    if not api_key:
        return "<none>"
    prefix = api_key.split("_", 1)[0] + "_" if "_" in api_key[:8] else ""
    return f"{prefix}…{api_key[-4:]}" if len(api_key) >= 12 else f"{prefix}…"


def new_idempotency_key() -> str:
    return f"dk-{uuid.uuid4().hex}"


def check_idempotency_key(key: str) -> str:
    if not isinstance(key, str) or not key.strip():
        raise ValidationError("X-Idempotency-Key", "must be a non-empty string")
    if len(key) > MAX_IDEMPOTENCY_KEY:
        raise ValidationError("X-Idempotency-Key",
                              f"at most {MAX_IDEMPOTENCY_KEY} characters, got {len(key)}")
    return key


class Transport:
    """Sends one logical call, with its retries, and unwraps the envelope."""

    def __init__(self, api_key: str, base_url: str, *, timeout: Timeout | None = None,
                 retry: RetryPolicy | None = None, pool_size: int = 16) -> None:
        if not api_key:
            raise ValidationError("api_key", "an API key is required")
        self._api_key = api_key
        self.base_url = base_url.rstrip("/")
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

    def url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            return path
        if not path.startswith(API_PREFIX):
            path = API_PREFIX + (path if path.startswith("/") else "/" + path)
        return self.base_url + path

    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                body: Any = None, idempotency_key: str | None = None,
                req_id: str | None = None) -> Any:
        """Send one logical call and return the envelope's ``data``.

        POSTs carry an ``X-Idempotency-Key`` (the caller's, or one made here) that stays the
        same on every retry of this call.
        """
        method = method.upper()
        url = self.url(path)
        req_id = req_id or uuid.uuid4().hex
        headers: dict[str, str] = {}
        if method == "POST":
            headers["X-Idempotency-Key"] = check_idempotency_key(
                idempotency_key or new_idempotency_key())
        query = {k: v for k, v in (params or {}).items() if v is not None}
        query["req_id"] = req_id
        context = {"method": method, "path": url[len(self.base_url):].split("?")[0],
                   "req_id": req_id}

        maybe_committed = False   # an earlier attempt of this call may have been accepted
        last_error: DubkitError | None = None
        for attempt in range(self.retry.max_retries + 1):
            if attempt:
                delay = self.retry.delay(attempt - 1, getattr(last_error, "retry_after", None))
                log.info("retrying %s %s in %.2fs (attempt %d, req_id %s): %s", method,
                         context["path"], delay, attempt + 1, req_id, last_error.message)
                time.sleep(delay)
            try:
                response = self.session.request(
                    method, url, params=query, json=body, headers=headers,
                    timeout=(self.timeout.connect, self.timeout.read))
                payload = response.json()
            except requests.exceptions.ConnectTimeout as exc:
                last_error = APITimeoutError(f"could not connect within {self.timeout.connect}s",
                                             **context)
                log.debug("connect timeout: %s", exc)
                continue
            except requests.exceptions.ReadTimeout:
                maybe_committed = True
                last_error = APITimeoutError(
                    f"no answer within the read timeout of {self.timeout.read}s", **context)
                continue
            except requests.exceptions.ChunkedEncodingError:
                maybe_committed = True
                last_error = APIConnectionError("the connection dropped mid-answer", **context)
                continue
            except requests.exceptions.ConnectionError as exc:
                never_connected = _never_connected(exc)
                maybe_committed = maybe_committed or not never_connected
                last_error = APIConnectionError(
                    "could not connect to the service" if never_connected
                    else "the connection dropped before the answer arrived", **context)
                continue
            except ValueError:   # not JSON: a proxy's error page, a truncated body
                maybe_committed = maybe_committed or response.status_code >= 500
                last_error = error_class_for(response.status_code)(
                    f"the service answered HTTP {response.status_code} without a JSON envelope",
                    code=response.status_code, http_status=response.status_code, **context)
                if response.status_code in _AMBIGUOUS | _THROTTLED:
                    continue
                raise last_error from None

            code = payload.get("code") if isinstance(payload, dict) else None
            if code == 200:
                return payload.get("data")
            code = code if isinstance(code, int) else response.status_code
            message = (payload.get("message") if isinstance(payload, dict) else None) or \
                f"the service answered code {code}"
            retry_after = _retry_after(response)
            if code == 409 or response.status_code == 409:
                raise _conflict(message, headers.get("X-Idempotency-Key", ""), maybe_committed,
                                retry_after, http_status=response.status_code, **context)
            last_error = error_class_for(code)(message, code=code,
                                               http_status=response.status_code, **context)
            last_error.retry_after = retry_after
            if code in _AMBIGUOUS:
                maybe_committed = True
                continue
            if code in _THROTTLED or response.status_code in _THROTTLED:
                continue
            raise last_error
        assert last_error is not None
        raise last_error

    def close(self) -> None:
        self.session.close()


def _never_connected(exc: requests.exceptions.ConnectionError) -> bool:
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, NewConnectionError)


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _conflict(message: str, key: str, maybe_committed: bool, retry_after: float | None,
              **context: Any) -> IdempotencyConflictError:
    if maybe_committed:
        message = (
            f"The first attempt of this call was accepted, but its answer was lost; the retry "
            f"with the same idempotency key {key!r} was refused ({message}). dubkit did not "
            f"send it again, so no second task exists. Find the result in client.tasks.list() "
            f"or, for async creates, in the webhook whose extraData.dubkitIdempotencyKey is "
            f"{key!r}.")
    else:
        message = (f"{message}: the idempotency key {key!r} was already used on this path "
                   f"within the service's window. Use a new key for a new job.")
    return IdempotencyConflictError(message, idempotency_key=key,
                                    first_attempt_accepted=maybe_committed,
                                    retry_after=retry_after, code=409, **context)
