"""The Receiver's event store: shared by threads and processes without failing, leases a slow
handler outlasts without running twice, and work of a killed receiver taken over by the next."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid

import pytest
from _receiving import SECRET, envelope, post, store  # noqa: F401  (store: a fixture)
from _waiting import PATIENCE, wait_for

from dubkit.errors import ValidationError
from dubkit.webhooks import EventStore, Receiver, sign

POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="kills with SIGKILL")


_CRASHING_RECEIVER = """
import sys, time
from pathlib import Path
from dubkit.webhooks import Receiver
receiver = Receiver(sys.argv[1], store=sys.argv[2])
def stuck(event):
    Path(sys.argv[3]).write_text(event.task_id)   # the handler has started...
    time.sleep(3600)                              # ...and is mid-run when the process is killed
receiver.on("openapi-translate", stuck)
print(receiver.serve(), flush=True)
sys.stdin.read()
"""


_CLAIMING = """
import sys
from dubkit.webhooks import EventStore
EventStore(sys.argv[1]).claim("pk-owned", "openapi-translate", "t-owned", b"{}", lease=300)
print("claimed", flush=True)
sys.stdin.read()
"""


_FIRST_RELEASE_SCHEMA = """
CREATE TABLE webhook_events (
    pipeline_key TEXT PRIMARY KEY, event TEXT, task_id TEXT, body BLOB NOT NULL,
    received_at REAL NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL, lease_until REAL NOT NULL, last_error TEXT, finished_at REAL);
CREATE INDEX webhook_events_pending ON webhook_events (state, lease_until);
"""


LEASE_SECRET = "whsec_test_leases_0123456789"


def delivery(task_id: str) -> tuple[dict[str, str], bytes]:
    body = json.dumps(
        {
            "code": 200,
            "event": "openapi-translate",
            "pipelineKey": uuid.uuid4().hex,
            "data": {"taskId": task_id, "items": []},
        }
    ).encode()
    stamp = str(int(time.time() * 1000))
    return {"X-Timestamp": stamp, "X-Signature": sign(LEASE_SECRET, stamp, body)}, body


@POSIX_ONLY
def test_an_event_of_a_killed_receiver_runs_in_the_next_one_long_before_its_lease_ends(
    store, tmp_path
):
    started = tmp_path / "handler-started"
    crashing = subprocess.Popen(
        [sys.executable, "-c", _CRASHING_RECEIVER, SECRET, str(store), str(started)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = crashing.stdout.readline().strip()
        assert post(url, envelope("t-crash")).json() == {"received": True}
        assert wait_for(started.exists), "the handler never started in the first process"
    finally:
        os.kill(crashing.pid, signal.SIGKILL)
        crashing.wait(PATIENCE)
        crashing.stdout.close()
        crashing.stdin.close()
    assert crashing.returncode == -signal.SIGKILL
    left = EventStore(store).get("pk-t-crash")
    assert left["state"] == "pending" and left["lease_until"] > time.time()  # lease in force

    ran_at: list[float] = []
    ran = threading.Event()
    second = Receiver(SECRET, store=store)  # the default 300 s lease
    second.on("openapi-translate", lambda event: (ran_at.append(time.time()), ran.set()))
    second.start()
    try:
        assert ran.wait(PATIENCE), "the killed receiver's event did not run in the next one"
        assert second.wait_idle(10)
    finally:
        second.stop()
    assert ran_at[0] < left["lease_until"]  # it ran while the dead process's lease still held
    assert left["owner_pid"] == crashing.pid
    done = second.store.get("pk-t-crash")
    assert done["state"] == "done" and done["owner_pid"] == os.getpid()
    assert [d.outcome for d in second.deliveries] == ["recovered"]


@POSIX_ONLY
def test_a_live_owners_lease_is_respected_and_a_dead_owners_row_is_taken_at_once(store):
    owner = subprocess.Popen(
        [sys.executable, "-c", _CLAIMING, str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout.readline().strip() == "claimed"
        here = EventStore(store)
        assert here.take_orphans(lease=300) == []  # its owner runs: nothing to take
        os.kill(owner.pid, signal.SIGKILL)
        if sys.platform.startswith("linux"):
            # dead but not reaped: a zombie still answers kill(pid, 0), yet runs nothing
            os.waitid(os.P_PID, owner.pid, os.WEXITED | os.WNOWAIT)
        else:
            owner.wait(PATIENCE)
        [taken] = here.take_orphans(lease=300)
        assert taken["pipeline_key"] == "pk-owned" and taken["owner_pid"] == owner.pid
        assert here.get("pk-owned")["owner_pid"] == os.getpid()
        assert here.take_orphans(lease=300) == []  # taken once, now held by this process
    finally:
        if owner.poll() is None:
            owner.kill()
        owner.wait(PATIENCE)
        owner.stdout.close()
        owner.stdin.close()


def test_a_store_file_from_before_owners_keeps_working(store):
    now = time.time()
    with sqlite3.connect(store) as old:
        old.executescript(_FIRST_RELEASE_SCHEMA)
        old.execute(
            "INSERT INTO webhook_events VALUES ('pk-done', 'openapi-tts', 't1', x'7b7d',"
            " ?, 'done', 1, ?, ?, NULL, ?)",
            (now, now, now + 300, now),
        )
        old.execute(
            "INSERT INTO webhook_events VALUES ('pk-lapsed', 'openapi-tts', 't2', x'7b7d',"
            " ?, 'pending', 0, ?, ?, NULL, NULL)",
            (now, now, now - 1),
        )
        old.execute(
            "INSERT INTO webhook_events VALUES ('pk-leased', 'openapi-tts', 't3', x'7b7d',"
            " ?, 'pending', 0, ?, ?, NULL, NULL)",
            (now, now, now + 300),
        )
    old.close()
    upgraded = EventStore(store)
    EventStore(store)  # a second opener finds the columns already there
    columns = {r[1] for r in sqlite3.connect(store).execute("PRAGMA table_info(webhook_events)")}
    assert {"owner_pid", "owner_host"} <= columns
    assert upgraded.claim("pk-done", "openapi-tts", "t1", b"{}", lease=300) is False
    # rows without an owner are judged by their lease alone, as before
    assert [r["pipeline_key"] for r in upgraded.take_orphans(lease=300)] == ["pk-lapsed"]
    assert upgraded.claim("pk-new", "openapi-tts", "t4", b"{}", lease=300) is True
    assert upgraded.get("pk-new")["owner_pid"] == os.getpid()


def test_a_handler_outlasting_its_lease_is_not_run_twice(tmp_path):
    runs: list[str] = []
    lock = threading.Lock()
    receiver = Receiver(LEASE_SECRET, store=tmp_path / "events.sqlite3", workers=2, lease=1.0)

    @receiver.on("openapi-translate")
    def slow(event):
        with lock:
            runs.append(event.task_id)
        time.sleep(3)  # three leases long: the sweeper runs several times meanwhile

    try:
        headers, body = delivery("a")  # one delivery, and a second worker left idle
        assert receiver.handle(headers, body).status == 200
        assert receiver.wait_idle(timeout=PATIENCE)
    finally:
        receiver.stop()
    assert runs == ["a"]


def test_reads_and_writes_from_many_threads_beside_another_writer_never_fail(tmp_path):
    # ``here`` is one process's store, used by worker threads that read and write at once;
    # ``there`` is a second connection to the same file, as another process has. A read whose
    # rows were fetched after the store's lock was released held a read transaction open, and
    # a write through the same connection then failed at once with "database is locked".
    here, there = EventStore(tmp_path / "events.db"), EventStore(tmp_path / "events.db")
    here.claim("seed", "openapi-tts", "t-seed", b"{}", lease=60)
    errors: list[BaseException] = []

    def keep(work, count: int) -> None:
        for i in range(count):
            try:
                work(i)
            except Exception as exc:  # noqa: BLE001  (collected and asserted below)
                errors.append(exc)
                return

    def claims(store: EventStore, name: str):
        return lambda i: store.claim(f"{name}-{i}", None, None, b"{}", lease=60)

    workers = [
        *(
            threading.Thread(target=keep, args=(lambda i: here.get("seed"), 10000))
            for _ in range(3)
        ),
        threading.Thread(target=keep, args=(lambda i: here.counts(), 2000)),
        threading.Thread(target=keep, args=(claims(here, "here"), 4000)),
        threading.Thread(target=keep, args=(claims(there, "there"), 4000)),
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    assert here.counts() == {"pending": 8001}
    assert here.get("seed")["task_id"] == "t-seed"
    here.close()
    there.close()


def test_the_store_file_is_owner_only(store):
    """Its rows hold result file URLs that open without a key."""
    import stat

    Receiver(SECRET, store=store).stop()
    assert stat.S_IMODE(store.stat().st_mode) == 0o600


@pytest.mark.parametrize("given", ["mysql://user@db/events", "redis://cache:6379/0"])
def test_a_store_url_dubkit_cannot_use_is_refused_by_name(given, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValidationError, match=r"^store: .*:// URLs are not a store dubkit can use"):
        Receiver(SECRET, store=given)
    assert list(tmp_path.iterdir()) == []  # no file made under a name like 'postgresql:'


def test_a_sqlite_url_names_its_file(tmp_path):
    Receiver(SECRET, store=f"sqlite:///{tmp_path}/events.db").stop()
    assert (tmp_path / "events.db").is_file()
