"""A course dubbed by ``dubkit dub`` killed with SIGKILL at random moments and run again each
time, against the session's sandbox over real HTTP: it ends with every material uploaded once,
every dub created once, the credits charged equal to the quote, every output whole and none
overwritten; the same while the sandbox drops answers after committing them."""

from __future__ import annotations

import os
import random
import signal
import subprocess
from pathlib import Path

import pytest
from _course import dubbing, shared_course

import dubkit
from dubkit.batch import read_rows
from dubkit.media import _ffmpeg, av

pytestmark = pytest.mark.heavy

PATH = "/task/media-translation/create-async"


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """Twelve short clips (a sentence each, 160x90): a dub of one takes about a second."""
    return shared_course(tmp_path_factory)


def kill_and_rerun(env: dict[str, str], course: Path, out: Path, kills: int, seed: int) -> int:
    """Run the command ``kills`` times, each killed (SIGKILL) at a random moment, then once to
    its end; the number of runs that were killed before they ended by themselves."""
    moments = random.Random(seed)
    killed = 0
    for _ in range(kills):
        run = dubbing(env, course, out)
        try:
            run.wait(moments.uniform(0.3, 3.0))  # a random moment, not a budget: it is killed
        except subprocess.TimeoutExpired:
            run.send_signal(signal.SIGKILL)
            killed += 1
        run.wait()
        run.stderr.close()  # type: ignore[union-attr]
    last = dubbing(env, course, out)
    _, said = last.communicate()  # waits for the end itself; pytest's timeout is the guard
    assert last.returncode == 0, said
    return killed


def check_course(api: dubkit.Client, out: Path, spent: float) -> None:
    rows = read_rows(out)
    assert len(rows) == 36 and {r.status for r in rows} == {"done"}
    assert len(api.materials.list()) == 12
    tasks = [t for t in api.tasks.list() if t.task_type in ("vt", "at")]
    assert len(tasks) == 36 and {t.status for t in tasks} == {"finished"}
    assert sorted(t.task_id for t in tasks) == sorted(r.task_id for r in rows)
    quote = sum(r.quote for r in rows)
    assert spent == quote == sum(r.charged for r in rows) == 36 * 60
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert not [p for p in written if p.endswith(".part")]
    for row in rows:
        assert set(row.outputs) == {"video", "srt", "vtt"}
        assert av.probe(out / row.outputs["video"]).has_video
        for kind in ("srt", "vtt"):  # ffmpeg reads each subtitle file whole, as subtitles
            path = str(out / row.outputs[kind])
            read = _ffmpeg.run(["-i", path, "-map", "0:s:0", "-f", "srt", "-"], check=False)
            assert read.returncode == 0 and "Subtitle: " in read.stderr, read.stderr[-300:]


@pytest.fixture
def env(sandbox, new_key) -> dict[str, str]:
    return {**os.environ, "DUBKIT_API_KEY": new_key, "DUBKIT_BASE_URL": sandbox.url}


def test_a_course_killed_twenty_times_pays_once_and_loses_nothing(
    sandbox, new_key, env, course, tmp_path
):
    out = tmp_path / "dubs"
    earlier = out / "fr-FR" / "clip03.mp4"  # a result made some other way, before the batch
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(b"an earlier dub of clip03, kept by hand")
    before = sandbox.credits(new_key)
    sandbox.set_faults(latency_ms=300, paths=[PATH])  # kills land between a create and its answer
    try:
        killed = kill_and_rerun(env, course, out, kills=20, seed=43)
    finally:
        sandbox.set_faults()
    assert killed >= 15  # most runs were cut short, not left to finish
    with dubkit.Client(new_key, sandbox.url) as api:
        check_course(api, out, before - sandbox.credits(new_key))
    assert earlier.read_bytes() == b"an earlier dub of clip03, kept by hand"
    row = next(r for r in read_rows(out) if r.key == "clip03|fr-FR")
    assert row.outputs["video"] == f"fr-FR/clip03.{row.task_id[-8:]}.mp4"


def test_a_course_killed_while_answers_are_lost_creates_nothing_twice(
    sandbox, new_key, env, course, tmp_path
):
    out = tmp_path / "dubs"
    before = sandbox.credits(new_key)
    # about one create and one upload call in seven answered into the void after the work
    sandbox.set_faults(drop_after_commit=0.15, latency_ms=100, paths=[PATH, "/assets/"], seed=5)
    try:
        kill_and_rerun(env, course, out, kills=8, seed=46)
    finally:
        sandbox.set_faults()
    with dubkit.Client(new_key, sandbox.url) as api:
        check_course(api, out, before - sandbox.credits(new_key))
