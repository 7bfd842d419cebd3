"""The foundation over real HTTP: envelope, auth, idempotency, retries, credits, isolation,
persistence, webhook signatures."""

from __future__ import annotations

import json
import time
import uuid

import pytest
import requests
from _http import counting_proxy, local_http

import dubkit
from dubkit import start_sandbox as start
from dubkit.webhooks import verify

SEGMENTS = [{"text": "Hello world"}]
LANG = {"source": "en-US", "target": "fr-FR"}


def raw_post(box, path, body, *, key=None, idem="auto", data=None):
    headers = {"Authorization": f"Bearer {key or box.api_key}"}
    if idem == "auto":
        headers["X-Idempotency-Key"] = uuid.uuid4().hex
    elif idem is not None:
        headers["X-Idempotency-Key"] = idem
    return requests.post(
        f"{box.url}/openapi/v1{path}",
        json=body if data is None else None,
        data=data,
        headers=headers,
        timeout=10,
    )


# ---------------------------------------------------------------- envelope and auth


@pytest.mark.parametrize("key", [None, "sk_wrong_key_000000"])
def test_missing_or_wrong_key_is_a_401_envelope(sandbox, key):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    answer = requests.get(f"{sandbox.url}/openapi/v1/tasks/list", headers=headers, timeout=10)
    assert answer.status_code == 401
    assert answer.json()["code"] == 401 and answer.json()["data"] is None


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


def test_post_without_idempotency_key_names_the_header(sandbox):
    answer = raw_post(
        sandbox, "/task/translate/create", {"language": LANG, "segments": SEGMENTS}, idem=None
    )
    assert answer.status_code == 400
    assert "X-Idempotency-Key" in answer.json()["message"]


def test_malformed_json_is_a_400_envelope(sandbox):
    answer = raw_post(sandbox, "/task/translate/create", None, data=b"{not json")
    assert answer.status_code == 400
    assert answer.json()["message"].startswith("malformed JSON")


def test_validation_failure_names_the_field_never_a_framework_body(sandbox):
    answer = raw_post(
        sandbox,
        "/task/translate/create",
        {"language": LANG, "segments": [{"text": "a", "start": 2, "end": 1}]},
    )
    body = answer.json()
    assert answer.status_code == 400 and set(body) == {"code", "message", "data"}
    assert "segments[0]" in body["message"] and "end" in body["message"]


def test_unknown_path_and_method_get_envelopes(sandbox):
    auth = {"Authorization": f"Bearer {sandbox.api_key}"}
    answer = requests.get(f"{sandbox.url}/openapi/v1/no/such/thing", headers=auth, timeout=10)
    assert answer.status_code == 404 and answer.json()["code"] == 404
    answer = requests.get(
        f"{sandbox.url}/openapi/v1/task/translate/create", headers=auth, timeout=10
    )
    assert answer.status_code == 405 and answer.json()["code"] == 405
    # Without a key, auth comes first, as on the service: nothing is revealed about paths.
    answer = requests.get(f"{sandbox.url}/openapi/v1/no/such/thing", timeout=10)
    assert answer.status_code == 401


def test_unknown_task_is_404(client):
    with pytest.raises(dubkit.NotFoundError) as info:
        client.tasks.get("0" * 32)
    assert info.value.code == 404


def test_body_over_the_limit_is_413(client, sandbox):
    sandbox.set_limits(body_limit=2000)
    try:
        with pytest.raises(dubkit.PayloadTooLargeError):
            client.translate.create(["x" * 3000], source="en-US", target="fr-FR")
    finally:
        sandbox.set_limits(body_limit=8 * 1024 * 1024)


# ---------------------------------------------------------------- idempotency


def test_reused_key_is_409_with_retry_after(sandbox):
    body = {"language": LANG, "segments": SEGMENTS}
    first = raw_post(sandbox, "/task/translate/create", body, idem="same-key-1")
    again = raw_post(sandbox, "/task/translate/create", body, idem="same-key-1")
    assert first.json()["code"] == 200
    assert again.status_code == 409 and again.headers["Retry-After"] == "2"
    assert "Idempotency key already used" in again.json()["message"]
    # Scope is key + path: the same key on another path is a different submission.
    other = raw_post(sandbox, "/task/translate/create-async", body, idem="same-key-1")
    assert other.json()["code"] == 200


def test_refused_request_does_not_burn_its_key(sandbox):
    bad = raw_post(
        sandbox,
        "/task/translate/create",
        {"language": LANG, "segments": [{"text": 5}]},
        idem="fix-and-retry",
    )
    good = raw_post(
        sandbox,
        "/task/translate/create",
        {"language": LANG, "segments": SEGMENTS},
        idem="fix-and-retry",
    )
    assert bad.json()["code"] == 400 and good.json()["code"] == 200


def test_callers_key_reuse_raises_conflict_without_retrying(client):
    client.translate.create(["one"], source="en-US", target="fr-FR", idempotency_key="mine-1")
    with pytest.raises(dubkit.IdempotencyConflictError) as info:
        client.translate.create(["two"], source="en-US", target="fr-FR", idempotency_key="mine-1")
    assert info.value.first_attempt_accepted is False
    assert info.value.retry_after == 2
    assert "new key" in str(info.value)


def test_key_over_64_chars_is_refused_before_sending(client):
    with pytest.raises(dubkit.ValidationError) as info:
        client.translate.create(["x"], source="en-US", target="fr-FR", idempotency_key="k" * 65)
    assert info.value.field == "X-Idempotency-Key"


def test_thousand_creates_with_lost_answers_make_no_duplicates(
    client, sandbox, new_key, client_for
):
    """Every third answer is lost after commit; the client retries with the same key."""
    c = client_for(new_key)
    sandbox.set_faults(drop_after_commit=0.3, paths=["/task/translate/create-async"], seed=1)
    ok = conflicts = 0
    keys = set()
    for i in range(1000):
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
    assert ok + conflicts == 1000 and len(keys) == 1000
    assert conflicts > 100  # the fault really fired
    assert len(tasks) == 1000  # exactly one task per logical call: no duplicates
    assert len({t.task_id for t in tasks}) == 1000


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
    assert client.tasks.get(tasks[0].task_id).wait(10).status == "finished"


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


def test_wait_holds_its_deadline_even_when_polls_hang(sandbox, new_key):
    """A poll that hangs for 5 s does not hold ``wait(timeout=1)``: it gives up while that
    poll is still unanswered, and does not send it again."""
    sandbox.set_timing("seconds", 60)
    try:
        with counting_proxy(sandbox.url) as proxy, dubkit.Client(new_key, proxy.url) as c:
            slow = c.translate.create_async(["y"], source="en-US", target="fr-FR")
            sandbox.set_faults(latency_ms=5000, paths=["/tasks/detail"])
            with pytest.raises(dubkit.TaskTimeoutError) as info:
                slow.wait(timeout=1.0)
            still_waiting = proxy.in_flight  # the hanging poll, not yet answered
            proxy.wait_idle()
    finally:
        sandbox.set_faults()
        sandbox.set_timing("immediate")
    assert still_waiting == 1 and info.value.last_status == "running"
    assert [p.split("?")[0] for p in proxy.attempts].count("/openapi/v1/tasks/detail") == 1


def test_a_crash_in_the_sandbox_charges_nothing_and_leaves_no_task(sandbox, new_key, client_for):
    """A sandbox bug after the work was done and charged (the ``crashAfterHandler`` fault)
    gives the credits back and leaves no task, sync or async, though the client retries the
    500; the client sees a ServerError."""
    c = client_for(new_key)
    before = sandbox.credits(new_key)
    sandbox.set_faults(crash_after_handler=1, paths=["/task/translate/create"])
    try:
        with pytest.raises(dubkit.ServerError) as info:
            c.translate.create(["0123456789"], source="en-US", target="fr-FR")
        with pytest.raises(dubkit.ServerError):
            c.translate.create_async(["0123456789"], source="en-US", target="fr-FR")
    finally:
        sandbox.set_faults()
    assert "crashAfterHandler" in str(info.value)
    assert sandbox.credits(new_key) == before and len(c.tasks.list()) == 0
    c.translate.create(["0123456789"], source="en-US", target="fr-FR")  # the same call, sound
    assert sandbox.credits(new_key) == before - 10 and len(c.tasks.list()) == 1


# ---------------------------------------------------------------- credits, isolation, restart


def test_402_when_credits_run_out_and_nothing_is_created(sandbox, new_key, client_for):
    c = client_for(new_key)
    sandbox.set_credits(20, api_key=new_key)
    c.translate.create(["0123456789"], source="en-US", target="fr-FR")  # 10 credits
    with pytest.raises(dubkit.InsufficientCreditsError) as info:
        c.translate.create(["a much longer line"], source="en-US", target="fr-FR")
    assert "credits" in str(info.value)
    assert len(c.tasks.list()) == 1


def test_keys_are_isolated(sandbox, new_key, client_for, client):
    mine = client_for(new_key).translate.create_async(["x"], source="en-US", target="fr-FR")
    with pytest.raises(dubkit.NotFoundError):
        client.tasks.get(mine.task_id)
    assert mine.task_id not in {t.task_id for t in client.tasks.list()}
    with pytest.raises(dubkit.NotFoundError):
        client.tasks.delete(mine.task_id)


def test_restart_keeps_keys_and_tasks(tmp_path):
    first = start(tmp_path)
    key = first.api_key
    with dubkit.Client(key, first.url) as c:
        task_id = (
            c.translate.create_async(["persist"], source="en-US", target="fr-FR").wait(10).task_id
        )
    first.stop()
    second = start(tmp_path)
    try:
        assert second.api_key == key
        assert second.url == first.url  # stored file URLs stay valid across restarts
        with dubkit.Client(key, second.url) as c:
            task = c.tasks.get(task_id)
            assert task.status == "finished" and task.result.texts[0]
    finally:
        second.stop()


# ---------------------------------------------------------------- tasks


def test_task_list_pages_filters_and_deletes(sandbox, new_key, client_for):
    c = client_for(new_key)
    made = [c.translate.create_async([f"t{i}"], source="en-US", target="fr-FR") for i in range(45)]
    for task in made:
        task.wait(10)
    listed = c.tasks.list(task_type="textTranslation", page_size=20)
    assert [t.task_id for t in listed] == [t.task_id for t in reversed(made)]  # newest first
    assert len(c.tasks.list(status="finished")) == 45
    assert len(c.tasks.list(task_type="tts")) == 0
    assert len(c.tasks.list(limit=7)) == 7
    frame = listed.to_frame()
    assert list(frame.columns[:3]) == ["task_id", "task_type", "status"] and len(frame) == 45
    made[0].delete()
    assert len(c.tasks.list()) == 44
    with pytest.raises(dubkit.NotFoundError):
        made[0].refresh()


def test_wait_deadline_names_the_last_status(client, sandbox):
    sandbox.set_timing("seconds", 30)
    task = client.translate.create_async(["slow"], source="en-US", target="fr-FR")
    with pytest.raises(dubkit.TaskTimeoutError) as info:
        task.wait(timeout=0.6, poll_interval=0.1)
    assert info.value.last_status == "running" and "'running'" in str(info.value)


def test_timing_after_n_polls(client, sandbox):
    sandbox.set_timing("polls", 3)
    task = client.translate.create_async(["poll me"], source="en-US", target="fr-FR")
    time.sleep(0.3)
    seen = [task.refresh().status for _ in range(3)]
    assert seen == ["running", "running", "finished"]


# ---------------------------------------------------------------- webhooks


def test_webhook_is_signed_and_verifies_and_one_byte_breaks_it(client, sandbox):
    received = []

    def hook(method, headers, body):
        received.append((headers, body))
        return 200, {}, b""

    with local_http(hook) as url:
        sandbox.set_webhook(f"{url}/hook")
        task = client.translate.create_async(
            ["signed"], source="en-US", target="fr-FR", extra_data={"order": 7}
        )
        deadline = time.time() + 10
        while not _delivery_for(task.task_id, received) and time.time() < deadline:
            time.sleep(0.05)
    # Events held for this key while it had no URL arrive too; pick this task's.
    headers, body = _delivery_for(task.task_id, received)
    secret = sandbox.webhook_secret
    verify(secret, headers["X-Timestamp"], body, headers["X-Signature"])
    envelope = json.loads(body)
    assert envelope["event"] == "openapi-translate" and envelope["code"] == 200
    assert envelope["data"]["taskId"] == task.task_id
    assert envelope["extraData"] == {"dubkitIdempotencyKey": task.idempotency_key, "order": 7}
    assert len(envelope["pipelineKey"]) == 32
    tampered = bytearray(body)
    tampered[10] ^= 1
    with pytest.raises(dubkit.WebhookVerificationError) as info:
        verify(secret, headers["X-Timestamp"], bytes(tampered), headers["X-Signature"])
    assert info.value.reason == "bad-signature" and secret not in str(info.value)
    with pytest.raises(dubkit.WebhookVerificationError) as info:
        verify(
            secret,
            headers["X-Timestamp"],
            body,
            headers["X-Signature"],
            now=int(headers["X-Timestamp"]) / 1000 + 301,
        )
    assert info.value.reason == "stale"


def _delivery_for(task_id, received):
    for headers, body in received:
        if json.loads(body)["data"].get("taskId") == task_id:
            return headers, body
    return None


def test_an_event_lost_between_status_flip_and_outbox_is_sent_after_restart(tmp_path):
    """A crash after a task ended but before its webhook was queued: on restart the sandbox
    finds the ended task without an outbox row and sends its event, once."""
    import sqlite3

    received = []

    def hook(method, headers, body):
        received.append(json.loads(body))
        return 200, {}, b""

    with local_http(hook) as url:
        first = start(tmp_path)
        with dubkit.Client(first.api_key, first.url) as c:
            task = c.translate.create_async(["lost"], source="en-US", target="fr-FR").wait(10)
        first.stop()
        with sqlite3.connect(tmp_path / "sandbox.sqlite3") as db:
            db.execute("DELETE FROM outbox")  # the crash, as the disk saw it
            db.execute("UPDATE keys SET webhook_url = ?", (f"{url}/hook",))  # a receiver
        second = start(tmp_path)
        try:
            deadline = time.time() + 15
            while time.time() < deadline and not any(
                row["state"] == "delivered"
                for row in second.deliveries(task_id=task.task_id)["deliveries"]
            ):
                time.sleep(0.05)
            rows = second.deliveries(task_id=task.task_id)["deliveries"]
        finally:
            second.stop()
    # One outbox row, delivered on its first attempt: the receiver saw the event once.
    assert [(r["state"], r["attempts"]) for r in rows] == [("delivered", 1)]
    assert [e["data"]["taskId"] for e in received] == [task.task_id]
