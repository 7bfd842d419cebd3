"""The Receiver over real HTTP: every bad input refused (never a crash, never a 5xx), dedupe that
holds under concurrency, restarts and several processes, bounded handler retries, dead
letters, failed tasks handled as typed failures."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from _receiving import SECRET, envelope, post, store  # noqa: F401  (store: a fixture)
from _storage_fixtures import api, storage_defaults  # noqa: F401  (fixtures)
from _waiting import PATIENCE, wait_for

import dubkit
from dubkit.webhooks import Receiver
from dubkit.widgets.events import EventLog

CALLBACK_SECRET = "whsec_contract_" + "ab" * 16


@pytest.fixture
def receiver(store: Path):
    made = Receiver(SECRET, store=store, retry_delay=0.01)
    made.serve()
    yield made
    made.stop()


_BODY = envelope("t-bad")


BAD = {
    "no X-Timestamp": (_BODY, {"X-Timestamp": None}, 401, "missing-header"),
    "no X-Signature": (_BODY, {"X-Signature": None}, 401, "missing-header"),
    "non-hex signature": (_BODY, {"X-Signature": "g" * 64}, 401, "not 64 lowercase hex"),
    "wrong secret": (_BODY, {"secret": "whsec_wrong"}, 401, "bad-signature"),
    "one byte changed": (_BODY, {"tamper": True}, 401, "bad-signature"),
    "301 s late": (_BODY, {"offset": -301}, 401, "stale"),
    "301 s early": (_BODY, {"offset": 301}, 401, "stale"),
    "garbled timestamp": (_BODY, {"X-Timestamp": "yesterday"}, 401, "bad-timestamp"),
    "non-JSON body": (b"<xml>surprise</xml>", {}, 400, "is not JSON"),
    "JSON that is not an envelope": (b"[1,2,3]", {}, 400, "must be a JSON object"),
    "envelope without data": (b'{"code":200,"event":"openapi-tts"}', {}, 400, "data: is required"),
    "50 MB body": (b"{" + b" " * (50 << 20) + b"}", {}, 413, "over the"),
}


_OTHER_PROCESS = """
import sys
from pathlib import Path
from dubkit.webhooks import Receiver
receiver = Receiver(sys.argv[1], store=sys.argv[2])
out = Path(sys.argv[3])
receiver.on("openapi-translate", lambda e: out.open("a").write(e.task_id + "\\n"))
print(receiver.serve(), flush=True)
sys.stdin.read()
receiver.stop()
"""


@pytest.mark.parametrize(
    "event, data",
    [
        ("openapi-translate", None),
        ("openapi-tts", {}),
        ("openapi-clone-voice", None),
        ("openapi-media-translation", {"taskId": "t-media", "taskType": "vt", "status": "failed"}),
        ("openapi-media-translation", None),
    ],
)
def test_a_failed_callback_is_accepted_and_handled_as_a_typed_failure(tmp_path, event, data):
    receiver = Receiver(CALLBACK_SECRET, store=tmp_path / "events.sqlite3", retry_delay=0.01)
    seen: list = []
    handled = threading.Event()
    receiver.on(event, lambda e: (seen.append(e), handled.set()))
    url = receiver.serve()
    try:
        answer = post(
            url,
            json.dumps(
                {
                    "code": 500,
                    "event": event,
                    "pipelineKey": uuid.uuid4().hex,
                    "message": "engine failed",
                    "data": data,
                }
            ).encode(),
            secret=CALLBACK_SECRET,
        )
        assert answer.status_code == 200, answer.text
        assert handled.wait(PATIENCE)
    finally:
        receiver.stop()
    (got,) = seen
    assert type(got) is dubkit.webhooks.EVENT_TYPES[event] and got.problem is None
    assert got.status == "failed" and got.result is None


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_refused_with_the_reason_logged_and_nothing_runs(receiver, case, caplog):
    ran = []
    receiver.default(ran.append)
    receiver.on("openapi-translate", ran.append)
    body, spoil, status, reason = BAD[case]
    options = {k: spoil[k] for k in ("secret", "offset", "tamper") if k in spoil}
    headers = {k: v for k, v in spoil.items() if k.startswith("X-")}
    with caplog.at_level(logging.WARNING, logger="dubkit.webhooks"):
        answer = post(receiver.url, body, headers=headers, **options)
    assert answer.status_code == status
    assert reason in answer.json()["error"]
    last = receiver.deliveries[-1]
    assert (last.outcome, last.http_status) == ("rejected", status) and reason in last.reason
    assert any(reason in r.getMessage() for r in caplog.records)
    assert not any(SECRET in r.getMessage() for r in caplog.records)
    # the receiver is still fine and nothing ran for the bad delivery
    assert post(receiver.url, envelope("t-after")).status_code == 200
    assert receiver.wait_idle(10)
    assert [e.task_id for e in ran] == ["t-after"]


def test_an_unknown_event_goes_to_the_default_handler_with_the_reason_logged(receiver, caplog):
    known, fallback = [], []
    receiver.on("openapi-translate", known.append)
    receiver.default(fallback.append)
    with caplog.at_level(logging.INFO, logger="dubkit.webhooks"):
        answer = post(receiver.url, envelope("t-new", event="openapi-lipsync"))
    assert answer.status_code == 200 and answer.json() == {"received": True}
    assert receiver.wait_idle(10)
    assert known == [] and [e.problem for e in fallback] == ["unknown event 'openapi-lipsync'"]
    assert receiver.deliveries[-1].handling == "handled"
    assert any("unknown event 'openapi-lipsync'" in r.getMessage() for r in caplog.records)


def test_an_event_without_any_handler_is_acknowledged_and_marked_so(receiver):
    assert post(receiver.url, envelope("t-nobody", event="openapi-tts")).status_code == 200
    assert receiver.wait_idle(10)
    assert receiver.deliveries[-1].handling == "no handler"


def test_only_post_is_accepted(receiver):
    answer = requests.get(receiver.url, timeout=10)
    assert answer.status_code == 405 and answer.headers["Allow"] == "POST"


def test_ten_concurrent_copies_of_each_delivery_run_the_handler_once(receiver):
    ran: list[str] = []
    receiver.on("openapi-translate", lambda event: ran.append(event.task_id))
    bodies = [envelope(f"t-{i}") for i in range(8)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(lambda body: post(receiver.url, body), bodies * 10))
    assert {a.status_code for a in answers} == {200}
    assert sum(a.json().get("duplicate", False) for a in answers) == 8 * 9
    assert receiver.wait_idle(10)
    assert sorted(ran) == sorted(f"t-{i}" for i in range(8))


def test_a_repeat_after_a_restart_is_still_a_duplicate(store):
    ran: list[str] = []
    first = Receiver(SECRET, store=store)
    first.on("openapi-translate", lambda event: ran.append(event.task_id))
    url = first.serve()
    assert post(url, envelope("t-once")).json() == {"received": True}
    assert first.wait_idle(10)
    first.stop()
    second = Receiver(SECRET, store=store)
    second.on("openapi-translate", lambda event: ran.append(event.task_id))
    try:
        answer = post(second.serve(), envelope("t-once"))  # the service retrying later
        assert answer.status_code == 200 and answer.json()["duplicate"] is True
        assert second.wait_idle(10)
    finally:
        second.stop()
    assert ran == ["t-once"]


def test_a_failing_handler_is_retried_then_dead_lettered_then_revived(receiver):
    calls: list[int] = []
    healthy = threading.Event()

    def flaky(event):
        calls.append(1)
        if not healthy.is_set():
            raise RuntimeError("database is down")

    receiver.on("openapi-translate", flaky)
    assert post(receiver.url, envelope("t-flaky")).status_code == 200
    assert receiver.wait_idle(20)
    assert len(calls) == receiver.max_attempts
    [dead] = receiver.dead_letters()
    assert dead["task_id"] == "t-flaky" and dead["last_error"] == "RuntimeError: database is down"
    assert receiver.deliveries[-1].handling.startswith("dead: RuntimeError")
    # a retry of the delivery itself does not run the handler again: it is a known key
    assert post(receiver.url, envelope("t-flaky")).json()["duplicate"] is True
    healthy.set()
    assert receiver.revive() == 1
    deadline = time.monotonic() + PATIENCE  # the sweeper adopts revived rows within a few seconds
    while receiver.store.get("pk-t-flaky")["state"] != "done" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert receiver.store.get("pk-t-flaky")["state"] == "done"
    assert receiver.dead_letters() == [] and len(calls) == receiver.max_attempts + 1


def test_work_still_queued_at_stop_runs_after_a_restart_exactly_once(store):
    ran: list[str] = []
    gate = threading.Event()

    def slow(event):
        gate.wait(PATIENCE)
        ran.append(event.task_id)

    first = Receiver(SECRET, store=store, workers=1)
    first.on("openapi-translate", slow)
    url = first.serve()
    for i in range(3):
        assert post(url, envelope(f"t-q{i}")).status_code == 200
    first.stop(timeout=0.2)  # one handler is mid-run, two are still queued
    gate.set()
    first.wait_idle(10)
    second = Receiver(SECRET, store=store)
    second.on("openapi-translate", lambda event: ran.append(event.task_id))
    second.start()
    try:
        deadline = time.monotonic() + PATIENCE
        while len(ran) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert second.wait_idle(10)
    finally:
        second.stop()
    assert sorted(ran) == ["t-q0", "t-q1", "t-q2"]
    assert [d.outcome for d in second.deliveries] == ["recovered", "recovered"]


def test_two_processes_sharing_one_store_run_each_event_once(receiver, store, tmp_path):
    side_effects = tmp_path / "other-process.txt"
    other = subprocess.Popen(
        [sys.executable, "-c", _OTHER_PROCESS, SECRET, str(store), str(side_effects)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        other_url = other.stdout.readline().strip()
        here: list[str] = []
        receiver.on("openapi-translate", lambda event: here.append(event.task_id))
        jobs = [
            (url, envelope(f"t-mp{i}"))
            for i in range(10)
            for url in (receiver.url, other_url)
            for _ in range(3)
        ]
        with ThreadPoolExecutor(max_workers=12) as pool:
            answers = list(pool.map(lambda job: post(*job), jobs))
        assert {a.status_code for a in answers} == {200}
        assert sum(not a.json().get("duplicate") for a in answers) == 10
        assert receiver.wait_idle(10)
    finally:
        other.communicate("", timeout=30)  # its stop() lets queued handlers finish
    # What the other could not finish by its stop (a retry after a locked write, on a busy
    # machine) stays pending in the store, and this receiver's sweeper takes it over.
    assert wait_for(lambda: receiver.store.counts() == {"done": 10}), receiver.store.counts()
    assert receiver.wait_idle(PATIENCE)
    there = side_effects.read_text().split() if side_effects.exists() else []
    assert sorted(here + there) == sorted(f"t-mp{i}" for i in range(10))


def test_rotation_accepts_the_old_secret_only_during_the_overlap(receiver):
    new = "whsec_rotated_" + "77" * 16
    receiver.rotate_secret(new, overlap=3600)
    assert post(receiver.url, envelope("t-old"), secret=SECRET).status_code == 200
    assert post(receiver.url, envelope("t-new"), secret=new).status_code == 200
    receiver.rotate_secret(new, overlap=0)  # the overlap is over
    assert post(receiver.url, envelope("t-late"), secret=SECRET).status_code == 401
    assert receiver.secrets == [new]
    assert SECRET not in repr(receiver) and new not in repr(receiver)


def test_the_event_log_shows_each_outcome_and_why(receiver):
    log = EventLog(receiver, start=False)
    post(receiver.url, envelope("t-log"))
    post(receiver.url, envelope("t-log"))
    post(receiver.url, envelope("t-log"), tamper=True)
    html = log.html()
    assert "1 verified · 1 duplicate · 1 rejected" in html
    assert "bad-signature: signature does not match" in html and "t-log" in html
    bundle = log._repr_mimebundle_()
    assert bundle["text/plain"] == "EventLog(3 deliveries)" and "t-log" in bundle["text/html"]
    assert SECRET not in html


def test_the_wsgi_app_passes_the_standard_library_wsgi_validator(store):
    from wsgiref.simple_server import WSGIRequestHandler, make_server
    from wsgiref.validate import validator

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    receiver = Receiver(SECRET, store=store)
    server = make_server("127.0.0.1", 0, validator(receiver.wsgi_app), handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}/hooks/dubkit"
    try:
        assert post(url, envelope("t-wsgi")).status_code == 200
        assert post(url, envelope("t-wsgi")).json()["duplicate"] is True
        assert post(url, envelope("t-wsgi"), secret="whsec_no").status_code == 401
        assert requests.get(url, timeout=10).status_code == 405
    finally:
        server.shutdown()
        server.server_close()
        receiver.stop()
