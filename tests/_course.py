"""Short narrated clips for the batch tests: a course whose dubs take about a second each."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import dubkit
from dubkit import samples


def course_of(
    folder: Path, count: int, *, stem: str = "clip", words: str = "Welcome back."
) -> list[Path]:
    """``count`` clips (a sentence each, 160x90, 10 fps) named ``<stem>00.mp4``, ...: each one
    distinct bytes, so each is a material of its own."""
    return [
        samples.narrated_clip(
            folder / f"{stem}{i:02d}.mp4", [f"Part {i}. {words}"], width=160, height=90, fps=10
        )
        for i in range(count)
    ]


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Three lessons of the batch tests (import it as a fixture)."""
    return course_of(tmp_path_factory.mktemp("course"), 3, stem="lesson", words="Hello there.")


@pytest.fixture
def api(sandbox: Any, new_key: str) -> Iterator[dubkit.Client]:
    """A client on a key of its own: its materials and tasks are the test's alone."""
    with dubkit.Client(new_key, sandbox.url, sandbox=sandbox) as made:
        yield made


def dub_tasks(api: dubkit.Client) -> list[str]:
    """The ids of the key's dub tasks."""
    return [t.task_id for t in api.tasks.list() if t.task_type in ("vt", "at")]


def shared_course(tmp_path_factory: pytest.TempPathFactory, count: int = 12) -> Path:
    """A folder of ``count`` clips made once for the whole test session (the first worker to
    ask makes them under a lock; the clips are the same bytes for the same words), which a test
    only reads: the modules that dub a course share it."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # pytest-xdist: every worker's temp dir is in this one
    folder = shared / f"course-of-{count}"
    with open(shared / f"course-of-{count}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (folder / "made").exists():
            shutil.rmtree(folder, ignore_errors=True)  # a half-made one
            folder.mkdir()
            course_of(folder, count)
            (folder / "made").write_text("")
    return folder


LOCALES = "fr-FR,de-DE,es-ES"


def dubbing(env: dict[str, str], course: Path, out: Path, *flags: str) -> subprocess.Popen[str]:
    """``dubkit dub COURSE --to fr-FR,de-DE,es-ES --out OUT [flags]`` started as a terminal
    would (no stdin), its stderr kept."""
    return subprocess.Popen(
        [sys.executable, "-m", "dubkit", "dub", str(course), "--to", LOCALES, "--out", str(out)]
        + list(flags),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
