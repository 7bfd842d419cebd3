"""A class on a real JupyterHub, on loopback, for the browser suite (tests/browser/test_hub.py).

Everything lives under one temp dir and is started as a teacher would start it:

* a class sandbox: ``dubkit sandbox --port P --data-dir D`` (its admin token in D/admin-token);
* the class: ``dubkit class create roster.csv --credits 500 --max-tasks 3`` against it, with
  the admin token in that command's environment only, writing the class file (owner-only);
* JupyterHub (``jupyterhub -f jupyterhub_config.py``, the text is :data:`HUB_CONFIG`): the
  dummy authenticator with the class's users allowed, the simple local-process spawner with a
  home per user under the temp dir, configurable-http-proxy from npm (``.ci/run`` installs it
  into .ci/node), and dubkit's ``class_environment`` hook, which gives each student their key
  and the teacher the class file and the admin token.

The hub's own environment holds the admin token too, as the shell of a teacher who just ran
``dubkit class create`` would: ``Spawner.env_keep`` names what a server may inherit, so only
the hook decides who gets it. A service token of the hub's (``access:servers``) lets the test
reach each user's server API (end a kernel) without acting as that user in the browser.

``ClassHub.stop`` ends the hub (which stops the servers it spawned and its proxy:
``cleanup_servers``), then the sandbox, and reports any process still working under the temp
dir (a server, kernel or proxy left behind) after ending it.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import requests
from _waiting import PATIENCE, wait_for
from jupyter_servers import (
    LAB_SETTINGS,
    NOTEBOOKS,
    REPO,
    Server,
    free_port,
    spawn,
    wait_until_up,
    write_kernel_spec,
)

CHP = REPO / ".ci" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
NODE = Path("/usr/bin/node")
BIN = Path(sys.executable).parent
STUDENTS = ("ada", "bob", "cy")
TEACHER = "teacher"
CREDITS = 500  # each student's grant (`dubkit class create --credits`)
MAX_TASKS = 3
TOKEN_ENV = "DUBKIT_SANDBOX_ADMIN_TOKEN"
CLASS_VIEW_SOURCE = (
    "from dubkit.classroom import Classroom, ClassView\n"
    "\n"
    "view = ClassView(Classroom.open())  # the class file: $DUBKIT_CLASS_FILE\n"
    "view"
)

# The hub's configuration, as a teacher writes it (formatted with repr()s of the paths).
HUB_CONFIG = """\
# jupyterhub_config.py: a dubkit class on one machine (written by tests/browser/hub_server.py)
from pathlib import Path

from dubkit.classroom.hub import class_environment

c = get_config()  # noqa: F821

# Where it listens: the public proxy port (the only one a browser uses), the hub itself, and
# the proxy's REST API; state files in this folder.
c.JupyterHub.bind_url = {public_url!r}
c.JupyterHub.hub_bind_url = {hub_url!r}
c.ConfigurableHTTPProxy.api_url = {api_url!r}
c.ConfigurableHTTPProxy.command = [{chp!r}]
c.ConfigurableHTTPProxy.pid_file = {proxy_pid!r}
c.JupyterHub.pid_file = {hub_pid!r}
c.JupyterHub.cookie_secret_file = {cookie_secret!r}
c.JupyterHub.db_url = {db_url!r}
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every user's server
c.JupyterHub.cleanup_proxy = True

# Who may log in: the class's students and its teacher (the dummy authenticator takes any
# password: a test hub only).
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {users!r}

# Each user's server: a local process with its own home here, JupyterLab by default.
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {home_template!r}
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.args = {args!r}
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
# What a server inherits from the hub's environment: never the admin token the hub holds.
c.Spawner.env_keep = ["PATH", "LANG", "LC_ALL", "VIRTUAL_ENV"]

# dubkit: each student's server gets their key and the class sandbox's URL; the teacher's
# gets the class file and the sandbox's admin token (for the teacher's view).
c.Spawner.pre_spawn_hook = class_environment(
    {class_file!r},
    teachers={{{teacher!r}}},
    admin_token=Path({admin_token_file!r}).read_text().strip(),
)

# The test's own service: its token reaches every user's server API (to end kernels).
c.JupyterHub.services = [{{"name": "dubkit-test", "api_token": {service_token!r}}}]
c.JupyterHub.load_roles = [
    {{
        "name": "dubkit-test",
        "services": ["dubkit-test"],
        "scopes": ["list:users", "read:users", "admin:servers", "access:servers"],
    }}
]
"""

# Lab's deterministic settings (see jupyter_servers.LAB_SETTINGS) plus what the suite's Lab
# gets on its command line; a hub server's settings live in the user's home.
SINGLEUSER_ARGS = ["--ServerApp.allow_root=True", "--LabApp.expose_app_in_browser=True"]


def cannot_run() -> str | None:
    """Why a class hub cannot run here, or None."""
    if not CHP.exists():
        return (
            f"no configurable-http-proxy at {CHP.relative_to(REPO)}: .ci/run installs it "
            "(npm install --prefix .ci/node configurable-http-proxy)"
        )
    if not NODE.exists():
        return f"no node at {NODE} (configurable-http-proxy runs on it)"
    if not (BIN / "jupyterhub-singleuser").exists():
        return "jupyterhub is missing: pip install -e '.[test]'"
    try:
        import jupyter_server_proxy  # noqa: F401
    except ImportError:
        return "jupyter-server-proxy is missing: pip install -e '.[test]'"
    return None


@dataclass
class UserServer:
    """One user's server behind the hub, shaped as lab_page.LabNotebook needs: ``url`` (what
    the browser opens), ``token`` (none: the browser is logged in) and ``api`` (the test's
    service token, for the server's REST API)."""

    name: str
    url: str
    service_token: str
    token: str = ""

    def api(self, method: str, path: str, **kwargs) -> requests.Response:
        headers = {"Authorization": f"token {self.service_token}"}
        return requests.request(method, f"{self.url}{path}", headers=headers, timeout=30, **kwargs)


@dataclass
class ClassHub:
    base: Path
    sandbox: Server
    hub: Server
    class_file: Path
    admin_token: str
    service_token: str
    roster: dict[str, int] = field(default_factory=dict)  # student -> credits granted

    @property
    def url(self) -> str:
        return self.hub.url

    @property
    def port(self) -> int:
        return self.hub.port

    @property
    def sandbox_url(self) -> str:
        return self.sandbox.url

    @property
    def sandbox_port(self) -> int:
        return self.sandbox.port

    def home(self, name: str) -> Path:
        return self.base / "homes" / name

    def user(self, name: str) -> UserServer:
        return UserServer(name, f"{self.url}/user/{name}", self.service_token)

    def hub_api(self, method: str, path: str, **kwargs) -> requests.Response:
        headers = {"Authorization": f"token {self.service_token}"}
        return requests.request(
            method, f"{self.url}/hub/api{path}", headers=headers, timeout=30, **kwargs
        )

    def keys(self) -> dict[str, str]:
        """Each student's key, from the class file (for the test to compare, never print)."""
        data = json.loads(self.class_file.read_text())
        return {s["name"]: s["apiKey"] for s in data["students"]}

    def dubkit_class(self, *args: str) -> str:
        """``dubkit class --file CLASS ARGS`` as the teacher runs it; its output."""
        return dubkit_class(self.class_file, self.admin_token, *args, cwd=self.base)

    def shown(self) -> dict[str, dict[str, str]]:
        """``dubkit class show --csv``, by student."""
        import csv

        rows = csv.DictReader(self.dubkit_class("show", "--csv").splitlines())
        return {row["name"]: row for row in rows}

    def latest(self) -> dict[str, int]:
        """How many latest results (speech, dubs) the class report holds per student."""
        from dubkit import SandboxHandle

        report = SandboxHandle(self.sandbox_url, admin_token=self.admin_token).class_report()
        return {s.name: len(s.latest) for s in report.students}

    def stop(self) -> list[str]:
        """End the hub (its servers and proxy with it) and the sandbox; then end and return
        whatever process still runs under the temp dir (none, when all is well)."""
        _terminate(self.hub.process, PATIENCE)
        _terminate(self.sandbox.process, 30)
        if wait_for(lambda: not processes_under(self.base), limit=60):
            return []
        left = processes_under(self.base)
        for pid, _ in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return [f"{pid}: {command}" for pid, command in left]


def _terminate(process: subprocess.Popen, patience: float) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(patience)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def processes_under(folder: Path) -> list[tuple[int, str]]:
    """Processes whose working directory is in ``folder``: the hub, its proxy, user servers
    (each in its home) and their kernels."""
    found = []
    mine = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == mine:
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone, or not ours to read
        if cwd == folder or folder in cwd.parents:
            found.append((int(entry.name), command.strip()[:160]))
    return found


def dubkit_class(class_file: Path, admin_token: str, *args: str, cwd: Path) -> str:
    """Run ``dubkit class`` with the admin token in its environment; fail with its output."""
    env = _clean_env()
    env[TOKEN_ENV] = admin_token
    done = subprocess.run(
        [sys.executable, "-m", "dubkit", "class", "--file", str(class_file), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"dubkit class {' '.join(args)}:\n{done.stdout}{done.stderr}"
    return done.stdout


def _clean_env() -> dict[str, str]:
    """The test's environment without any dubkit key, URL or token (the contract's strict
    mode and its log stay: the sandbox reports mismatches as the suite's own does)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DUBKIT_API_KEY", "DUBKIT_BASE_URL", TOKEN_ENV, "DUBKIT_CLASS_FILE")
    }
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _home(home: Path, notebooks: dict[str, str | dict]) -> None:
    """A user's home as their server finds it: Lab's deterministic settings, this venv's
    kernel as ``python3``, and their notebooks (a repo lesson's name, or a notebook dict)."""
    settings = home / ".jupyter" / "lab" / "user-settings"
    for relpath, values in LAB_SETTINGS.items():
        target = settings / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    write_kernel_spec(home / ".local" / "share" / "jupyter" / "kernels" / "python3")
    for filename, content in notebooks.items():
        target = home / filename
        if isinstance(content, str):
            target.write_bytes((NOTEBOOKS / content).read_bytes())
        else:
            target.write_text(json.dumps(content, indent=1))


def class_view_notebook() -> dict:
    return {
        "cells": [
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": "# The class\n\nEvery student, refreshing itself; pick one to play "
                "their latest speech and dubs, top them up, reset or disable them.",
            },
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": CLASS_VIEW_SOURCE,
            },
        ],
        "metadata": {
            "kernelspec": {
                "display_name": "Python 3 (ipykernel)",
                "language": "python",
                "name": "python3",
            },
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def start_class_hub(base: Path, logs: Path, lessons: dict[str, str]) -> ClassHub:
    """The class sandbox, the class made from a roster by ``dubkit class create``, and the hub
    (``lessons``: the repo notebook each student finds in their home)."""
    base.mkdir(parents=True, exist_ok=True)
    data = base / "sandbox-data"
    sandbox_port = free_port()
    sandbox = spawn(
        "class sandbox",
        [
            sys.executable,
            "-m",
            "dubkit",
            "sandbox",
            "--port",
            str(sandbox_port),
            "--data-dir",
            str(data),
        ],
        _clean_env(),
        logs / "hub-sandbox.log",
        f"http://127.0.0.1:{sandbox_port}",
        "",
        base,
    )
    hub: Server | None = None
    try:
        wait_until_up(sandbox, "/_sandbox/openapi.json")
        admin_token = (data / "admin-token").read_text().strip()

        roster = base / "roster.csv"
        roster.write_text(
            "name,email,credits\n" + "".join(f"{s},{s}@example.org,\n" for s in STUDENTS)
        )
        class_file = base / "class" / "class.json"
        said = dubkit_class(
            class_file,
            admin_token,
            "create",
            str(roster),
            "--url",
            sandbox.url,
            "--credits",
            str(CREDITS),
            "--max-tasks",
            str(MAX_TASKS),
            cwd=base,
        )
        assert f"{len(STUDENTS)} students" in said, said
        mode = stat.S_IMODE(class_file.stat().st_mode)
        assert mode == 0o600, f"the class file is {oct(mode)}, not owner-only"

        homes = base / "homes"
        for student in STUDENTS:
            _home(homes / student, {f"{lessons[student]}.ipynb": f"{lessons[student]}.ipynb"})
        _home(homes / TEACHER, {"class_view.ipynb": class_view_notebook()})

        public, hub_port, api_port = free_port(), free_port(), free_port()
        service_token = secrets.token_hex(24)
        config = base / "jupyterhub_config.py"
        config.write_text(
            HUB_CONFIG.format(
                public_url=f"http://127.0.0.1:{public}",
                hub_url=f"http://127.0.0.1:{hub_port}",
                api_url=f"http://127.0.0.1:{api_port}",
                chp=str(CHP),
                proxy_pid=str(base / "proxy.pid"),
                hub_pid=str(base / "jupyterhub.pid"),
                cookie_secret=str(base / "jupyterhub_cookie_secret"),
                db_url=f"sqlite:///{base / 'jupyterhub.sqlite'}",
                users={*STUDENTS, TEACHER},
                home_template=str(homes / "{username}"),
                singleuser=str(BIN / "jupyterhub-singleuser"),
                args=SINGLEUSER_ARGS,
                class_file=str(class_file),
                teacher=TEACHER,
                admin_token_file=str(data / "admin-token"),
                service_token=service_token,
            )
        )
        env = _clean_env()
        env[TOKEN_ENV] = admin_token  # a teacher's shell: env_keep must keep it from servers
        env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
        hub = spawn(
            "JupyterHub",
            [sys.executable, "-m", "jupyterhub", "-f", str(config)],
            env,
            logs / "hub.log",
            f"http://127.0.0.1:{public}",
            "",
            base,
        )
        wait_until_up(hub, "/hub/api/")  # through the proxy: both are up
        room = ClassHub(
            base,
            sandbox,
            hub,
            class_file,
            admin_token,
            service_token,
            roster={s: CREDITS for s in STUDENTS},
        )
        return room
    except BaseException:
        if hub is not None:
            _terminate(hub.process, PATIENCE)
        _terminate(sandbox.process, 30)
        raise
