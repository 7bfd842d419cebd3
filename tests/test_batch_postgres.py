"""One course shared by two processes on one PostgreSQL ledger (a real server the session
starts): each row done by one of them, none twice; when one is killed mid-row, the other
takes its rows over."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from _course import dubbing, shared_course
from _postgres import pg_url, postgres  # noqa: F401  (fixtures)

import dubkit
from dubkit.batch import read_rows

pytestmark = pytest.mark.heavy


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """Twelve short clips (a sentence each, 160x90): a dub of one takes about a second."""
    return shared_course(tmp_path_factory)


@pytest.fixture(scope="module")
def short_course(tmp_path_factory) -> Path:
    """Four of the same clips: twelve rows, enough for one process to be killed mid-row."""
    return shared_course(tmp_path_factory, 4)


def start(
    env: dict[str, str], course: Path, out: Path, ledger: str, *flags: str
) -> subprocess.Popen[str]:
    return dubbing(env, course, out, "--ledger", ledger, "--name", "course", *flags)


@pytest.fixture
def env(sandbox, new_key) -> dict[str, str]:
    return {**os.environ, "DUBKIT_API_KEY": new_key, "DUBKIT_BASE_URL": sandbox.url}


def dub_tasks(sandbox, key: str) -> list[str]:
    with dubkit.Client(key, sandbox.url) as api:
        return [t.task_id for t in api.tasks.list() if t.task_type in ("vt", "at")]


def test_two_processes_share_the_rows_and_none_is_done_twice(
    sandbox, new_key, env, course, tmp_path, pg_url
):
    out = tmp_path / "dubs"
    # The cap on tasks in flight is counted across the ledger, and a process fills a slot its
    # own row freed at once, while another notices only when it next looks: a second process
    # that comes up after the first holds every slot may never get one. So the first runs one
    # task at a time, and the second starts once that first task runs: the other slots are
    # the second's, and 35 rows one after another leave it time to come up on a busy machine.
    first = start(env, course, out, pg_url, "--max-in-flight", "1")
    while not any(
        r.status == "running" for r in _rows_if_any(out, pg_url)
    ):  # the event that matters, not a time
        assert first.poll() is None, first.communicate()[1]
        time.sleep(0.05)
    runs = [first, start(env, course, out, pg_url)]
    said = [run.communicate()[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], said
    rows = read_rows(out, ledger=pg_url, name="course")
    assert len(rows) == 36 and {r.status for r in rows} == {"done"}
    assert sorted(dub_tasks(sandbox, new_key)) == sorted(r.task_id for r in rows)
    workers = {r.worker.split(":")[-1] for r in rows}
    assert workers == {str(run.pid) for run in runs}  # both did rows
    with dubkit.Client(new_key, sandbox.url) as api:
        assert len(api.materials.list()) == 12  # each file uploaded by one of them


def _rows_if_any(out, pg_url) -> list:
    try:
        return read_rows(out, ledger=pg_url, name="course")
    except FileNotFoundError:  # the ledger's folder is not made yet
        return []


def test_when_one_process_is_killed_mid_row_the_other_takes_it_over(
    sandbox, new_key, env, short_course, tmp_path, pg_url
):
    course = short_course
    out = tmp_path / "dubs"
    first = start(env, course, out, pg_url)
    me = f":{first.pid}"
    mid_row: list[str] = []
    while not mid_row:  # until the first process holds a row whose task runs
        assert first.poll() is None, first.communicate()[1]
        try:
            mid_row = [
                r.key
                for r in read_rows(out, ledger=pg_url, name="course")
                if r.status == "running" and (r.worker or "").endswith(me)
            ]
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    second = start(env, course, out, pg_url)
    first.send_signal(signal.SIGKILL)
    first.wait()
    _, said = second.communicate()
    assert second.returncode == 0, said
    rows = {r.key: r for r in read_rows(out, ledger=pg_url, name="course")}
    assert len(rows) == 12 and {r.status for r in rows.values()} == {"done"}
    assert all(rows[key].worker.endswith(f":{second.pid}") for key in mid_row)  # taken over
    assert sorted(dub_tasks(sandbox, new_key)) == sorted(r.task_id for r in rows.values())
