"""The transport: the retry verdict as a table, then over real HTTP: idempotency keys, retries
that never double-charge, a possible charge never hidden, reads that are not creates, and the
API key well-formed and only with base_url."""

from __future__ import annotations

import base64
import time
import uuid
import zlib
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from _double import Answer, answer_double
from _http import _serve, counting_proxy, local_http
from _waiting import PATIENCE

import dubkit
from dubkit._transport import Outcome, RetryPolicy, Verdict, verdict
from dubkit._util import extras_header


@pytest.fixture
def client(each_client):
    """This module's scenarios run through both clients (tests/_clients.py)."""
    return each_client


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
    deadline = time.monotonic() + PATIENCE  # the slow attempts land in their own time
    while len(tasks := c.tasks.list()) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return tasks


NOT_SENT, NO_ANSWER = Outcome("not_sent"), Outcome("no_answer")


REDIRECT = Outcome("redirected", 307)


def answered(status: int, code: int | None = None) -> Outcome:
    return Outcome("answered", status, code if code is not None else status)


RETRY, FINAL = Verdict(retry=True, maybe_committed=False), Verdict(False, False)


RETRY_MAYBE = Verdict(retry=True, maybe_committed=True)


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


def catcher() -> tuple[Callable, list]:
    caught: list[tuple[str, dict, bytes]] = []

    def respond(method: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
        caught.append((method, headers, body))
        return 200, {"Content-Type": "application/json"}, b'{"code": 200, "data": {}}'

    return respond, caught


def test_client_raises_typed_401_without_leaking_the_key(sandbox):
    secret_key = "sk_live_0123456789abcdefSECRET"
    with dubkit.Client(secret_key, sandbox.url) as bad:
        with pytest.raises(dubkit.AuthenticationError) as info:
            bad.tasks.list()
        assert secret_key not in repr(bad) and "SECRET" not in repr(bad)
    err = info.value
    assert err.code == 401 and err.http_status == 401 and err.path == "/openapi/v1/tasks/list"
    assert len(err.req_id) == 32
    assert "SECRET" not in str(err) and "SECRET" not in repr(err)


def test_callers_key_reuse_raises_conflict_without_retrying(client):
    mine = f"mine-{uuid.uuid4().hex[:8]}"  # each client's run its own: the key is the sandbox's
    client.translate.create(["one"], source="en-US", target="fr-FR", idempotency_key=mine)
    with pytest.raises(dubkit.IdempotencyConflictError) as info:
        client.translate.create(["two"], source="en-US", target="fr-FR", idempotency_key=mine)
    assert info.value.first_attempt_accepted is False
    assert info.value.retry_after == 2
    assert "new key" in str(info.value)


def test_key_over_64_chars_is_refused_before_sending(client):
    with pytest.raises(dubkit.ValidationError) as info:
        client.translate.create(["x"], source="en-US", target="fr-FR", idempotency_key="k" * 65)
    assert info.value.field == "X-Idempotency-Key"


@pytest.mark.parametrize(
    "creates", [300, pytest.param(1000, marks=pytest.mark.slow)], ids=lambda n: f"{n} creates"
)
def test_creates_with_lost_answers_make_no_duplicates(
    client, sandbox, new_key, client_for, creates
):
    """Every third answer is lost after commit; the client retries with the same key."""
    c = client_for(new_key)
    sandbox.set_faults(drop_after_commit=0.3, paths=["/task/translate/create-async"], seed=1)
    ok = conflicts = 0
    keys = set()
    for i in range(creates):
        try:
            task = c.translate.create_async([f"line {i}"], source="en-US", target="fr-FR")
            keys.add(task.idempotency_key)
            ok += 1
        except dubkit.IdempotencyConflictError as err:
            assert err.first_attempt_accepted, err
            assert "no second task" in str(err)
            keys.add(err.idempotency_key)
            conflicts += 1
    sandbox.set_faults()
    tasks = c.tasks.list(task_type="textTranslation")
    assert ok + conflicts == creates and len(keys) == creates
    assert conflicts > creates // 10  # the fault really fired
    assert len(tasks) == creates  # exactly one task per logical call: no duplicates
    assert len({t.task_id for t in tasks}) == creates


def test_lost_answer_of_a_sync_call_is_reported_not_repeated(client, sandbox):
    sandbox.set_faults(drop_after_commit=1.0, paths=["/task/translate/create"])
    before = len(client.tasks.list(task_type="textTranslation"))
    with pytest.raises(dubkit.IdempotencyConflictError) as info:
        client.translate.create(["once"], source="en-US", target="fr-FR")
    sandbox.set_faults()
    assert info.value.first_attempt_accepted
    assert len(client.tasks.list(task_type="textTranslation")) == before + 1


def test_502_after_commit_is_retried_safely(client, sandbox):
    sandbox.set_faults(error502_after=1.0, paths=["/task/translate/create-async"])
    with pytest.raises(dubkit.IdempotencyConflictError) as info:
        client.translate.create_async(["x"], source="en-US", target="fr-FR")
    sandbox.set_faults()
    assert info.value.first_attempt_accepted
    # The task the lost answer belonged to exists once and finishes.
    tasks = client.tasks.list(task_type="textTranslation", limit=1)
    assert client.tasks.get(tasks[0].task_id).wait(PATIENCE).status == "finished"


def test_502_before_commit_is_retried_until_success(client, sandbox):
    sandbox.set_faults(error502_before=0.5, paths=["/task/translate/create"], seed=7)
    results = [
        client.translate.create([f"n{i}"], source="en-US", target="fr-FR") for i in range(20)
    ]
    sandbox.set_faults()
    assert all(len(r) == 1 for r in results)


def test_connection_refused_is_a_typed_error_after_bounded_retries():
    with dubkit.Client(
        "sk_x_0000000000000",
        "http://127.0.0.1:9",
        retry=dubkit.RetryPolicy(max_retries=2, backoff=0.01),
    ) as dead:
        with pytest.raises(dubkit.APIConnectionError) as info:
            dead.tasks.list()
    assert "could not connect" in str(info.value)


def test_read_timeout_on_a_create_never_duplicates(sandbox, new_key):
    """Every attempt times out on the client's side but still lands in the sandbox: once the
    sandbox has answered all of them, the key has exactly one task."""
    sandbox.set_faults(latency_ms=600, paths=["/task/translate/create-async"])
    try:
        with (
            counting_proxy(sandbox.url) as proxy,
            dubkit.Client(
                new_key,
                proxy.url,
                timeout=dubkit.Timeout(connect=2, read=0.3),
                retry=dubkit.RetryPolicy(max_retries=2, backoff=0.01),
            ) as slow,
        ):
            with pytest.raises((dubkit.APITimeoutError, dubkit.IdempotencyConflictError)):
                slow.translate.create_async(["slow"], source="en-US", target="fr-FR")
            proxy.wait_idle()  # every attempt has had its answer
    finally:
        sandbox.set_faults()
    assert len(proxy.attempts) == 3  # the first try and both retries arrived
    with dubkit.Client(new_key, sandbox.url) as c:
        assert len(c.tasks.list()) == 1


def test_a_retry_that_meets_an_in_flight_first_attempt_learns_its_real_outcome(
    sandbox, new_key, tmp_path
):
    """The first attempt is slow and then fails (unreachable reference): the retry's 409 says
    'in progress', dubkit asks again after Retry-After, and reports the real failure, never a
    made-up 'accepted'."""
    hits = []

    def slow_then_missing(method, headers, body):
        hits.append(method)
        if len(hits) == 1:
            time.sleep(0.8)
        return 404, {}, b""

    policy = dubkit.RetryPolicy(max_retries=3, backoff=0.01, max_retry_after=1.5)
    with (
        local_http(slow_then_missing) as url,
        dubkit.Client(
            new_key, sandbox.url, retry=policy, timeout=dubkit.Timeout(connect=2, read=0.3)
        ) as c,
    ):
        with pytest.raises(dubkit.DubkitError) as info:
            c.clones.create(f"{url}/ref.wav", name="x")
        assert not isinstance(info.value, dubkit.IdempotencyConflictError), info.value
        assert len(c.voices.clones()) == 0 and len(c.tasks.list()) == 0


def test_the_key_only_travels_to_the_base_url(client):
    with pytest.raises(dubkit.ValidationError) as info:
        client.request("GET", "http://127.0.0.2:9/steal")
    assert info.value.field == "path"
    task = client.translate.create_async(["mine"], source="en-US", target="fr-FR")
    page = client.request("GET", client.base_url + "/openapi/v1/tasks/list")
    assert page["records"][0]["taskId"] == task.task_id  # newest first: the one just made


def test_a_409_without_a_json_body_is_still_a_conflict_error():
    def conflict(method, headers, body):
        return 409, {"Retry-After": "2"}, b"conflict"

    with local_http(conflict) as url, dubkit.Client("sk_test_000000000000", url) as c:
        with pytest.raises(dubkit.IdempotencyConflictError) as info:
            c.translate.create(["x"], source="en-US", target="fr-FR")
    assert info.value.first_attempt_accepted is False and info.value.http_status == 409


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


def test_a_409_on_the_plain_path_is_the_servers_conflict_not_a_refused_key():
    def respond(method: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
        return 409, {"Content-Type": "application/json"}, b'{"message": "busy elsewhere"}'

    with local_http(respond) as url, dubkit.Client("sk_x_00000000000", url, retry=FAST_RETRY) as c:
        with pytest.raises(dubkit.APIError) as info:
            c.transport.send("PUT", f"{url}/storage/object", data=b"bytes")
    assert type(info.value) is dubkit.APIError and info.value.http_status == 409
    assert "busy elsewhere" in str(info.value)


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
    """dubkit's choice (see _transport.core.redirect_refused): the interface defines none."""
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


# ------------------------------------------------------------- answers without the envelope

GATEWAY_HTML = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
GATEWAY_JSON = '{"error": "upstream", "request": "Authorization: Bearer sk_live_0123456789abcdef"}'


@pytest.mark.parametrize(
    "status, content_type, body, seen",
    [
        (502, "text/html", GATEWAY_HTML, "502 Bad Gateway"),
        (422, "application/json", GATEWAY_JSON, '"error": "upstream"'),
        (503, "", "", ""),
    ],
)
def test_an_error_without_the_envelope_keeps_status_type_and_a_secret_free_excerpt(
    status, content_type, body, seen
):
    answer = Answer(status, body.encode(), content_type=content_type, kind="gateway")
    no_retry = RetryPolicy(max_retries=0)
    with (
        answer_double() as double,
        dubkit.Client("sk_double_0123456789", double.url, retry=no_retry) as client,
    ):
        double.script({"tasks.list": [answer]})
        with pytest.raises(dubkit.APIError) as caught:
            client.tasks.list()
    error = caught.value
    assert (error.http_status, error.content_type) == (status, content_type)
    assert seen in error.body_excerpt and f"HTTP {status}" in str(error)
    assert error.req_id and "sk_live_0123456789abcdef" not in str(error) + repr(error)
    assert "sk_live_0123456789abcdef" not in error.body_excerpt


def test_a_code_written_as_an_integral_float_is_that_code():
    answer = Answer(200, b'{"code": 404.0, "message": "no such task"}')
    with answer_double() as double, dubkit.Client("sk_double_0123456789", double.url) as client:
        double.script({"tasks.detail": [answer]})
        with pytest.raises(dubkit.NotFoundError) as caught:
            client.tasks.get("t1")
    assert caught.value.code == 404 and caught.value.message == "no such task"


def test_a_success_without_data_where_a_record_is_due_is_an_unexpected_answer():
    with answer_double() as double, dubkit.Client("sk_double_0123456789", double.url) as client:
        double.script({"tasks.detail": [Answer(200, b'{"code": 200, "message": ""}')]})
        with pytest.raises(dubkit.UnexpectedAnswerError) as caught:
            client.tasks.get("t1")
    assert caught.value.operation == "tasks.detail" and caught.value.req_id
    assert "data does not fit TaskDetail" in str(caught.value)


@pytest.mark.parametrize(
    "header",
    [
        "not base64 at all!",
        base64.urlsafe_b64encode(zlib.compress(b"[1, 2]")).decode(),  # JSON, not an overlay
        base64.urlsafe_b64encode(zlib.compress(b"[" * 100_000)).decode(),  # too deep to read
        base64.urlsafe_b64encode(zlib.compress(b" " * (16 << 20), 9)).decode(),  # a zlib bomb
        '{"data": [1, 2',  # short, sent plain, but cut
        '{"a":' * 8_000,  # plain and too deep to read
        "[1, 2]",  # plain JSON, not an overlay
    ],
)
def test_an_extras_header_that_is_not_an_overlay_never_breaks_the_answer(header):
    def respond(method, headers, body):
        envelope = b'{"code": 200, "message": "", "data": {"total": 0, "records": []}}'
        return 200, {"Content-Type": "application/json", extras_header.HEADER: header}, envelope

    with local_http(respond) as url, dubkit.Client("sk_x_00000000000", url) as c:
        assert c.request("GET", "/tasks/list") == {"total": 0, "records": []}
        assert not c.transport.talks_to_sandbox


@pytest.mark.parametrize("size", [10, 10_000])
def test_an_extras_overlay_reads_back_as_it_was_sent_short_or_long(size):
    """A short overlay travels as plain JSON (read on every call, so read fast), a long one
    compressed; either reads back whole."""
    overlay = {"data": {"engine": "sandbox-pseudo-translation", "notes": ["n" * size]}}
    header = extras_header.encode(overlay)
    assert header is not None and extras_header.decode(header) == overlay
    compressed = not header.startswith("{")
    assert compressed == (size > extras_header.PLAIN_UP_TO)


def test_a_call_goes_out_as_session_request_would_send_it():
    """dubkit prepares its requests itself (``Transport._send``, skipping Session.request's
    per-call merging): the query, the session's headers, the key and the cookies an answer set
    still go out as requests' Session would send them."""
    seen: list[tuple[str, dict]] = []

    def respond(method, path, headers, body):
        seen.append((path, headers))
        envelope = b'{"code": 200, "message": "", "data": {"total": 0, "records": []}}'
        cookie = {"Set-Cookie": "lb=node-2; Path=/"}
        return 200, {"Content-Type": "application/json", **cookie}, envelope

    key = "sk_x_00000000000"
    with _serve(respond) as url, dubkit.Client(key, url) as c:
        c.request("GET", "/tasks/list", params={"status": ["a", "b"], "pageNo": 2, "gone": None})
        c.request("GET", "/tasks/list?pageSize=5")
    (first, first_headers), (second, second_headers) = seen
    query = parse_qs(urlsplit(first).query)
    assert query.pop("req_id")[0] and query == {"status": ["a", "b"], "pageNo": ["2"]}
    assert set(parse_qs(urlsplit(second).query)) == {"pageSize", "req_id"}
    assert first_headers["Authorization"] == f"Bearer {key}"
    assert first_headers["User-Agent"] == f"dubkit/{dubkit.__version__}"
    assert "Cookie" not in first_headers and second_headers["Cookie"] == "lb=node-2"
