"""``import dubkit`` against ``import requests, pandas`` (issue 15's yardstick), in fresh processes.

Each side is a new interpreter that imports and exits; the two alternate so drift in the
machine's load hits both equally, and the ratio is the median of the pairwise ratios.
Target: <= 1.2. Then the modules ``import dubkit`` spends the most time in (``-X importtime``).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

ROUNDS = 15
OURS = "import dubkit"
BASELINE = "import requests, pandas"


def wall(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


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
        wall(code)
    ratios, ours, theirs = [], [], []
    for _ in range(ROUNDS):
        a, b = wall(OURS), wall(BASELINE)
        ours.append(a)
        theirs.append(b)
        ratios.append(a / b)
    print(f"{'import':28} {'median s':>9}")
    print(f"{OURS:28} {statistics.median(ours):9.3f}")
    print(f"{BASELINE:28} {statistics.median(theirs):9.3f}")
    print(f"ratio {statistics.median(ratios):.3f} (median of {ROUNDS} pairs; target <= 1.2)")
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
