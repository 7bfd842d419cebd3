"""The AsyncTransport: the one core's steps driven over ``httpx``, for the async client.

httpx rather than aiohttp: its timeouts are the core's (connect, read, write, pool, set per
request, so a call's deadline can shorten the read), its connection pool keeps connections
alive per host like the requests session, its exceptions say whether a connection was ever
made (what the retry verdict needs), and Jupyter, FastAPI's test client and openai-python
already bring it. Everything this module decides is only how to move bytes: which attempt, how
long to wait, what an answer means and which error ends a call come from :mod:`.core`.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
from collections.abc import Callable, Generator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from .core import API_PREFIX, USER_AGENT, Failure, Reply, Send, Steps, TransportCore
from .exchange import Exchange
from .plans import Plan, run_async
from .policy import RetryPolicy, Timeout
from .transport import Transport

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")


@functools.cache
def _httpx() -> ModuleType:
    """httpx, imported when the first async client is made: a sync user's ``import dubkit``
    does without it (a tenth of its import time)."""
    import httpx

    return httpx


@functools.cache
def _headers_only() -> httpx.Auth:
    """The secret is in the request's headers already (the core's scope rule). Given as the
    request's auth, it keeps httpx from making a Basic header out of a base_url's
    user:password over it (as the sync transport's auth keeps requests from it)."""

    class HeadersOnly(_httpx().Auth):  # type: ignore[misc]
        def auth_flow(
            self, request: httpx.Request
        ) -> Generator[httpx.Request, httpx.Response, None]:
            yield request

    return HeadersOnly()


class AsyncTransport(TransportCore):
    """Sends one logical call with its retries, without blocking the event loop.

    The same rules as :class:`~dubkit._transport.Transport` (they are the core's); the secret
    goes only on requests below ``base_url + scope``. A request body made from a file (an
    upload's part) is read off the loop.
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
        http: httpx.AsyncClient | None = None,
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
        self._twin_args = (secret, base_url, timeout, retry, header, scheme, scope)
        self._twin: Transport | None = None
        bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
        httpx = _httpx()
        self.http = http or httpx.AsyncClient(
            headers={"User-Agent": USER_AGENT},
            limits=httpx.Limits(max_connections=pool_size, max_keepalive_connections=pool_size),
            verify=ssl.create_default_context(cafile=bundle) if bundle else True,
            follow_redirects=False,  # see core.redirect_refused
        )

    # ------------------------------------------------------------------ the service's API

    async def call(
        self,
        name: str,
        payload: Any = None,
        *,
        idempotency_key: str | None = None,
        deadline: float | None = None,
    ) -> Any:
        """Validate ``payload`` against operation ``name`` (before the network) and send it;
        the envelope's data."""
        exchange, priced = self.prepare_call(name, payload, idempotency_key, echo_key=False)
        return await self._spending(exchange, deadline, priced)

    async def start_task(
        self, name: str, payload: Any = None, *, idempotency_key: str | None = None
    ) -> tuple[Any, str]:
        """Send the asynchronous create ``name``: its acceptance, and the idempotency key it
        carried (also in ``extraData.dubkitIdempotencyKey``, for its webhook)."""
        self.check_task_create(name)
        exchange, priced = self.prepare_call(name, payload, idempotency_key, echo_key=True)
        data = await self._spending(exchange, None, priced)
        assert exchange.key is not None  # a POST always carries one
        return data, exchange.key

    async def request(
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
        """One API call by method and path; the envelope's ``data`` (as ``Transport.request``)."""
        exchange = self.exchange(
            method,
            path,
            params=params,
            body=body,
            read=read,
            idempotency_key=idempotency_key,
            req_id=req_id,
        )
        return await self._spending(exchange, deadline, self.priced(method, path, body))

    async def _spending(
        self, exchange: Exchange, deadline: float | None, call: tuple[str, Any] | None
    ) -> Any:
        if self.budget is None or call is None:
            return await self._run(exchange, deadline)
        with self.budget.spending(call[0], call[1], exchange.key):  # its locks are brief
            return await self._run(exchange, deadline)

    # ------------------------------------------------------------------ plain HTTP

    async def send(
        self,
        method: str,
        url: str,
        *,
        data: Callable[[], Any] | bytes | None = None,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
    ) -> httpx.Response:
        """One plain HTTP exchange (a file, a storage PUT), with the same retries and errors
        as API calls; the 2xx response."""
        exchange = self.plain_exchange(
            method, url, data=data, headers=headers, json=json, params=params
        )
        response: httpx.Response = await self._run(exchange, None)
        return response

    async def download(self, url: str) -> bytes:
        """The bytes behind a file URL (a TTS clip, a dub, a subtitle file)."""
        return (await self.send("GET", url)).content

    # ------------------------------------------------------------------ the driver

    async def _run(self, exchange: Exchange, deadline: float | None) -> Any:
        """Drive the core's steps: send each attempt, sleep each backoff (on the loop)."""
        steps: Steps = self.steps(exchange, deadline)
        got: Reply | Failure | None = None
        while True:
            try:
                step = steps.send(got)
            except StopIteration as done:
                return done.value
            if isinstance(step, Send):
                got = await self._send(exchange, step.read)
            else:
                await asyncio.sleep(step.seconds)
                got = None

    async def _send(self, exchange: Exchange, read: float) -> Reply | Failure:
        if exchange.data is not None:  # a file's bytes: read off the loop
            wire = await asyncio.to_thread(self.wire_request, exchange, {})
        else:
            wire = self.wire_request(exchange, {})
        connect, httpx = self.timeout.connect, _httpx()
        try:
            response = await self.http.request(
                wire.method,
                wire.url,
                headers=wire.headers,
                json=wire.json,
                content=wire.data,
                auth=_headers_only(),
                timeout=httpx.Timeout(connect=connect, read=read, write=read, pool=connect),
            )
        except (httpx.ConnectTimeout, httpx.PoolTimeout):
            return Failure("connect_timeout")  # no byte of the request went out
        except httpx.ReadTimeout:
            return Failure("read_timeout")
        except (httpx.ConnectError, httpx.ProxyError):
            return Failure("refused")
        except httpx.TransportError:  # written, then dropped: a write timeout, a reset
            return Failure("dropped")
        return Reply(
            response.status_code,
            response.headers,
            response.content,
            response,
            response.reason_phrase,
        )

    # ------------------------------------------------------------------ plans

    async def run(self, plan: Plan[T]) -> T:
        """Run a product call's plan (:mod:`.plans`) on the event loop; its result."""
        return await run_async(plan, self)

    @property
    def blocking(self) -> Transport:
        """A sync transport to the same place, for what results fetch lazily when a cell
        reads them (``line.audio``) and for work done off the loop; made on first use."""
        if self._twin is None:
            secret, base_url, timeout, retry, header, scheme, scope = self._twin_args
            self._twin = Transport(
                secret,
                base_url,
                timeout=timeout,
                retry=retry,
                header=header,
                scheme=scheme,
                scope=scope,
            )
            self._twin.talks_to_sandbox = self.talks_to_sandbox
            self._twin.answers_of = self.answers_of  # a result it makes names our answers
            self._twin.budget = self.budget
        return self._twin

    async def aclose(self) -> None:
        await self.http.aclose()
        if self._twin is not None:
            self._twin.close()
