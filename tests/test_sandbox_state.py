"""The sandbox's accounts and their state: credits charged before work and given back on a crash,
keys isolated from each other, and what survives or is cleaned up by a restart."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _storage_fixtures import api, storage_defaults  # noqa: F401  (fixtures)
from _waiting import PATIENCE

import dubkit
from dubkit import samples
from dubkit import start_sandbox as start
from dubkit.media import av
from dubkit.schema.prices import dub_quote, speech_credits


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _standalone(data_dir: Path, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dubkit.cli",
            "sandbox",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    for line in proc.stdout:  # type: ignore[union-attr]
        if "listening on" in line:
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # type: ignore
            return proc
    raise RuntimeError(f"the sandbox did not start (exit {proc.wait()})")


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
    assert sandbox.credits(new_key) == before - 1 and len(c.tasks.list()) == 1


def test_402_when_credits_run_out_and_nothing_is_created(sandbox, new_key, client_for):
    c = client_for(new_key)
    sandbox.set_credits(2, api_key=new_key)
    c.translate.create(["0123456789"], source="en-US", target="fr-FR")  # 1 credit
    with pytest.raises(dubkit.InsufficientCreditsError) as info:
        c.translate.create(["x" * 150], source="en-US", target="fr-FR")  # 2 credits
    assert "Insufficient quota: translating 1 segment(s) needs 2 credits, this key has 1" in str(
        info.value
    )
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
            c.translate.create_async(["persist"], source="en-US", target="fr-FR")
            .wait(PATIENCE)
            .task_id
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


def test_tasks_cut_short_by_a_restart_are_refunded(tmp_path):
    """Kill a standalone sandbox (by PID) with async work in flight; after the restart every
    unfinished task has failed and what it was charged is back on the key."""
    data_dir = tmp_path / "box"
    port = _free_port()
    proc = _standalone(data_dir, port)
    try:
        box = dubkit.SandboxHandle(
            f"http://127.0.0.1:{port}", admin_token=(data_dir / "admin-token").read_text()
        )
        client = dubkit.Client(box.api_key, box.url)
        start_credits = box.credits()
        long_line = "This is a long line spoken many times over. " * 200
        tasks = [
            client.tts.create_async([long_line + str(i)], voice="sv_s1_en_us_clear_f")
            for i in range(6)
        ]
        cost = [speech_credits(long_line + str(i)) for i in range(6)]
        assert start_credits - box.credits() == sum(cost)
    finally:
        proc.kill()
        proc.wait(PATIENCE)
    restarted = start(data_dir)
    try:
        client = dubkit.Client(restarted.api_key, restarted.url)
        ended = [client.tasks.get(t.task_id) for t in tasks]
        cut_short = [t for t in ended if t.status == "failed"]
        assert cut_short, "every task finished before the kill; the test proved nothing"
        spent = sum(cost[i] for i, t in enumerate(ended) if t.status == "finished")
        assert restarted.credits() == start_credits - spent
        assert all("restarted" in (t.error_message or "") for t in cut_short)
    finally:
        restarted.stop()


def test_a_restart_removes_the_scratch_files_of_a_dub_the_process_died_in(tmp_path):
    """A dub keeps its decoded audio in the data dir's scratch folder; when the process dies
    mid-dub, the next start removes them along with failing the task."""
    data_dir = tmp_path / "box"
    script = [f"Line {i} of a dub that will not finish." for i in range(24)]
    clip = samples.narrated_clip(tmp_path / "long.mp4", script, width=160, height=90)
    proc = _standalone(data_dir, port := _free_port())
    try:
        box = dubkit.SandboxHandle(
            f"http://127.0.0.1:{port}", admin_token=(data_dir / "admin-token").read_text()
        )
        client = dubkit.Client(box.api_key, box.url)
        task = client.dubbing.create(clip, target="fr-FR", source="en-US")
        deadline = time.monotonic() + PATIENCE
        while not list((data_dir / "scratch").glob(f"{task.task_id}-*/original.f32")):
            assert time.monotonic() < deadline, "the dub never decoded its audio to scratch"
            assert client.tasks.get(task.task_id).status == "running", "it ended too soon"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait(PATIENCE)
    restarted = start(data_dir)
    try:
        ended = dubkit.Client(restarted.api_key, restarted.url).tasks.get(task.task_id)
        assert ended.status == "failed" and "restarted" in (ended.error_message or "")
        assert list((data_dir / "scratch").iterdir()) == []
    finally:
        restarted.stop()


def _quiet_script(script: str, data_dir: Path, *args: str) -> str:
    """Run a user's script on the embedded sandbox in ``data_dir``; its stdout, once it has
    ended well and printed nothing on stderr."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env={**os.environ, "DUBKIT_SANDBOX_DIR": str(data_dir), "DUBKIT_API_KEY": ""},
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    return done.stdout


EXITING_SCRIPT = r"""
import sys
import dubkit

client = dubkit.connect(quiet=True)  # the embedded sandbox, on $DUBKIT_SANDBOX_DIR
material = client.materials.upload(sys.argv[1], progress=False)
tasks = [
    client.dubbing.create(material, target=locale, source="en-US")
    for locale in ("fr-FR", "de-DE", "es-ES", "it-IT")
]
print(" ".join(task.task_id for task in tasks), flush=True)
"""  # ... and the interpreter ends: two dubs running (a key's two workers), two waiting


def test_a_script_that_exits_with_dubs_running_ends_quietly_and_refunds_them(tmp_path):
    """A user's script starts dubs on the embedded sandbox and ends: its stderr is clean (no
    traceback, no "task failed"), and every dub it did not finish is recorded as interrupted
    with its credits back, as after a crash. The last two cannot start before two others end,
    so at least they are cut short."""
    data_dir = tmp_path / "box"
    script = [f"Line {i} of a course that is dubbed as the script ends." for i in range(8)]
    clip = samples.narrated_clip(tmp_path / "lesson.mp4", script, width=160, height=90)
    box = start(data_dir)
    start_credits = box.credits()
    box.stop()
    task_ids = _quiet_script(EXITING_SCRIPT, data_dir, str(clip)).split()
    assert len(task_ids) == 4
    restarted = start(data_dir)
    try:
        client = dubkit.Client(restarted.api_key, restarted.url)
        ended = [client.tasks.get(task_id) for task_id in task_ids]
        assert {t.status for t in ended} <= {"finished", "failed"}
        cut_short = [t for t in ended if t.status == "failed"]
        assert len(cut_short) >= 2, [(t.status, t.error_message) for t in ended]
        assert all((t.error_message or "").startswith("interrupted: ") for t in cut_short)
        per_dub = dub_quote(av.probe(clip).duration).credits
        finished = len(ended) - len(cut_short)
        assert restarted.credits() == start_credits - finished * per_dub
        assert list((data_dir / "scratch").iterdir()) == []
    finally:
        restarted.stop()


WEBHOOKS_AT_EXIT_SCRIPT = r"""
import socket
import dubkit

silent = socket.socket()  # a receiver that takes connections and never answers
silent.bind(("127.0.0.1", 0))
silent.listen(64)
client = dubkit.connect(quiet=True)
client.sandbox.set_webhook(f"http://127.0.0.1:{silent.getsockname()[1]}/hook")
tasks = [
    client.translate.create_async([f"Line {i}"], source="en-US", target="fr-FR")
    for i in range(12)
]
for task in tasks:
    task.wait(timeout=60)
print(" ".join(task.task_id for task in tasks), flush=True)
"""  # ... and the interpreter ends while their webhooks are being sent


def test_a_script_that_exits_while_webhooks_are_sent_ends_quietly_and_sends_them_next_time(
    tmp_path,
):
    """Webhooks in flight as the script ends: no traceback (the scheduler used to dispatch
    into pools that were shutting down), and none lost: the next start sends each, once."""
    data_dir = tmp_path / "box"
    task_ids = set(_quiet_script(WEBHOOKS_AT_EXIT_SCRIPT, data_dir).split())
    assert len(task_ids) == 12

    received: list[str] = []
    listener = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=_answer_posts, args=(listener, received), daemon=True).start()
    restarted = start(data_dir)
    try:
        restarted.set_delivery(base_delay=0.05, max_delay=0.05, jitter=0)
        restarted.set_webhook(f"http://127.0.0.1:{listener.getsockname()[1]}/hook")
        deadline = time.monotonic() + PATIENCE
        while {
            r["taskId"] for r in restarted.deliveries(state="delivered")["deliveries"]
        } != task_ids:
            assert time.monotonic() < deadline, restarted.deliveries()
            time.sleep(0.05)
        assert sorted(received) == sorted(task_ids)  # each event sent, once
    finally:
        restarted.stop()
        listener.close()


def _answer_posts(listener: socket.socket, received: list[str]) -> None:
    """A webhook receiver: each POST's task id noted, answered 200."""
    while True:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        with connection, connection.makefile("rb") as stream:
            length = 0
            while (line := stream.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            received.append(json.loads(stream.read(length))["data"]["taskId"])
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
