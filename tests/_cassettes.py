"""Lessons recorded once against a "service" and replayed offline: what the cassette tests
(tests/test_cassette.py and the browser suite) share.

The service is a standalone sandbox started with ``dubkit sandbox`` and used with its key, as
a teacher uses the service (``DUBKIT_API_KEY`` + ``DUBKIT_BASE_URL``). Notebooks run as
``jupyter nbconvert --execute`` would run them, unchanged; replay runs them in a network
namespace of their own (``unshare -rn``, only a loopback that is not the host's), so the
recording server, and any other address, is unreachable to them. The lessons are recorded
once for the whole test session (``recorded_once``), whichever module and worker asks first.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
import requests
from _waiting import PATIENCE, wait_for

REPO = Path(__file__).resolve().parent.parent
LESSONS = ("00_quickstart", "02_text_to_speech", "06_translate_and_dub")
# A player's file, as a saved notebook shows it: through the Jupyter server's proxy.
# A file a player got from the sandbox: the live channel's route in the saved widget state (the
# page itself names no file), through a server's proxy or, with no server, as it is.
PROXIED_FILE = re.compile(r"(/proxy/\d+|https?://127\.0\.0\.1:\d+)/files/([^'\"\s<>?#]+)")
DATA_URI = re.compile(r"data:(audio|video)/[A-Za-z0-9.+-]+;base64,[A-Za-z0-9+/=]+")
_JUPYTER = str(Path(sys.executable).parent / "jupyter")


@dataclass
class Run:
    notebook: nbformat.NotebookNode
    seconds: float


@dataclass
class Recording:
    folder: Path
    key: str
    webhook_secret: str
    admin_token: str
    runs: dict[str, Run] = field(default_factory=dict)
    media: dict[str, str] = field(default_factory=dict)  # /files path -> sha256 of its bytes

    def cassette(self, lesson: str) -> Path:
        return self.folder / f"{lesson}.dubkit"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUBKIT_")}
    env.update(DUBKIT_JUPYTER_PROXY="1", DUBKIT_CONTRACT="strict", **extra)
    return env


def execute(lesson: str, out: Path, env: dict[str, str], *, offline: bool = False) -> Run:
    """Run notebooks/<lesson>.ipynb unchanged into ``out``; offline: in its own network."""
    command = [
        _JUPYTER,
        "nbconvert",
        "--to",
        "notebook",
        "--execute",
        "--ExecutePreprocessor.timeout=600",
        "--output",
        str(out),
        str(REPO / "notebooks" / f"{lesson}.ipynb"),
    ]
    if offline:
        command = ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *command]
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=REPO / "notebooks", env=env, capture_output=True, text=True, check=False
    )
    seconds = time.monotonic() - started
    assert done.returncode == 0, f"{lesson} failed:\n{done.stderr[-3000:]}"
    return Run(nbformat.read(out, as_version=4), seconds)


def files_shown(notebook: nbformat.NotebookNode) -> set[str]:
    """The /files paths the notebook's players and links were routed to (its widget state)."""
    text = nbformat.writes(notebook)
    return {match.group(2) for match in PROXIED_FILE.finditer(text)}


def data_uris(notebook: nbformat.NotebookNode) -> list[str]:
    """Every embedded player's bytes, in order, as saved."""
    return [m.group(0) for m in DATA_URI.finditer(nbformat.writes(notebook))]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def record(folder: Path) -> Recording:
    """Record LESSONS against a standalone sandbox used with its key, then stop it."""
    from dubkit import SandboxHandle

    data = folder / "service-data"
    port = free_port()
    log = open(folder / "service.log", "wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "dubkit", "sandbox", "--port", str(port), "--data-dir", str(data)],
        env=_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool | None:
            try:
                return requests.get(f"{url}/_sandbox/openapi.json", timeout=2).ok or None
            except requests.RequestException:
                return None

        wait_for(up)
        token = (data / "admin-token").read_text().strip()
        handle = SandboxHandle(url, admin_token=token)
        # Tasks take time on the service; an instant one would make a task cell's first
        # picture ("running" or "finished") a race in the recording itself.
        handle.set_timing("seconds", 2)
        info = handle.info()
        recording = Recording(folder, info["apiKey"], info["webhookSecret"], token)
        for lesson in LESSONS:
            env = _env(
                DUBKIT_API_KEY=recording.key,
                DUBKIT_BASE_URL=url,
                DUBKIT_RECORD=str(recording.cassette(lesson)),
                DUBKIT_SANDBOX_DIR=str(folder / "teacher-sandbox"),
            )
            run = execute(lesson, folder / f"{lesson}.recorded.ipynb", env)
            recording.runs[lesson] = run
            for path in files_shown(run.notebook):
                got = requests.get(f"{url}/files/{path}", timeout=PATIENCE)
                got.raise_for_status()
                recording.media[path] = sha(got.content)

    finally:
        server.terminate()
        server.wait(PATIENCE)
        log.close()
    return recording


MANIFEST = "recording.json"  # written last: a folder with it holds a whole recording


def recorded_once(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    """LESSONS recorded once for the whole test session: the first worker to ask records them
    under a lock, the others wait for it and read the same folder (every test only reads a
    recording; one that changes a cassette copies it first)."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # pytest-xdist: every worker's temp dir is in this one
    folder = shared / "lessons-recorded"
    with open(shared / "lessons-recorded.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if (folder / MANIFEST).exists():
            return _load(folder)
        shutil.rmtree(folder, ignore_errors=True)  # a half-made one, if a recording failed
        folder.mkdir()
        recording = record(folder)
        facts = {
            "key": recording.key,
            "webhook_secret": recording.webhook_secret,
            "admin_token": recording.admin_token,
            "seconds": {lesson: run.seconds for lesson, run in recording.runs.items()},
            "media": recording.media,
        }
        (folder / f"{MANIFEST}.part").write_text(json.dumps(facts))
        (folder / f"{MANIFEST}.part").rename(folder / MANIFEST)
        return recording


def _load(folder: Path) -> Recording:
    facts = json.loads((folder / MANIFEST).read_text())
    runs = {
        lesson: Run(nbformat.read(folder / f"{lesson}.recorded.ipynb", as_version=4), seconds)
        for lesson, seconds in facts["seconds"].items()
    }
    return Recording(
        folder, facts["key"], facts["webhook_secret"], facts["admin_token"], runs, facts["media"]
    )


def replay(recording: Recording, lesson: str, student: Path) -> Run:
    """Replay one lesson with no key, offline, on the student's own sandbox data dir."""
    env = _env(
        DUBKIT_REPLAY=str(recording.cassette(lesson)), DUBKIT_SANDBOX_DIR=str(student / "sandbox")
    )
    return execute(lesson, student / f"{lesson}.replayed.ipynb", env, offline=True)


def served_media(sandbox_dir: Path, paths: set[str]) -> dict[str, str]:
    """sha256 of each /files path as the student's sandbox serves it (started again on its
    data dir after the replay's kernel ended)."""
    from dubkit.sandbox import start

    server = start(sandbox_dir)
    try:
        found = {}
        for path in paths:
            got = requests.get(f"{server.url}/files/{path}", timeout=PATIENCE)
            got.raise_for_status()
            found[path] = sha(got.content)
        return found
    finally:
        server.stop()


def copy_cassette(recording: Recording, lesson: str, target: Path) -> Path:
    shutil.copytree(recording.cassette(lesson), target)
    return target
