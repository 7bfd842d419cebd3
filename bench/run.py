"""Run every benchmark in this folder, one after another, and print what each prints.

    python bench/run.py                # all of them
    python bench/run.py overhead tts   # those whose names contain these words

Each benchmark starts its own sandbox and prints ratios measured within one run (dubkit against
the baseline its issue names); none of them asserts.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent


def main(words: list[str]) -> int:
    failed = 0
    for script in sorted(HERE.glob("bench_*.py")):
        if words and not any(w in script.stem for w in words):
            continue
        print(f"\n=== {script.stem}", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, str(script)])
        print(f"=== {script.stem}: exit {code}, {time.perf_counter() - started:.1f} s", flush=True)
        failed += code != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
