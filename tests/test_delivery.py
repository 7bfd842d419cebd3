"""The sandbox delivering to a real Receiver: retries, backlog after downtime, dead rows, secret
rotation, replays, and task cells pushed by the events.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from dubkit.sandbox.delivery import DEFAULT_SCHEDULE, delay_after
from dubkit.webhooks import Receiver, TranslateEvent
from dubkit.widgets.tasks import TaskMonitor


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


def wait_for(check, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return value


def submit(client, text: str):
    return client.translate.create_async([text], source="en-US", target="fr-FR")


def listening(tmp_path: Path, secret) -> tuple[Receiver, list[str]]:
    """A receiver whose translation handler records the task ids it ran for."""
    receiver = Receiver(secret, store=tmp_path / "events.sqlite3", retry_delay=0.01)
    handled: list[str] = []
    receiver.on("openapi-translate", lambda event: handled.append(event.task_id))
    return receiver, handled


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
        assert [(a["statusCode"], a["secret"]) for a in rows(sandbox, key, first)[0]["log"]] == [
            (401, "current"),
            (200, "previous"),
        ]
        receiver.rotate_secret(rotated["secret"], overlap=3600)  # now it knows both
        second = submit(client, "signed once")
        assert wait_for(lambda: len(handled) == 2)
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
        assert monitor.join(timeout=20)
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
    assert monitor.join(timeout=20)
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
    assert monitor.join(timeout=10)
    assert task.status == "running"
    assert "stopped watching after 0.3 s" in monitor._repr_mimebundle_()["text/html"]
