"""A ``dubkit sandbox`` in its own process, for benchmarks that read its CPU time or memory.

Shared by the bench scripts (``python bench/bench_x.py`` puts this folder on ``sys.path``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import dubkit
from dubkit import SandboxHandle

TICKS = os.sysconf("SC_CLK_TCK")


class Box:
    """One sandbox process on a data dir; ``start()`` again after ``stop()`` reuses the dir."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir, self.port = data_dir, _free_port()
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> dubkit.Client:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dubkit.cli", "sandbox", "--port", str(self.port)]
            + ["--data-dir", str(self.data_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for line in self.proc.stdout:  # type: ignore[union-attr]
            if "listening on" in line:
                break
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()  # type: ignore
        return dubkit.Client(self.handle.api_key, self.handle.url)

    @property
    def handle(self) -> SandboxHandle:
        token = self.data_dir / "admin-token"
        return SandboxHandle(
            f"http://127.0.0.1:{self.port}",
            admin_token=token.read_text() if token.exists() else None,
        )

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(30)
            self.proc = None

    def cpu_seconds(self, children: bool = False) -> float:
        """CPU the process used; ``children`` adds that of the programs it ran and waited for
        (ffmpeg)."""
        stat = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        fields = stat[11:15] if children else stat[11:13]  # utime stime (cutime cstime)
        return sum(int(field) for field in fields) / TICKS

    def memory_kb(self) -> dict[str, int]:
        """The process's /proc status sizes in kB (``VmHWM`` is its peak resident memory)."""
        fields = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if value.strip().endswith("kB"):
                fields[name] = int(value.split()[0])
        return fields


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
