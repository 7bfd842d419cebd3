"""Webhook delivery under pressure: one slow receiver does not stall other keys, an attempt is
bounded as a whole, and each ended task has one outbox row and one delivery, even when polls,
the ticker and recovery all release tasks at once, and even in a database that already holds
duplicate rows from before.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import NamedTuple

import pytest
from _http import local_http, webhook_catcher

import dubkit
from dubkit import start_sandbox as start
from dubkit.sandbox.delivery import DEFAULT_SCHEDULE


def wait_for(check, limit: float = 30.0):
    """Poll ``check`` until it is truthy or ``limit`` seconds pass (a test-level limit)."""
    deadline = time.monotonic() + limit
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return value


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
        release.wait(120)
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
