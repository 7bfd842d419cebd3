"""What a newcomer meets first: the README's Lab command, and where dubkit keeps its state."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

from dubkit.uploads.state import default_state_dir

REPO = Path(__file__).resolve().parent.parent


def readme_command(marker: str) -> str:
    lines = (REPO / "README.md").read_text().splitlines()
    return lines[lines.index(f"<!-- {marker} -->") + 2]


def test_the_readmes_lab_command_starts_lab_for_whoever_runs_it(tmp_path):
    """The command as written (its last step, with this environment's venv): Lab serves, also
    as root (containers, Codespaces, this CI), where plain ``jupyter lab`` refuses."""
    last_step = readme_command("lab-command").split("&&")[-1].strip()
    argv = shlex.split(last_step)
    assert argv[0] == ".venv/bin/jupyter"
    port = _free_port()
    argv = [
        str(Path(sys.executable).parent / "jupyter"),
        *argv[1:],
        "--no-browser",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=t0k",
    ]
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "BROWSER": "true",
    }
    log = tmp_path / "lab.log"
    with open(log, "wb") as sink:
        lab = subprocess.Popen(
            argv, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    try:
        status = None
        for _ in range(240):
            if lab.poll() is not None:
                break
            try:
                status = requests.get(
                    f"http://127.0.0.1:{port}/api/status",
                    headers={"Authorization": "token t0k"},
                    timeout=2,
                )
                break
            except requests.ConnectionError:
                time.sleep(0.25)
        assert status is not None and status.status_code == 200, log.read_text()[-2000:]
    finally:
        lab.terminate()
        lab.wait(20)


def test_upload_resume_state_follows_a_moved_sandbox_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("DUBKIT_UPLOAD_STATE_DIR", raising=False)
    monkeypatch.setenv("DUBKIT_SANDBOX_DIR", str(tmp_path / "box"))
    assert default_state_dir() == tmp_path / "box-uploads"
    monkeypatch.setenv("DUBKIT_UPLOAD_STATE_DIR", str(tmp_path / "mine"))
    assert default_state_dir() == tmp_path / "mine"
    monkeypatch.delenv("DUBKIT_UPLOAD_STATE_DIR")
    monkeypatch.delenv("DUBKIT_SANDBOX_DIR")
    assert default_state_dir() == Path.home() / ".cache" / "dubkit" / "uploads"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
