"""Receivers under gunicorn for the fleet test: each a server of its own, started in a session
of its own so that one SIGKILL of the group ends master and worker together.

The app module (written next to each server's log) is a Receiver on a PostgreSQL URL with one
transactional handler, ``INSERT INTO effects``; ``GET /fleet/pid`` answers the worker's pid, so
a probe tells both "this server answers" and which process did. After its INSERT the handler
reads its receiver's table ``gate_<n>``: free, unless the test locks it (:func:`gate_closed`)
to hold handlers between their write and their commit while it kills a receiver or restarts
the database.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import requests
from _waiting import wait_for

APP = """
import logging, os, sys
from dubkit.webhooks import Receiver

# The Receiver's own warnings and tracebacks (store unavailable, a worker's attempt cut off)
# go to this server's log, for the test's report.
logging.basicConfig(
    stream=sys.stderr,
    level=logging.WARNING,
    format="%(asctime)s %(process)d %(name)s %(levelname)s %(message)s",
)
receiver = Receiver(os.environ["FLEET_SECRET"], store=os.environ["FLEET_STORE"])


def save(event, connection):
    connection.execute("INSERT INTO effects (task_id) VALUES (%s)", (event.task_id,))
    # Free, unless the test holds this receiver's gate: then the handler waits here, its
    # INSERT made and not committed, for the SIGKILL or the database restart to land on.
    connection.execute("SELECT 1 FROM " + os.environ["FLEET_GATE"])


receiver.on("openapi-translate", save, transaction=True)


def app(environ, start_response):
    if environ.get("REQUEST_METHOD") == "GET" and environ.get("PATH_INFO") == "/fleet/pid":
        body = str(os.getpid()).encode()
        start_response("200 OK", [("Content-Length", str(len(body)))])
        return [body]
    return receiver.wsgi_app(environ, start_response)
"""

# The receiver's own log lines the report counts, by what they mean.
LOG_LINES = {
    "webhook store unavailable": "503: claim failed, store unavailable",
    "webhook worker": "attempt cut off by the store, retried in 1 s",
    "webhook sweeper": "sweeper could not look for orphans",
    "webhook store upkeep": "upkeep at start failed",
    "webhook receiver failed": "500: a bug path",
    "dead letter": "dead letter",
}


@contextmanager
def gate_closed(url: str, *servers: Gunicorn) -> Iterator[None]:
    """Hold the servers' handlers after their INSERT, before their commit, until the block ends."""
    db = psycopg.connect(url)
    try:
        for server in servers:
            db.execute(f"LOCK TABLE {server.gate} IN ACCESS EXCLUSIVE MODE")
        yield
    finally:
        try:
            db.rollback()
        except psycopg.OperationalError:  # the database restarted under it
            pass
        db.close()


def held(url: str) -> dict[str, int]:
    """Handlers waiting at the closed gate, by receiver (its connections' application_name)."""
    with psycopg.connect(url, autocommit=True) as db:
        found = db.execute(
            "SELECT a.application_name, COUNT(*) FROM pg_stat_activity a "
            "JOIN pg_locks l ON l.pid = a.pid JOIN pg_class c ON c.oid = l.relation "
            "WHERE NOT l.granted AND c.relname LIKE 'gate%' GROUP BY 1"
        ).fetchall()
    return {name: int(n) for name, n in found}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def group_gone(pgid: int) -> bool:
    """No process of the group runs any more (a zombie has closed its sockets too)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # exited while we looked
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return False
    return True


def _no_control_socket() -> list[str]:
    """gunicorn 24+ opens a control socket at one path per user (~/.gunicorn/gunicorn.ctl),
    which every server started here, or by anyone else on the machine, would take over."""
    from gunicorn.config import KNOWN_SETTINGS

    names = {setting.name for setting in KNOWN_SETTINGS}
    return ["--no-control-socket"] if "control_socket_disable" in names else []


_NO_CONTROL_SOCKET = _no_control_socket()


class Gunicorn:
    """``gunicorn -w 1 -b 127.0.0.1:PORT receiver_app:app`` in its own session; restartable."""

    def __init__(self, name: str, folder: Path, port: int, env: dict[str, str]) -> None:
        self.name, self.folder, self.port, self.env = name, folder, port, env
        self.url = f"http://127.0.0.1:{port}/"
        self.log = folder / f"{name}.log"
        self.gate = "gate_" + name.replace("-", "_")
        self.started: list[subprocess.Popen[bytes]] = []  # every master, for the cleanup
        self.workers: list[int] = []  # every worker pid seen, in order
        (folder / "receiver_app.py").write_text(APP)
        with psycopg.connect(env["FLEET_STORE"]) as db:
            db.execute(f"CREATE TABLE IF NOT EXISTS {self.gate} ()")

    @property
    def process(self) -> subprocess.Popen[bytes]:
        return self.started[-1]

    def start(self) -> None:
        command = shutil.which("gunicorn", path=str(Path(sys.executable).parent)) or "gunicorn"
        with self.log.open("ab") as log:
            self.started.append(
                subprocess.Popen(
                    [
                        command,
                        "-w",
                        "1",
                        "-b",
                        f"127.0.0.1:{self.port}",
                        *_NO_CONTROL_SOCKET,
                        "receiver_app:app",
                    ],
                    cwd=self.folder,
                    # PGAPPNAME names its connections in pg_stat_activity (libpq reads it).
                    env={**os.environ, **self.env, "PGAPPNAME": self.name, "FLEET_GATE": self.gate},
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    start_new_session=True,  # its own process group: master and worker
                )
            )

    def worker_pid(self) -> int | None:
        """The pid of the worker answering now, or None while nothing answers."""
        try:
            answer = requests.get(self.url + "fleet/pid", timeout=5)
        except requests.RequestException:
            return None
        return int(answer.text) if answer.status_code == 200 else None

    def wait_up(self) -> int:
        pid = wait_for(self.worker_pid)
        assert pid, f"{self.name} did not come up on :{self.port}:\n{self.log.read_text()[-3000:]}"
        self.workers.append(pid)
        return pid

    def kill(self) -> None:
        """SIGKILL master and worker (the group), and wait until both are gone."""
        process = self.process
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(60)
        assert wait_for(lambda: group_gone(process.pid))  # the worker too: the port is free

    def stop(self) -> None:
        """The cleanup: kill every group this started that may still run."""
        for process in self.started:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait(60)

    def log_counts(self) -> dict[str, int]:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return {what: n for line, what in LOG_LINES.items() if (n := text.count(line))}
