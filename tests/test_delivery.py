"""The sandbox's webhook delivery: signed bodies, retries and a bounded schedule, backlog after
downtime, dead rows, secret rotation, replays, one row and one delivery per ended task, keys
that never hold each other back, task cells pushed by the events."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import NamedTuple

import pytest
from _http import local_http, webhook_catcher
from _waiting import PATIENCE, wait_for

import dubkit
from dubkit import start_sandbox as start
from dubkit.sandbox.delivery import DEFAULT_SCHEDULE, delay_after
from dubkit.webhooks import Receiver, TranslateEvent, verify
from dubkit.widgets.tasks import TaskMonitor


def _delivery_for(task_id, received):
    for headers, body in received:
        if json.loads(body)["data"].get("taskId") == task_id:
            return headers, body
    return None


def submit(client, text: str):
    return client.translate.create_async([text], source="en-US", target="fr-FR")


def outbox(box, task) -> list[dict]:
    return box.deliveries(task_id=task.task_id)["deliveries"]


def delivered(box, task) -> bool:
    rows = outbox(box, task)
    return bool(rows) and rows[0]["state"] == "delivered"


def pipeline_keys(caught) -> list[str]:
    return [json.loads(body)["pipelineKey"] for _, body in list(caught.deliveries)]


class Hanging(NamedTuple):
    url: str
    entered: list[bytes]  # bodies of the requests that are (or were) held
    release: threading.Event  # set it to let every held request answer 200


@contextmanager
def hanging_receiver() -> Iterator[Hanging]:
    """A receiver that accepts each request and answers nothing until released."""
    entered: list[bytes] = []
    release = threading.Event()

    def respond(method: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
        entered.append(body)
        release.wait(PATIENCE)
        return 200, {}, b"{}"

    try:
        with local_http(respond) as url:
            yield Hanging(url, entered, release)
    finally:
        release.set()


class Trickler(NamedTuple):
    url: str
    cut_off: list[int]  # bytes sent on each connection the sandbox closed on us
    stop: threading.Event


@contextmanager
def trickling_receiver() -> Iterator[Trickler]:
    """A receiver that answers one header byte every 50 ms, forever: every socket read gets
    data in time, so only a deadline over the whole attempt ends it."""
    listener = socket.create_server(("127.0.0.1", 0))
    cut_off: list[int] = []
    stop = threading.Event()

    def trickle(conn: socket.socket) -> None:
        sent = 0
        with conn:
            conn.settimeout(5)
            try:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                while not stop.wait(0.05):
                    conn.sendall(b"a")
                    sent += 1
            except OSError:
                cut_off.append(sent)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=trickle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield Trickler(f"http://127.0.0.1:{listener.getsockname()[1]}", cut_off, stop)
    finally:
        stop.set()
        listener.close()


@pytest.fixture
def restore(sandbox):
    """The schedule and timing are sandbox-wide: put them back afterwards."""
    yield
    sandbox.set_delivery(**asdict(DEFAULT_SCHEDULE))
    sandbox.set_timing("immediate")


@pytest.fixture
def fast(sandbox):
    """Short retry gaps, restored afterwards (the schedule is sandbox-wide)."""
    sandbox.set_delivery(base_delay=0.05, max_delay=0.2, timeout=2)
    yield
    sandbox.set_delivery(**asdict(DEFAULT_SCHEDULE))
    sandbox.set_timing("immediate")


@pytest.fixture
def account(sandbox, new_key, client_for):
    """A key of its own (its own URL and secret), a client for it, and its webhook secret."""
    return new_key, client_for(new_key), sandbox.set_webhook(None, api_key=new_key)["secret"]


def rows(sandbox, key: str, task=None) -> list[dict]:
    found = sandbox.admin("GET", f"/deliveries?apiKey={key}")["deliveries"]
    return [r for r in found if task is None or r["taskId"] == task.task_id]


def listening(tmp_path: Path, secret) -> tuple[Receiver, list[str]]:
    """A receiver whose translation handler records the task ids it ran for."""
    receiver = Receiver(secret, store=tmp_path / "events.sqlite3", retry_delay=0.01)
    handled: list[str] = []
    receiver.on("openapi-translate", lambda event: handled.append(event.task_id))
    return receiver, handled


def test_webhook_is_signed_and_verifies_and_one_byte_breaks_it(client, sandbox):
    with webhook_catcher() as caught:
        sandbox.set_webhook(f"{caught.url}/hook")
        task = client.translate.create_async(
            ["signed"], source="en-US", target="fr-FR", extra_data={"order": 7}
        )
        wait_for(lambda: _delivery_for(task.task_id, caught.deliveries))
    # Events held for this key while it had no URL arrive too; pick this task's.
    headers, body = _delivery_for(task.task_id, caught.deliveries)
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
            task = c.translate.create_async(["lost"], source="en-US", target="fr-FR").wait(PATIENCE)
        first.stop()
        with sqlite3.connect(tmp_path / "sandbox.sqlite3") as db:
            db.execute("DELETE FROM outbox")  # the crash, as the disk saw it
            db.execute("UPDATE keys SET webhook_url = ?", (f"{url}/hook",))  # a receiver
        second = start(tmp_path)
        try:
            wait_for(
                lambda: any(
                    row["state"] == "delivered"
                    for row in second.deliveries(task_id=task.task_id)["deliveries"]
                )
            )
            rows = second.deliveries(task_id=task.task_id)["deliveries"]
        finally:
            second.stop()
    # One outbox row, delivered on its first attempt: the receiver saw the event once.
    assert [(r["state"], r["attempts"]) for r in rows] == [("delivered", 1)]
    assert [e["data"]["taskId"] for e in received] == [task.task_id]


def test_a_hanging_receiver_does_not_hold_back_another_keys_webhook(sandbox, client_for, restore):
    key_a, key_b = sandbox.create_key("hangs"), sandbox.create_key("answers")
    sandbox.set_delivery(timeout=30, base_delay=0.05, max_delay=0.2)
    with hanging_receiver() as hang, webhook_catcher() as caught:
        sandbox.set_webhook(hang.url, api_key=key_a)
        sandbox.set_webhook(caught.url, api_key=key_b)
        a_tasks = [submit(client_for(key_a), f"held {i}") for i in range(4)]
        assert wait_for(lambda: hang.entered)  # A's first attempt is now hanging
        b_task = submit(client_for(key_b), "not held")
        assert wait_for(lambda: delivered(sandbox, b_task), limit=60)
        # B went out while no attempt of A's has finished: A's rows have an empty log, and
        # A's receiver holds one request only (one attempt per key at a time), A's oldest row.
        a_rows = [outbox(sandbox, t)[0] for t in a_tasks]
        assert [r["log"] for r in a_rows] == [[], [], [], []]
        oldest = min(a_rows, key=lambda r: r["id"])
        assert [json.loads(b)["pipelineKey"] for b in hang.entered] == [oldest["pipelineKey"]]
        assert pipeline_keys(caught) == [outbox(sandbox, b_task)[0]["pipelineKey"]]
        hang.release.set()
        assert wait_for(lambda: all(delivered(sandbox, t) for t in a_tasks))
    for task in a_tasks:
        [row] = outbox(sandbox, task)
        assert row["attempts"] == 1 and [a["statusCode"] for a in row["log"]] == [200]
    sandbox.set_webhook(None, api_key=key_a)
    sandbox.set_webhook(None, api_key=key_b)


def test_an_answer_trickled_byte_by_byte_is_cut_off_at_the_timeout(
    sandbox, new_key, client_for, restore
):
    sandbox.set_delivery(timeout=1, base_delay=60, max_delay=60)
    with trickling_receiver() as trickler:
        sandbox.set_webhook(trickler.url, api_key=new_key)
        task = submit(client_for(new_key), "slowly")
        # The sandbox gave up on the attempt and hung up while the receiver, which never
        # stops on its own, was still sending.
        assert wait_for(lambda: outbox(sandbox, task) and outbox(sandbox, task)[0]["log"])
        assert wait_for(lambda: trickler.cut_off) and trickler.cut_off[0] > 0
    [row] = outbox(sandbox, task)
    [attempt] = row["log"]
    assert row["state"] == "pending" and row["attempts"] == 1
    assert attempt["statusCode"] is None and attempt["error"].startswith("Timeout")
    sandbox.set_webhook(None, api_key=new_key)


def test_each_task_has_one_outbox_row_and_one_delivery_while_polls_release_them(
    sandbox, new_key, client_for, restore
):
    count = 300
    client = client_for(new_key)
    sandbox.set_timing("polls", 1)  # a task ends on its first poll (or the ticker after it)
    tasks: list = []
    done = threading.Event()

    def poll_every_task() -> None:
        with dubkit.Client(new_key, sandbox.url) as poller:
            while not done.is_set():
                for task in list(tasks):
                    poller.call("tasks.detail", {"taskId": task.task_id})

    with webhook_catcher() as caught:
        sandbox.set_webhook(caught.url, api_key=new_key)
        pollers = [threading.Thread(target=poll_every_task, daemon=True) for _ in range(3)]
        for thread in pollers:
            thread.start()
        try:
            for i in range(count):
                tasks.append(submit(client, f"line {i}"))
            assert wait_for(lambda: len(caught.deliveries) >= count, limit=120)
            # Every row this key has (duplicates included, had there been any) has gone out.
            assert wait_for(
                lambda: all(
                    r["state"] == "delivered"
                    for r in sandbox.deliveries(api_key=new_key)["deliveries"]
                )
            )
            rows = sandbox.deliveries(api_key=new_key)["deliveries"]
        finally:
            done.set()
            for thread in pollers:
                thread.join(30)
        sandbox.set_webhook(None, api_key=new_key)
        received = Counter(pipeline_keys(caught))
    per_task = Counter(r["taskId"] for r in rows)
    assert sorted(per_task) == sorted(t.task_id for t in tasks)
    assert {n for n in per_task.values()} == {1}, (
        f"{sum(n > 1 for n in per_task.values())} tasks with more than one outbox row"
    )
    assert [len(r["log"]) for r in rows] == [1] * count
    assert set(received) == {r["pipelineKey"] for r in rows}
    assert {n for n in received.values()} == {1}, (
        f"{sum(n > 1 for n in received.values())} pipelineKeys delivered more than once"
    )


def test_a_task_enqueued_twice_has_one_row_and_is_delivered_once(sandbox, new_key, client_for):
    """What a release and a recovery pass racing amount to: ``enqueue`` runs twice."""
    client = client_for(new_key)
    with webhook_catcher() as caught:
        sandbox.set_webhook(caught.url, api_key=new_key)
        task = submit(client, "announced twice")
        ended = wait_for(
            lambda: (
                (row := sandbox.server.backend.task_row(task.task_id))["status"] != "running"
                and row
            )
        )
        assert ended and ended["status"] == "finished"
        sandbox.server.deliverer.enqueue(ended)
        sandbox.server.deliverer.enqueue(ended)
        later = submit(client, "announced once")
        # Rows of one key go oldest first: a second row for the first task goes before this.
        assert wait_for(lambda: delivered(sandbox, later))
        rows = outbox(sandbox, task)
        sandbox.set_webhook(None, api_key=new_key)
    assert len(rows) == 1 and rows[0]["state"] == "delivered" and len(rows[0]["log"]) == 1
    assert Counter(pipeline_keys(caught)) == {
        rows[0]["pipelineKey"]: 1,
        outbox(sandbox, later)[0]["pipelineKey"]: 1,
    }


def test_a_database_with_duplicate_outbox_rows_opens_and_delivers_once(tmp_path: Path):
    data_dir = tmp_path / "sandbox"
    with webhook_catcher() as caught:
        box = start(data_dir)
        try:
            box.set_webhook(caught.url)
            with dubkit.Client(box.api_key, box.url) as client:
                first = submit(client, "before the restart")
            assert wait_for(lambda: delivered(box, first))
            [original] = outbox(box, first)
        finally:
            box.stop()
        # What an older sandbox could leave behind: a second row for the same task, due now.
        with sqlite3.connect(data_dir / "sandbox.sqlite3") as db:
            for (name,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' "
                "AND tbl_name = 'outbox' AND sql LIKE '%UNIQUE%'"
            ):
                db.execute(f"DROP INDEX {name}")  # the schema of before this change
            extra = db.execute(
                "INSERT INTO outbox (api_key, task_id, event, pipeline_key, body, attempts, "
                "next_at, state, created_at) SELECT api_key, task_id, event, pipeline_key, body, "
                "1, 0, 'pending', created_at FROM outbox WHERE task_id = ?",
                (first.task_id,),
            ).lastrowid
            # ... with an attempt of its own on record (a 503): history kept, on the kept row.
            db.execute(
                "INSERT INTO deliveries (outbox_id, attempt, at, url, status_code, error,"
                " duration_ms) VALUES (?, 1, 0, ?, 503, 'receiver answered HTTP 503', 1)",
                (extra, caught.url),
            )
            assert db.execute(
                "SELECT COUNT(*) FROM outbox WHERE task_id = ?", (first.task_id,)
            ).fetchone() == (2,)
        db.close()
        box = start(data_dir)
        try:
            with dubkit.Client(box.api_key, box.url) as client:
                second = submit(client, "after the restart")
            # Rows of one key go oldest first, so a duplicate of the first task would be sent
            # before the second task's event.
            assert wait_for(lambda: delivered(box, second))
            [kept] = outbox(box, first)
            assert (kept["id"], kept["state"]) == (original["id"], "delivered")
            assert [a["statusCode"] for a in kept["log"]] == [200, 503]
            assert Counter(pipeline_keys(caught)) == {
                original["pipelineKey"]: 1,
                outbox(box, second)[0]["pipelineKey"]: 1,
            }
        finally:
            box.stop()


def test_an_async_result_arrives_verified_and_typed(sandbox, account, tmp_path, fast):
    key, client, secret = account
    receiver = Receiver(secret, store=tmp_path / "events.sqlite3")
    got: list[TranslateEvent] = []
    receiver.on("openapi-translate", got.append)
    sandbox.set_webhook(receiver.serve(), api_key=key)
    try:
        task = submit(client, "Good morning")
        assert wait_for(lambda: got)
    finally:
        receiver.stop()
    [event] = got
    assert event.task_id == task.task_id and event.status == "finished"
    assert event.result.items[0].text and event.idempotency_key == task.idempotency_key
    [row] = rows(sandbox, key, task)
    assert row["state"] == "delivered" and row["pipelineKey"] == event.pipeline_key
    assert [(a["statusCode"], a["secret"]) for a in row["log"]] == [(200, "current")]


def test_a_receiver_that_was_down_gets_every_event_once_it_is_back(
    sandbox, account, tmp_path, fast
):
    key, client, secret = account
    receiver, handled = listening(tmp_path, secret)
    url = receiver.serve()
    receiver.stop()  # down, at a URL the sandbox knows
    port = int(url.rsplit(":", 1)[1].strip("/"))
    sandbox.set_webhook(url, api_key=key)
    tasks = [submit(client, f"while you were out {i}") for i in range(5)]
    assert wait_for(
        lambda: all(r["attempts"] >= 2 for r in rows(sandbox, key)) and len(rows(sandbox, key)) == 5
    )
    receiver.serve(port=port)  # back, same address
    try:
        assert wait_for(lambda: all(r["state"] == "delivered" for r in rows(sandbox, key)))
        assert receiver.wait_idle(10)
    finally:
        receiver.stop()
    assert sorted(handled) == sorted(t.task_id for t in tasks)
    for row in rows(sandbox, key):
        assert row["log"][0]["error"].startswith("ConnectionError")
        assert row["log"][-1]["statusCode"] == 200


def test_retries_are_bounded_and_the_row_ends_dead(sandbox, account, tmp_path, fast):
    key, client, _ = account
    sandbox.set_delivery(max_attempts=3)
    receiver, _ = listening(tmp_path, "whsec_not_the_right_one")  # answers 401 every time
    sandbox.set_webhook(receiver.serve(), api_key=key)
    try:
        task = submit(client, "nobody will take this")
        assert wait_for(
            lambda: rows(sandbox, key, task) and rows(sandbox, key, task)[0]["state"] == "dead"
        )
    finally:
        receiver.stop()
    [row] = rows(sandbox, key, task)
    assert row["attempts"] == 3 and row["lastError"] == "receiver answered HTTP 401"
    assert [a["attempt"] for a in row["log"]] == [1, 2, 3]
    assert {d.reason.split(":")[0] for d in receiver.deliveries} == {"bad-signature"}


def test_the_schedule_doubles_from_the_base_delay_up_to_the_cap():
    plan = replace(DEFAULT_SCHEDULE, jitter=0.0)
    gaps = [delay_after(n, plan) for n in range(1, plan.max_attempts)]
    assert gaps[:7] == [1, 2, 4, 8, 16, 32, 60] and set(gaps[6:]) == {60}
    assert sum(gaps) == 843  # about 14 minutes before a row is dead
    jittered = {round(delay_after(3, DEFAULT_SCHEDULE), 3) for _ in range(50)}
    assert min(jittered) >= 3.6 and max(jittered) <= 4.4 and len(jittered) > 1


def test_a_receiver_still_on_the_old_secret_keeps_working_during_the_overlap(
    sandbox, account, tmp_path, fast
):
    key, client, old = account
    receiver, handled = listening(tmp_path, old)
    url = receiver.serve()
    try:
        rotated = sandbox.set_webhook(url, api_key=key, rotate_secret=True, overlap_seconds=3600)
        assert rotated["previousSecret"] == old and rotated["secret"] != old
        first = submit(client, "signed twice")
        assert wait_for(lambda: handled)
        # The handler runs before the receiver answers, and the sandbox logs the attempt once it
        # has the answer: wait for the delivery to be done, not for the handler.
        assert wait_for(lambda: delivered(sandbox, first))
        assert [(a["statusCode"], a["secret"]) for a in rows(sandbox, key, first)[0]["log"]] == [
            (401, "current"),
            (200, "previous"),
        ]
        receiver.rotate_secret(rotated["secret"], overlap=3600)  # now it knows both
        second = submit(client, "signed once")
        assert wait_for(lambda: len(handled) == 2 and delivered(sandbox, second))
        assert [(a["statusCode"], a["secret"]) for a in rows(sandbox, key, second)[0]["log"]] == [
            (200, "current")
        ]
    finally:
        receiver.stop()


def test_after_the_overlap_the_old_secret_no_longer_signs_anything(
    sandbox, account, tmp_path, fast
):
    key, client, secret = account
    sandbox.set_delivery(max_attempts=2)
    receiver, _ = listening(tmp_path, secret)
    url = receiver.serve()
    try:
        sandbox.set_webhook(url, api_key=key, rotate_secret=True, overlap_seconds=0)
        task = submit(client, "too late for the old secret")
        assert wait_for(
            lambda: rows(sandbox, key, task) and rows(sandbox, key, task)[0]["state"] == "dead"
        )
    finally:
        receiver.stop()
    assert {a["secret"] for a in rows(sandbox, key, task)[0]["log"]} == {"current"}


def test_a_redelivery_is_answered_as_a_duplicate_and_runs_nothing(sandbox, account, tmp_path, fast):
    key, client, secret = account
    receiver, handled = listening(tmp_path, secret)
    sandbox.set_webhook(receiver.serve(), api_key=key)
    try:
        task = submit(client, "say it again")
        assert wait_for(lambda: handled)
        assert sandbox.admin("POST", "/deliveries/redeliver", taskId=task.task_id) == {
            "requeued": 1
        }
        assert wait_for(lambda: len(rows(sandbox, key, task)[0]["log"]) == 2)
        assert receiver.wait_idle(10)
    finally:
        receiver.stop()
    assert handled == [task.task_id]
    assert [d.outcome for d in receiver.deliveries] == ["verified", "duplicate"]


def test_a_key_without_a_url_gets_nothing_later(sandbox, account, fast):
    key, client, _ = account
    task = submit(client, "into the void")
    assert wait_for(
        lambda: rows(sandbox, key, task) and rows(sandbox, key, task)[0]["state"] == "skipped"
    )
    row = rows(sandbox, key, task)[0]
    assert row["lastError"] == "no webhook URL configured for this key" and row["log"] == []


def test_a_task_cell_is_ended_by_the_pushed_event_not_by_polling(sandbox, account, tmp_path, fast):
    key, client, secret = account
    receiver, _ = listening(tmp_path, secret)
    sandbox.set_webhook(receiver.serve(), api_key=key)
    sandbox.set_timing("seconds", 0.5)
    try:
        task = submit(client, "push me")
        # polls once at start (running), then not again for a minute: only a push can end it
        monitor = TaskMonitor(task, poll_interval=60, push_interval=60)
        assert monitor.join(timeout=PATIENCE)
    finally:
        receiver.stop()
    assert task.status == "finished" and monitor.via == {task.task_id: "webhook"}
    assert task.result.texts[0]
    html = monitor._repr_mimebundle_()["text/html"]
    assert "finished" in html and "<td>webhook</td>" in html


def test_without_a_receiver_the_cell_falls_back_to_polling(sandbox, account, fast):
    key, client, _ = account
    sandbox.set_timing("seconds", 0.3)
    task = submit(client, "poll me")
    monitor = TaskMonitor([task], poll_interval=0.05)
    assert monitor.join(timeout=PATIENCE)
    assert task.status == "finished" and monitor.via == {task.task_id: "poll"}


def test_an_end_already_seen_is_not_undone_by_a_late_running_answer(sandbox, account, fast):
    key, client, _ = account
    sandbox.set_timing("seconds", 30)
    task = submit(client, "late news")
    monitor = TaskMonitor(task, start=False)
    assert monitor.apply_event(
        task.task_id,
        status="finished",
        task_type="textTranslation",
        result={"taskId": task.task_id, "items": [{"text": "x"}]},
    )
    assert monitor.apply_event(task.task_id, status="running", via="poll")  # a stale poll
    assert task.status == "finished" and monitor.via == {task.task_id: "webhook"}
    assert not monitor.apply_event("someone-elses-task", status="finished")


def test_a_monitor_that_gives_up_says_so(sandbox, account, fast):
    key, client, _ = account
    sandbox.set_timing("seconds", 30)
    task = submit(client, "slow boat")
    monitor = TaskMonitor(task, poll_interval=0.05, timeout=0.3)
    assert monitor.join(timeout=PATIENCE)
    assert task.status == "running"
    assert "stopped watching after 0.3 s" in monitor._repr_mimebundle_()["text/html"]
