"""Jupyter servers for the browser tests: JupyterLab, Notebook 7 and Voila, on loopback.

Each server runs in its own process with a private Jupyter home (config, data, runtime,
settings, workspaces) under a temp dir, so nothing from the developer's own set-up (a saved
workspace that reopens old tabs, a user kernel) leaks in, and kernels are this venv's Python.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import requests
from _waiting import PATIENCE

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
SCREENSHOTS = REPO / "docs" / "screenshots"  # the README's pictures

# Lab settings that make a run deterministic: every cell stays in the DOM (no windowing, so
# players far down a notebook exist and load), no autosave writing the copies mid-run, and no
# news/update toast covering the page.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def private_jupyter_env(
    home: Path, sandbox_dir: Path, kernel: KernelSpec | None = None
) -> dict[str, str]:
    """Environment for a server: private Jupyter dirs, a kernel (this venv's Python unless
    ``kernel`` says otherwise), the offline sandbox."""
    env = dict(os.environ)
    for name in ("DUBKIT_API_KEY", "DUBKIT_BASE_URL", "DUBKIT_JUPYTER_PROXY"):
        env.pop(name, None)  # the sandbox here; kernels find their server's proxy
    dirs = {
        "JUPYTER_CONFIG_DIR": home / "config",
        "JUPYTER_DATA_DIR": home / "data",
        "JUPYTER_RUNTIME_DIR": home / "runtime",
        "IPYTHONDIR": home / "ipython",
    }
    for name, path in dirs.items():
        path.mkdir(parents=True, exist_ok=True)
        env[name] = str(path)
    # The data dir comes first in the kernel search path, so this spec is the one used (in a
    # venv jupyter_core puts the venv's own specs first unless told not to).
    env["JUPYTER_PREFER_ENV_PATH"] = "0"
    write_kernel_spec(home / "data" / "kernels" / "python3", kernel)
    env["DUBKIT_SANDBOX_DIR"] = str(sandbox_dir)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class Server:
    """A running server process: its base URL, token (may be empty) and log file."""

    name: str
    url: str
    token: str
    process: subprocess.Popen
    log: Path
    home: Path
    root: Path | None = None  # what Lab serves

    @property
    def port(self) -> int:
        return urlsplit(self.url).port  # type: ignore[return-value]

    def api(self, method: str, path: str, **kwargs) -> requests.Response:
        headers = {"Authorization": f"token {self.token}"} if self.token else {}
        return requests.request(method, f"{self.url}{path}", headers=headers, timeout=10, **kwargs)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def wait_until_up(server: Server, path: str | None, *, timeout: float = PATIENCE) -> None:
    """Poll ``path`` until it answers 200 (``None``: until the port accepts connections);
    fail with the server's log if it dies or stalls."""
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"{server.name} exited with {server.process.returncode}:\n{server.log_tail()}"
            )
        try:
            if path is None:
                with socket.create_connection(("127.0.0.1", server.port), timeout=2):
                    return
            answer = server.api("GET", path)
            if answer.status_code == 200:
                return
            last = f"HTTP {answer.status_code}"
        except (OSError, requests.RequestException) as exc:
            last = type(exc).__name__
        time.sleep(0.3)
    server.stop()
    raise RuntimeError(
        f"{server.name} did not answer {path} within {timeout:g} s ({last}):\n{server.log_tail()}"
    )


@dataclass(frozen=True)
class KernelSpec:
    """The ``python3`` kernel a server starts: a Python and a module that launches it, with
    environment additions (a front end's marks, in the front-end tests)."""

    python: str = sys.executable
    module: str = "ipykernel_launcher"
    env: tuple[tuple[str, str], ...] = ()


APPS = {  # the server's module, and its app's name for the settings below
    "lab": ("jupyterlab", "LabApp"),
    "notebook": ("notebook", "JupyterNotebookApp"),
}


def start_lab(
    root: Path,
    home: Path,
    log: Path,
    *,
    base_url: str = "/",
    app: str = "lab",
    kernel: KernelSpec | None = None,
    extra: tuple[str, ...] = (),
) -> Server:
    """JupyterLab (or, ``app="notebook"``, Notebook 7) serving ``root`` on a free loopback
    port, with a token and no browser.

    ``base_url`` other than ``/`` serves it below a prefix the way a hub does
    (``/user/<name>/``), and tells its kernels so through ``JUPYTERHUB_SERVICE_PREFIX``.
    ``kernel`` replaces the ``python3`` kernel; ``extra`` adds server options.
    """
    module, name = APPS[app]
    port, token = free_port(), secrets.token_hex(16)
    settings = home / "lab-settings"
    for relpath, values in LAB_SETTINGS.items():
        target = settings / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    env = private_jupyter_env(home, home / "sandbox", kernel)
    if base_url != "/":
        env["JUPYTERHUB_SERVICE_PREFIX"] = base_url
    command = [
        sys.executable,
        "-m",
        module,
        "--no-browser",
        "--ServerApp.open_browser=False",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.allow_root=True",  # CI runs as root
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--ServerApp.base_url={base_url}",
        f"--{name}.user_settings_dir={settings}",
        f"--{name}.workspaces_dir={home / 'workspaces'}",
        # window.jupyterapp: run commands and read kernel and cell state directly
        f"--{name}.expose_app_in_browser=True",
        *extra,
    ]
    server = spawn(
        "JupyterLab" if app == "lab" else "Notebook 7",
        command,
        env,
        log,
        f"http://127.0.0.1:{port}{base_url.rstrip('/')}",
        token,
        home,
    )
    server.root = root
    wait_until_up(server, "/api/status")
    return server


def start_studio(home: Path, log: Path, *, service: tuple[str, str] | None = None) -> Server:
    """``dubkit studio`` exactly as a person starts it, on a free loopback port: on its own
    sandbox, or on ``service`` (base URL, API key) as with a real key."""
    port = free_port()
    env = private_jupyter_env(home, home / "sandbox")
    if service is not None:
        env["DUBKIT_BASE_URL"], env["DUBKIT_API_KEY"] = service
    command = [sys.executable, "-m", "dubkit.cli", "studio", "--port", str(port), "--no-browser"]
    server = spawn("dubkit studio", command, env, log, f"http://127.0.0.1:{port}", "", home)
    wait_until_up(server, None)  # a GET of / would start a kernel nobody watches
    return server


def spawn(
    name: str, command: list[str], env: dict[str, str], log: Path, url: str, token: str, home: Path
) -> Server:
    """Start ``command`` in ``home`` with its output in ``log``; the Server that will answer at
    ``url`` (``token``: empty when it needs none)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=home,
        )
    return Server(name, url, token, process, log, home)


def write_kernel_spec(folder: Path, kernel: KernelSpec | None = None) -> None:
    """A kernel spec in ``folder`` that runs this venv's Python (not a user's kernel), or the
    one ``kernel`` names."""
    kernel = kernel or KernelSpec()
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [kernel.python, "-m", kernel.module, "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    if kernel.env:
        spec["env"] = dict(kernel.env)
    (folder / "kernel.json").write_text(json.dumps(spec))
