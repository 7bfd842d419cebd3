"""``import dubkit`` against ``import requests, pandas`` (issue 15's yardstick), in fresh processes.

Each side is a new interpreter that imports and exits; the two alternate so drift in the
machine's load hits both equally, and the ratio is the median of the pairwise ratios, in wall
time and in CPU time (user + system of the child: less moved by other work on the machine).
Target: <= 1.1 (issue 36). Then the modules ``import dubkit`` spends the most time in
(``-X importtime``). What it may not load at all is tests/test_code_health.py's to check.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

ROUNDS = 15
OURS = "import dubkit"
BASELINE = "import requests, pandas"


def timed(code: str) -> tuple[float, float]:
    """(wall, CPU) seconds of a fresh interpreter that runs ``code``."""
    before = os.times()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    wall = time.perf_counter() - started
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def slowest_imports(top: int = 6) -> list[tuple[int, str]]:
    """The top-level dubkit modules by cumulative import time (microseconds)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", OURS], capture_output=True, text=True
    )
    rows = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip().startswith(("dubkit.", "pandas", "ipywidgets")):
            rows.append((int(parts[1]), parts[2].strip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    for code in (OURS, BASELINE):  # warm the file cache for both
        timed(code)
    ours, theirs = [], []
    for _ in range(ROUNDS):
        ours.append(timed(OURS))
        theirs.append(timed(BASELINE))
    print(f"{'import':28} {'wall s':>8} {'CPU s':>8}  (medians)")
    for code, runs in ((OURS, ours), (BASELINE, theirs)):
        walls, cpus = zip(*runs)
        print(f"{code:28} {statistics.median(walls):8.3f} {statistics.median(cpus):8.3f}")
    for i, kind in enumerate(("wall", "CPU")):
        ratio = statistics.median(a[i] / b[i] for a, b in zip(ours, theirs))
        print(f"ratio ({kind}) {ratio:.3f} (median of {ROUNDS} pairs; target <= 1.1)")
    print(f"load average beside it: {os.getloadavg()[0]:.2f}")
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, dubkit; print('pandas' in sys.modules, 'ipywidgets' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    print(f"pandas loaded by import dubkit: {loaded[0]}; ipywidgets: {loaded[1]}")
    for micros, module in slowest_imports():
        print(f"    {micros / 1000:7.1f} ms  {module}")


if __name__ == "__main__":
    main()
