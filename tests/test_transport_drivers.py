"""Both transports, one set of scenarios: the sync Transport (requests) and the AsyncTransport
(httpx) drive the same core over real HTTP to the session's sandbox, so lost answers, gateway
errors, read timeouts, throttling, refusals and redirects must come out the same through each:
no task created twice, every possible charge said, the key only where it belongs."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from _http import counting_proxy, local_http

import dubkit
from dubkit._transport import AsyncTransport, RetryPolicy, Timeout, Transport

FAST = RetryPolicy(max_retries=4, backoff=0.01, max_backoff=0.05, max_retry_after=0.01)
ASYNC_CREATE = "/task/translate/create-async"


def translation(text: str) -> dict[str, Any]:
    return {"segments": [{"text": text}], "language": {"source": "en-US", "target": "fr-FR"}}


class Driven:
    """One face over either transport. The async one's calls run on an event loop in a
    thread of its own (as a notebook's loop runs them) and are awaited to their end."""

    def __init__(self, kind: str, key: str | None, url: str, **options: Any) -> None:
        self.kind = kind
        if kind == "sync":
            self.transport: Any = Transport(key, url, **options)
            return
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.transport = AsyncTransport(key, url, **options)

    def _do(self, method: str, *args: Any, **kwargs: Any) -> Any:
        made = getattr(self.transport, method)(*args, **kwargs)
        if self.kind == "sync":
            return made
        return asyncio.run_coroutine_threadsafe(made, self.loop).result()

    def call(self, *args: Any, **kwargs: Any) -> Any:
        return self._do("call", *args, **kwargs)

    def start_task(self, *args: Any, **kwargs: Any) -> Any:
        return self._do("start_task", *args, **kwargs)

    def request(self, *args: Any, **kwargs: Any) -> Any:
        return self._do("request", *args, **kwargs)

    def send(self, *args: Any, **kwargs: Any) -> Any:
        return self._do("send", *args, **kwargs)

    def close(self) -> None:
        if self.kind == "sync":
            self.transport.close()
            return
        asyncio.run_coroutine_threadsafe(self.transport.aclose(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


@pytest.fixture(params=["sync", "async"])
def kind(request) -> str:
    return request.param


@pytest.fixture
def drive(kind, sandbox) -> Iterator:
    """``drive(key, url=None, **options)``: a Driven transport of this test's kind."""
    made: list[Driven] = []

    def make(key: str | None, url: str | None = None, **options: Any) -> Driven:
        options.setdefault("retry", FAST)
        made.append(Driven(kind, key, url or sandbox.url, **options))
        return made[-1]

    yield make
    for driven in made:
        driven.close()
    sandbox.set_faults()


def tasks_of(sandbox, key: str) -> list[dict]:
    with dubkit.Client(key, sandbox.url) as c:
        return [{"task_id": t.task_id, "type": t.task_type} for t in c.tasks.list()]


def test_lost_answers_make_no_second_task_and_each_is_said(drive, sandbox, new_key):
    """A third of the creates' answers are lost after the sandbox committed them; every call
    keeps its key on its retries, so each logical call is one task, and a call whose answer
    never came says it was accepted."""
    t = drive(new_key)
    sandbox.set_faults(drop_after_commit=0.3, paths=[ASYNC_CREATE], seed=3)
    accepted = conflicts = 0
    for i in range(60):
        try:
            t.start_task("translate.create_async", translation(f"line {i}"))
            accepted += 1
        except dubkit.IdempotencyConflictError as err:
            assert err.first_attempt_accepted and "no second task" in str(err), err
            conflicts += 1
    sandbox.set_faults()
    assert accepted + conflicts == 60 and conflicts >= 5  # the fault really fired
    assert len(tasks_of(sandbox, new_key)) == 60


def test_a_502_after_the_work_is_retried_with_the_same_key_and_flagged(drive, sandbox, new_key):
    t = drive(new_key)
    sandbox.set_faults(error502_after=1.0, paths=[ASYNC_CREATE])
    with pytest.raises(dubkit.IdempotencyConflictError) as info:
        t.start_task("translate.create_async", translation("once"))
    assert info.value.first_attempt_accepted
    sandbox.set_faults()
    assert len(tasks_of(sandbox, new_key)) == 1


def test_a_502_before_the_work_is_retried_until_it_answers(drive, sandbox, new_key):
    t = drive(new_key)
    sandbox.set_faults(error502_before=0.5, paths=["/task/translate/create"], seed=7)
    answers = [t.call("translate.create", translation(f"n{i}")) for i in range(12)]
    assert all(len(a["items"]) == 1 for a in answers)


def test_read_timeouts_on_a_create_never_make_a_second_task(drive, sandbox, new_key):
    """Every attempt times out on the client's side and still lands in the sandbox: once all
    of them are answered, the key has one task, and the error says it may be committed."""
    sandbox.set_faults(latency_ms=600, paths=[ASYNC_CREATE])
    with counting_proxy(sandbox.url) as proxy:
        slow = drive(
            new_key,
            proxy.url,
            timeout=Timeout(connect=2, read=0.3),
            retry=RetryPolicy(max_retries=2, backoff=0.01),
        )
        with pytest.raises(dubkit.DubkitError) as info:
            slow.start_task("translate.create_async", translation("slow"))
        proxy.wait_idle()  # every attempt has had its answer
    sandbox.set_faults()
    assert info.value.maybe_committed and info.value.idempotency_key
    assert len(proxy.attempts) == 3  # the first try and both retries arrived
    assert len(tasks_of(sandbox, new_key)) == 1


def test_throttling_is_waited_out_and_then_answers(drive, sandbox, new_key):
    t = drive(new_key)
    sandbox.set_faults(error429=0.5, retry_after=0, paths=["/task/translate/create"], seed=11)
    answers = [t.call("translate.create", translation(f"t{i}")) for i in range(8)]
    assert all(len(a["items"]) == 1 for a in answers)


def test_a_refused_connection_is_a_typed_error_and_no_possible_charge(drive):
    dead = drive("sk_x_0000000000000", "http://127.0.0.1:9")
    with pytest.raises(dubkit.APIConnectionError) as info:
        dead.start_task("translate.create_async", translation("x"))
    assert "could not connect" in str(info.value) and not info.value.maybe_committed


def test_a_wrong_key_is_a_typed_401_that_never_shows_it(drive, sandbox):
    secret = "sk_live_0123456789abcdefSECRET"
    bad = drive(secret)
    with pytest.raises(dubkit.AuthenticationError) as info:
        bad.call("tasks.list", {})
    err = info.value
    assert err.http_status == 401 and err.path == "/openapi/v1/tasks/list"
    assert "SECRET" not in str(err) and "SECRET" not in repr(bad.transport)


def test_bad_input_is_refused_before_the_network_naming_the_field(drive):
    t = drive("sk_x_0000000000000", "http://127.0.0.1:9")  # nothing listens: not even tried
    with pytest.raises(dubkit.ValidationError) as info:
        t.call("translate.create", {"segments": [{"text": "x"}], "language": {}})
    assert info.value.field.startswith("language")


def test_a_redirect_is_refused_not_followed(drive):
    def elsewhere(method, headers, body):
        return 307, {"Location": "http://127.0.0.2:9/steal"}, b""

    with local_http(elsewhere) as url:
        t = drive("sk_x_0000000000000", url)
        with pytest.raises(dubkit.APIError) as info:
            t.call("tasks.list", {})
    assert "does not follow redirects" in str(info.value) and "127.0.0.2" in str(info.value)


def test_the_key_goes_to_api_calls_and_never_to_files_on_the_same_host(drive):
    seen: list[tuple[str, str | None]] = []

    def record(method, headers, body):
        got = {k.lower(): v for k, v in headers.items()}
        seen.append((method, got.get("authorization")))
        return 200, {"Content-Type": "application/json"}, b'{"code": 200, "data": {}}'

    with local_http(record) as url:
        t = drive("sk_x_0000000000000", url)
        t.call("tasks.list", {})
        t.send("GET", f"{url}/files/clip.wav")
    assert seen == [("GET", "Bearer sk_x_0000000000000"), ("GET", None)]


def test_a_deadline_bounds_the_whole_call_retries_included(drive):
    def always_busy(method, headers, body):
        return 503, {"Retry-After": "0"}, b'{"code": 503, "message": "busy", "data": null}'

    with local_http(always_busy) as url:
        t = drive("sk_x_0000000000000", url, retry=RetryPolicy(max_retries=10**6, backoff=0.01))
        with pytest.raises(dubkit.DubkitError) as info:  # ended, not retried a million times
            t.call("tasks.list", {}, deadline=time.monotonic() + 0.5)
    said = info.value
    # the last 503, or the deadline cutting the last attempt's read short
    assert said.http_status == 503 or isinstance(said, dubkit.APITimeoutError), said


def test_a_base_url_with_credentials_still_sends_the_key_as_bearer(drive):
    """A user:password in base_url (a proxy's, a copy-paste) never becomes a Basic header in
    place of the API key (httpx made one, before its request auth was set)."""
    seen: list[str | None] = []

    def record(method, headers, body):
        seen.append({k.lower(): v for k, v in headers.items()}.get("authorization"))
        return 200, {"Content-Type": "application/json"}, b'{"code": 200, "data": {}}'

    with local_http(record) as url:
        t = drive("sk_x_0000000000000", url.replace("http://", "http://user:pw@"))
        t.call("tasks.list", {})
    assert seen == ["Bearer sk_x_0000000000000"]
