"""Tasks: listing, paging, filters, delete, waiting (deadlines, statuses the interface names
and ones it does not), and the sandbox's timing."""

from __future__ import annotations

import json
import time
import warnings

import pytest
import requests
from _double import answer_double, fixed
from _http import counting_proxy, local_http
from _storage_fixtures import api, storage_defaults  # noqa: F401  (fixtures)
from _waiting import PATIENCE, SteppedClock

import dubkit
import dubkit._transport.core
import dubkit._transport.plans
import dubkit.results.task


@pytest.fixture
def client(each_client):
    """This module's scenarios run through both clients (tests/_clients.py)."""
    return each_client


def _service_saying(status: str):
    """A stand-in service whose tasks/detail reports ``status`` for every task."""

    def respond(method, headers, body):
        data = {
            "taskId": "t1",
            "taskType": "textTranslation",
            "status": status,
            "result": {"items": [{"text": "Bonjour"}]},
        }
        return (
            200,
            {"Content-Type": "application/json"},
            json.dumps({"code": 200, "message": "", "data": data}).encode(),
        )

    return local_http(respond)


def test_unknown_task_is_404(client):
    with pytest.raises(dubkit.NotFoundError) as info:
        client.tasks.get("0" * 32)
    assert info.value.code == 404


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


def test_task_list_pages_filters_and_deletes(sandbox, new_key, client_for):
    c = client_for(new_key)
    made = [c.translate.create_async([f"t{i}"], source="en-US", target="fr-FR") for i in range(45)]
    for task in made:
        task.wait(PATIENCE)
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


def test_wait_treats_complete_as_finished():
    with _service_saying("complete") as url:
        with dubkit.Client("sk_test_" + "0" * 24, url) as client:
            task = client.tasks.get("t1", fetch=False).wait(timeout=5)
    assert task.done and task.status == "finished"
    assert task.result.texts == ["Bonjour"]


def test_wait_keeps_polling_an_unknown_status_and_warns_once():
    with _service_saying("queued") as url:
        with dubkit.Client("sk_test_" + "0" * 24, url) as client:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with pytest.raises(dubkit.TaskTimeoutError, match="'queued'"):
                    client.tasks.get("t1", fetch=False).wait(timeout=1, poll_interval=0.05)
    assert not client.tasks.get("t1", fetch=False).done
    assert [str(w.message) for w in caught if "queued" in str(w.message)] == [
        "the service reported task status 'queued', which dubkit does not know; treating it "
        "as not yet final"
    ]


@pytest.fixture
def clock(monkeypatch):
    """The wait's and the transport's clock, moved only by the wait's own sleeps (the plan
    driver sleeps them, the transport's core reads the deadline)."""
    stepped = SteppedClock()
    monkeypatch.setattr(dubkit.results.task, "time", stepped)
    monkeypatch.setattr(dubkit._transport.core, "time", stepped)
    monkeypatch.setattr(dubkit._transport.plans, "time", stepped)
    return stepped


def test_a_wait_that_runs_out_says_every_poll_was_answered(clock):
    """Polls at 0 s and 10 s; the next would come at 25 s with 0.0005 s left, too little to be
    answered, so the wait sleeps out its deadline and says the task was still running (it
    used to send that poll and call it unanswered when the deadline cut it off)."""
    running = fixed({"taskId": "t1", "taskType": "tts", "status": "running"})
    with answer_double() as double, dubkit.Client("sk_double_0123456789", double.url) as client:
        double.script({"tasks.detail": [running]})
        task = client.tasks.get("t1", fetch=False)
        with pytest.raises(dubkit.TaskTimeoutError) as caught:
            task.wait(timeout=25.0005, poll_interval=10, max_interval=60)
    said = str(caught.value)
    assert "was still 'running' after 25.0005s (every poll was answered)" in said, said
    assert len(double.requests) == 2 and caught.value.last_status == "running"
    assert clock.now - clock.start == pytest.approx(25.0005)  # it slept out the deadline


def test_a_pushed_result_is_read_again_for_its_extras_and_kept_if_that_fails(client, sandbox):
    """A webhook brings documented fields only; from a sandbox the task's result is read again
    from tasks/detail, whose answer carries the extras (here: the pseudo-translation's
    engine). If that read fails (the task was deleted meanwhile) the pushed copy is the result."""

    def pushed(task):
        answer = requests.get(
            f"{sandbox.url}/openapi/v1/tasks/detail",
            params={"taskId": task.task_id},
            headers={"Authorization": f"Bearer {sandbox.api_key}"},
            timeout=PATIENCE,
        ).json()["data"]
        return answer["taskType"], answer["result"]

    kept, gone = (
        client.translate.create_async(["Hello."], source="en-US", target="fr-FR") for _ in "ab"
    )
    for task in (kept, gone):
        client.tasks.get(task.task_id).wait(PATIENCE)  # ended in the sandbox
        task_type, result = pushed(task)
        assert "engine" not in result  # documented fields only on the wire
        task.apply(task_type, "finished", result, pushed=True)
    client.tasks.delete(gone.task_id)
    assert kept.result.pseudo and kept.result.texts[0]
    assert gone.result.texts == kept.result.texts and not gone.result.pseudo
