"""The transport: the retry verdict as a table, then over real HTTP: a possible charge is never
hidden, reads are not creates, and the API key stays well-formed and with base_url.

Odd upstreams are a throwaway gateway (tests/_http.py) in front of the real sandbox: it forwards
some attempts and answers others itself, the way a proxy that loses answers would.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import requests
from _http import local_http

import dubkit
from dubkit._transport import Outcome, RetryPolicy, Verdict, verdict

FAST_RETRY = dubkit.RetryPolicy(max_retries=4, backoff=0.01, max_backoff=0.05, max_retry_after=0.01)
CREATE = "/task/translate/create-async"
PRESETS = "/assets/voice/basic/list"
FORWARDED = ("authorization", "x-idempotency-key", "content-type", "user-agent")


def _header(headers: dict, name: str) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == name), None)


def forward(sandbox, path: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
    """Send the request on to the sandbox's ``path`` and return its answer as it came."""
    answer = requests.post(
        f"{sandbox.url}/openapi/v1{path}",
        data=body,
        timeout=10,
        headers={k: v for k, v in headers.items() if k.lower() in FORWARDED},
    )
    kept = {k: v for k, v in answer.headers.items() if k.lower() in ("content-type", "retry-after")}
    return answer.status_code, kept, answer.content


def gateway(sandbox, path: str, script: list[str]) -> Callable:
    """A gateway to the sandbox's ``path``; attempt n does ``script[n]`` (the last repeats):
    ``forward``; ``commit-then-NNN`` (forward, then lose the answer behind an NNN);
    ``NNN`` (answer NNN itself, the sandbox never sees the request)."""
    seen: list[str] = []

    def respond(method: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
        step = script[min(len(seen), len(script) - 1)]
        seen.append(step)
        lost = b'{"code": %s, "message": "bad gateway", "data": null}'
        if step == "forward":
            return forward(sandbox, path, headers, body)
        if step.startswith("commit-then-"):
            forward(sandbox, path, headers, body)
            status = int(step.removeprefix("commit-then-"))
            return status, {"Content-Type": "application/json"}, lost % str(status).encode()
        return int(step), {"Content-Type": "application/json"}, lost % step.encode()

    respond.seen = seen  # type: ignore[attr-defined]
    return respond


def says_maybe_committed(err: dubkit.DubkitError, key: str) -> bool:
    text = str(err)
    return (
        err.maybe_committed
        and err.idempotency_key == key
        and "MAY HAVE BEEN COMMITTED" in text
        and key in text
        and "client.tasks.list()" in text
        and "extraData.dubkitIdempotencyKey" in text
    )


def wait_for_tasks(c: dubkit.Client, count: int) -> list:
    deadline = time.monotonic() + 10  # the slow attempts land in their own time
    while len(tasks := c.tasks.list()) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return tasks


# ------------------------------------------------ the verdict, without a server

NOT_SENT, NO_ANSWER = Outcome("not_sent"), Outcome("no_answer")
REDIRECT = Outcome("redirected", 307)


def answered(status: int, code: int | None = None) -> Outcome:
    return Outcome("answered", status, code if code is not None else status)


RETRY, FINAL = Verdict(retry=True, maybe_committed=False), Verdict(False, False)
RETRY_MAYBE = Verdict(retry=True, maybe_committed=True)

# (what the call is, what the attempt came to, what came before) -> the verdict
VERDICTS = [
    # a changing API call (a create): retried with its key, flagged when it may have committed
    ("change", NOT_SENT, {}, RETRY),
    ("change", NO_ANSWER, {}, RETRY_MAYBE),
    ("change", answered(500), {}, RETRY_MAYBE),
    ("change", answered(502), {}, RETRY_MAYBE),
    ("change", answered(504), {}, RETRY_MAYBE),  # a gateway timeout is as ambiguous as a 502
    ("change", answered(200, 502), {}, RETRY_MAYBE),  # the envelope's code counts too
    ("change", answered(503), {}, RETRY),
    ("change", answered(429), {}, RETRY),
    ("change", answered(400), {}, FINAL),
    ("change", answered(402), {}, FINAL),
    ("change", answered(404), {}, FINAL),
    ("change", REDIRECT, {}, FINAL),
    ("change", answered(409), {}, FINAL),  # the caller reused a key
    ("change", answered(409), {"ambiguous_before": True}, RETRY),  # ask again: still running?
    ("change", answered(409), {"ambiguous_before": True, "conflicts_before": 1}, RETRY),
    ("change", answered(409), {"ambiguous_before": True, "conflicts_before": 2}, FINAL),
    # a read (GET, a voice-list POST): retried freely, never a possible charge
    ("read", NO_ANSWER, {}, RETRY),
    ("read", answered(502), {}, RETRY),
    ("read", answered(504), {}, RETRY),
    ("read", answered(409), {}, RETRY),  # a read's key means nothing: a new one next time
    ("read", answered(404), {}, FINAL),
    # a plain exchange that repeats safely (a download, a storage PUT)
    ("raw read", NOT_SENT, {}, RETRY),
    ("raw read", NO_ANSWER, {}, RETRY),
    ("raw read", answered(502), {}, RETRY),
    ("raw read", answered(504), {}, RETRY),
    ("raw read", answered(503), {}, RETRY),
    ("raw read", answered(403), {}, FINAL),
    # a plain exchange that does not (an admin POST): sent once once it reached the server
    ("raw change", NOT_SENT, {}, RETRY),
    ("raw change", NO_ANSWER, {}, Verdict(retry=False, maybe_committed=True)),
    ("raw change", answered(502), {}, FINAL),
    ("raw change", answered(504), {}, FINAL),
]


@pytest.mark.parametrize("kind, outcome, before, expected", VERDICTS)
def test_the_verdict_on_each_outcome(kind, outcome, before, expected):
    got = verdict(
        RetryPolicy(), outcome, read=kind.endswith("read"), raw=kind.startswith("raw"), **before
    )
    assert got == expected


def test_the_status_sets_are_the_policy_s_to_change():
    strict = RetryPolicy(ambiguous=frozenset({502}), throttled=frozenset({429}), conflict_checks=0)
    assert verdict(strict, answered(500), read=False) == FINAL
    assert verdict(strict, answered(504), read=False) == FINAL
    assert verdict(strict, answered(503), read=False) == FINAL
    assert verdict(strict, answered(409), read=False, ambiguous_before=True) == FINAL
    lenient = RetryPolicy(throttled=RetryPolicy().throttled | {520})
    assert verdict(lenient, answered(520), read=False) == RETRY


# ------------------------------------------------ 7. a possible charge is never hidden


@pytest.mark.parametrize(
    "status, error_class",
    [(502, dubkit.UpstreamError), (504, dubkit.UpstreamError), (500, dubkit.ServerError)],
)
def test_a_lost_answer_then_a_409_then_only_gateway_errors_says_the_task_may_exist(
    sandbox, new_key, client_for, status, error_class
):
    """The first attempt commits and its answer is lost; a retry is refused 409 (the key is
    held); every later retry meets a gateway error. The 409 is not forgotten: the error says
    the call may have been committed, and the key it names finds the task."""
    c = client_for(new_key)
    script = [f"commit-then-{status}", "forward", str(status)]
    with (
        local_http(gateway(sandbox, CREATE, script)) as url,
        dubkit.Client(new_key, url, retry=FAST_RETRY) as through,
    ):
        with pytest.raises(error_class) as info:
            through.translate.create_async(
                ["x"], source="en-US", target="fr-FR", idempotency_key="order-7-attempt-1"
            )
    err = info.value
    assert not isinstance(err, dubkit.IdempotencyConflictError)
    assert says_maybe_committed(err, "order-7-attempt-1"), str(err)
    assert "409" in str(err) and new_key not in str(err) + repr(err)
    assert len(c.tasks.list()) == 1
    # The advice works: the same key again is refused, because that call was committed.
    with pytest.raises(dubkit.IdempotencyConflictError):
        c.translate.create_async(
            ["x"], source="en-US", target="fr-FR", idempotency_key=err.idempotency_key
        )


def test_read_timeouts_on_a_create_end_in_an_error_that_says_it_may_be_committed(
    client, sandbox, new_key, client_for
):
    sandbox.set_faults(latency_ms=300, paths=[CREATE])
    with dubkit.Client(
        new_key, sandbox.url, retry=FAST_RETRY, timeout=dubkit.Timeout(connect=2, read=0.05)
    ) as slow:
        with pytest.raises(dubkit.APITimeoutError) as info:
            slow.translate.create_async(["slow"], source="en-US", target="fr-FR")
    sandbox.set_faults()
    key = info.value.idempotency_key
    assert key and says_maybe_committed(info.value, key), str(info.value)
    c = client_for(new_key)
    assert len(wait_for_tasks(c, 1)) == 1  # it was committed, once
    with pytest.raises(dubkit.IdempotencyConflictError):  # and the key tells so
        c.translate.create_async(["slow"], source="en-US", target="fr-FR", idempotency_key=key)


def test_a_gateway_error_before_any_work_still_warns_but_a_refused_connection_does_not(
    sandbox, new_key, client_for
):
    """A 502 can come from a gateway that never passed the request on: dubkit cannot tell, so
    it warns. A connection that was never made cannot have committed anything."""
    with (
        local_http(gateway(sandbox, CREATE, ["502"])) as url,
        dubkit.Client(new_key, url, retry=FAST_RETRY) as through,
    ):
        with pytest.raises(dubkit.UpstreamError) as info:
            through.translate.create_async(["x"], source="en-US", target="fr-FR")
    assert says_maybe_committed(info.value, info.value.idempotency_key or "-")
    assert len(client_for(new_key).tasks.list()) == 0

    with dubkit.Client(
        "sk_x_0000000000000",
        "http://127.0.0.1:9",
        retry=dubkit.RetryPolicy(max_retries=1, backoff=0.01),
    ) as dead:
        with pytest.raises(dubkit.APIConnectionError) as refused:
            dead.translate.create_async(["x"], source="en-US", target="fr-FR")
    assert refused.value.maybe_committed is False
    assert "MAY HAVE BEEN COMMITTED" not in str(refused.value)


@pytest.mark.parametrize("status", [502, 504])
def test_a_gateway_504_on_a_sync_create_is_retried_and_flagged_like_a_502(
    sandbox, new_key, client_for, status
):
    """The gateway lets the first attempt through and answers it with a gateway error; the
    retry with the same key is refused 409 (the work was done). Same verdict for 502 and 504."""
    script = [f"commit-then-{status}", "forward"]
    respond = gateway(sandbox, "/task/translate/create", script)
    with local_http(respond) as url, dubkit.Client(new_key, url, retry=FAST_RETRY) as through:
        with pytest.raises(dubkit.IdempotencyConflictError) as info:
            through.translate.create(["x"], source="en-US", target="fr-FR")
    assert info.value.first_attempt_accepted and respond.seen[:2] == script
    assert len(client_for(new_key).tasks.list()) == 1  # done once, never twice


@pytest.mark.parametrize("status", [502, 504])
def test_the_plain_path_retries_a_gateway_error_on_a_get_and_never_on_a_post(status):
    seen: list[str] = []

    def respond(method: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
        seen.append(method)
        again = seen.count(method) == 2  # a second attempt would be answered
        return (200, {}, b"ok") if again else (status, {}, b"gateway")

    with local_http(respond) as url, dubkit.Client("sk_x_00000000000", url, retry=FAST_RETRY) as c:
        assert c.transport.send("GET", f"{url}/file").content == b"ok"
        with pytest.raises(dubkit.UpstreamError) as info:
            c.transport.send("POST", f"{url}/admin")
    assert seen == ["GET", "GET", "POST"] and info.value.http_status == status


# ------------------------------------------------ 8. read-only POSTs are retried like GETs


def key_consuming_list(sandbox) -> Callable:
    """A service that does consume keys on the list POST (the interface's guidance allows it)
    and whose first answer is slow: a reused key is refused 409."""
    keys: list[str | None] = []

    def respond(method: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
        key = _header(headers, "x-idempotency-key")
        if key in keys:
            return (
                409,
                {"Retry-After": "2", "Content-Type": "application/json"},
                (b'{"code": 409, "message": "Idempotency key already used", "data": null}'),
            )
        keys.append(key)
        answer = forward(sandbox, PRESETS, headers, body)
        if len(keys) == 1:
            time.sleep(0.6)  # longer than the client's read timeout: the answer is lost
        return answer

    return respond


@pytest.mark.parametrize("how", ["voices.presets_page", "client.request"])
def test_a_slow_then_refused_list_call_is_asked_again_and_answers(client, sandbox, how):
    expected = client.voices.presets_page(1, 10)
    with (
        local_http(key_consuming_list(sandbox)) as url,
        dubkit.Client(
            sandbox.api_key, url, retry=FAST_RETRY, timeout=dubkit.Timeout(connect=2, read=0.2)
        ) as c,
    ):
        if how == "client.request":
            page = c.request("POST", PRESETS, json={"currentPage": 1, "pageSize": 10})
            ids = [r["voiceId"] for r in page["records"]]
        else:
            ids = [v.voice_id for v in c.voices.presets_page(1, 10)]
    assert ids == [v.voice_id for v in expected] and ids


@pytest.mark.parametrize("faults", [{"latency_ms": 300}, {"error502_after": 1.0}])
def test_a_failed_list_call_never_claims_a_possible_charge(client, sandbox, faults):
    sandbox.set_faults(paths=[PRESETS], **faults)
    with dubkit.Client(
        sandbox.api_key, sandbox.url, retry=FAST_RETRY, timeout=dubkit.Timeout(connect=2, read=0.05)
    ) as c:
        with pytest.raises((dubkit.APITimeoutError, dubkit.UpstreamError)) as info:
            c.voices.presets_page(1, 10)
    assert info.value.maybe_committed is False
    assert "COMMITTED" not in str(info.value) and "charge" not in str(info.value)


# ------------------------------------------------ 9. the key: well-formed, and only to base_url


@pytest.mark.parametrize("flaw", ["\n", "\r\n", " ", "\t", "\x00", "\x7f"])
@pytest.mark.parametrize("where", ["end", "start", "middle"])
def test_a_key_with_whitespace_or_control_characters_is_refused_without_quoting_it(
    sandbox, flaw, where
):
    good = sandbox.api_key
    bad = {"end": good + flaw, "start": flaw + good, "middle": good[:10] + flaw + good[10:]}[where]
    with pytest.raises(dubkit.ValidationError) as info:
        with dubkit.Client(bad, sandbox.url, retry=FAST_RETRY) as c:
            c.tasks.list()
    assert info.value.field == "api_key"
    text = f"{info.value} {info.value!r} {info.value.args}"
    assert good not in text and good[:12] not in text and good[-12:] not in text


def test_a_key_read_from_the_environment_with_a_newline_is_refused(sandbox, monkeypatch):
    monkeypatch.setenv("DUBKIT_API_KEY", sandbox.api_key + "\n")
    monkeypatch.setenv("DUBKIT_BASE_URL", sandbox.url)
    with pytest.raises(dubkit.ValidationError) as info:
        dubkit.connect().tasks.list()
    assert info.value.field == "api_key" and sandbox.api_key not in str(info.value)


def catcher() -> tuple[Callable, list]:
    caught: list[tuple[str, dict, bytes]] = []

    def respond(method: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
        caught.append((method, headers, body))
        return 200, {"Content-Type": "application/json"}, b'{"code": 200, "data": {}}'

    return respond, caught


@pytest.mark.parametrize("call", ["create", "list"])
def test_a_redirect_to_another_host_is_not_followed(call):
    key = "sk_test_redirect_0000000000"
    other, caught = catcher()
    with local_http(other) as elsewhere:
        hops: list[str] = []

        def redirect(method: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
            hops.append(method)
            return 307, {"Location": f"{elsewhere}/collect"}, b""

        with local_http(redirect) as url, dubkit.Client(key, url, retry=FAST_RETRY) as c:
            with pytest.raises(dubkit.DubkitError) as info:
                if call == "create":
                    c.translate.create(["private text"], source="en-US", target="fr-FR")
                else:
                    c.tasks.list()
    assert caught == []  # the other host saw nothing: no body, no key
    assert len(hops) == 1  # and the redirect is not a reason to retry
    assert "another host" in str(info.value) and key not in str(info.value)


def test_a_redirect_within_base_url_is_refused_too():
    """dubkit's choice (see _transport._redirect_refused): the interface defines none."""
    hops: list[str] = []

    def redirect(method: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
        hops.append(method)
        return 308, {"Location": "/openapi/v1/task/translate/create-again"}, b""

    with (
        local_http(redirect) as url,
        dubkit.Client("sk_test_redirect_0000000000", url, retry=FAST_RETRY) as c,
    ):
        with pytest.raises(dubkit.APIError) as info:
            c.translate.create(["x"], source="en-US", target="fr-FR")
    assert hops == ["POST"] and info.value.http_status == 308
    assert "/openapi/v1/task/translate/create-again" in str(info.value)
