"""The Transport: the one core's steps driven over ``requests``, for the sync client."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import NewConnectionError

from .core import API_PREFIX, USER_AGENT, Failure, Reply, Send, Steps, TransportCore, with_query
from .exchange import Exchange
from .keys import SecretHeader
from .plans import Plan, run_sync
from .policy import RetryPolicy, Timeout

__all__ = ["API_PREFIX", "Transport", "with_query"]
T = TypeVar("T")


class Transport(TransportCore):
    """Sends one logical call, with its retries, and reads the answer (see :mod:`.core`).

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
        super().__init__(
            secret,
            base_url,
            timeout=timeout,
            retry=retry,
            header=header,
            scheme=scheme,
            scope=scope,
        )
        self.session = requests.Session()
        # Pool as large as the helpers' concurrency so parallel chunks never wait for a socket.
        adapter = HTTPAdapter(pool_connections=pool_size, pool_maxsize=pool_size)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        if secret is not None:  # the session used directly stays scoped too
            self.session.auth = SecretHeader(header, scheme + secret, self.base_url + scope)
        self.session.headers["User-Agent"] = USER_AGENT
        # requests re-reads proxy and CA-bundle variables from os.environ on every call
        # (~0.25 ms); read them once here and keep honouring them.
        self.session.proxies.update(requests.utils.get_environ_proxies(self.base_url))
        bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
        if bundle:
            self.session.verify = bundle
        self.session.trust_env = False

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
        exchange, priced = self.prepare_call(name, payload, idempotency_key, echo_key=False)
        return self._spending(exchange, deadline, priced)

    def start_task(
        self, name: str, payload: Any = None, *, idempotency_key: str | None = None
    ) -> tuple[Any, str]:
        """Send the asynchronous create ``name``: its acceptance, and the idempotency key it
        carried, also in ``extraData.dubkitIdempotencyKey`` so that its webhook can be matched
        to the call even when the acceptance answer is lost."""
        self.check_task_create(name)
        exchange, priced = self.prepare_call(name, payload, idempotency_key, echo_key=True)
        data = self._spending(exchange, None, priced)
        assert exchange.key is not None  # a POST always carries one
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
        exchange = self.exchange(
            method,
            path,
            params=params,
            body=body,
            read=read,
            idempotency_key=idempotency_key,
            req_id=req_id,
        )
        return self._spending(exchange, deadline, self.priced(method, path, body))

    def _spending(
        self, exchange: Exchange, deadline: float | None, call: tuple[str, Any] | None
    ) -> Any:
        """Run ``exchange``; a ``call`` (operation, typed body) under the client's budget."""
        if self.budget is None or call is None:
            return self._run(exchange, deadline)
        with self.budget.spending(call[0], call[1], exchange.key):
            return self._run(exchange, deadline)

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
        exchange = self.plain_exchange(
            method, url, data=data, headers=headers, json=json, params=params
        )
        response: requests.Response = self._run(exchange, None)
        return response

    def download(self, url: str) -> bytes:
        """The bytes behind a file URL (a TTS clip, a dub, a subtitle file)."""
        return self.send("GET", url).content

    # ------------------------------------------------------------------ the driver

    def _run(self, exchange: Exchange, deadline: float | None) -> Any:
        """Drive the core's steps: send each attempt, sleep each backoff."""
        steps: Steps = self.steps(exchange, deadline)
        got: Reply | Failure | None = None
        while True:
            try:
                step = steps.send(got)
            except StopIteration as done:
                return done.value
            if isinstance(step, Send):
                got = self._send(exchange, step.read)
            else:
                time.sleep(step.seconds)
                got = None

    def _send(self, exchange: Exchange, read: float) -> Reply | Failure:
        """One attempt on the wire, through the session's adapters (and so any mounted seam).

        The request is prepared here with the session's settings, read as they stand, rather
        than by ``Session.request``: that call rebuilds its cookie jars and re-merges headers,
        params, hooks and environment settings on every request, which under requests 2.34 on
        Python 3.11 (runtime protocol checks) costs more than all of dubkit's own work on a
        call. Cookies the session holds are still sent and kept. Redirects are not followed:
        see core.redirect_refused.
        """
        session = self.session
        wire = self.wire_request(exchange, session.headers)  # type: ignore[arg-type]
        prepared = requests.PreparedRequest()
        prepared.prepare(
            method=wire.method,
            url=wire.url,
            headers=wire.headers,
            data=wire.data,
            json=wire.json,
            # The secret is in wire.headers already; an auth given here also keeps requests
            # from turning a base_url's user:password into a Basic header over it.
            auth=session.auth,
            cookies=session.cookies,
            hooks=session.hooks,
        )
        try:
            # verify, cert and stream: the session's own, as send reads them
            response = session.send(
                prepared,
                timeout=(self.timeout.connect, read),
                allow_redirects=False,
                proxies=session.proxies,
            )
        except requests.exceptions.ConnectTimeout:
            return Failure("connect_timeout")
        except requests.exceptions.ReadTimeout:
            return Failure("read_timeout")
        except requests.exceptions.ChunkedEncodingError:
            return Failure("dropped_mid_answer")
        except requests.exceptions.ConnectionError as exc:
            return Failure("refused" if _never_connected(exc) else "dropped")
        return Reply(
            response.status_code, response.headers, response.content, response, response.reason
        )

    # ------------------------------------------------------------------ plans

    def run(self, plan: Plan[T]) -> T:
        """Run a product call's plan (:mod:`.plans`) to its end; its result."""
        return run_sync(plan, self)

    @property
    def blocking(self) -> Transport:
        """The transport results use for their lazy fetches (a clip's bytes when ``.audio`` is
        read): this one."""
        return self

    def mount(self, adapter: requests.adapters.BaseAdapter) -> None:
        """Send every request through ``adapter`` (the seam a cassette records and replays
        at: this session only, nothing process-wide)."""
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    def close(self) -> None:
        self.session.close()


def _never_connected(exc: requests.exceptions.ConnectionError) -> bool:
    if isinstance(exc, requests.exceptions.SSLError):
        return True  # the TLS handshake comes before a byte of the request is sent
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, NewConnectionError)
