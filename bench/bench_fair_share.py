"""A student's short dub while another student's six long dubs run (issue 26, item 2).

    python bench/bench_fair_share.py                 # six dubs of a ~100 s clip; a 3 s clip
    python bench/bench_fair_share.py --long-lines 8  # a shorter long clip

Two keys on one standalone sandbox, as two students of a class. It prints the wall time from
submit to ``finished`` (as the client sees it) of key B's short dub alone, of one of key A's
long dubs alone, and of B's short dub submitted just after A's six; the ratio of the last to
B's alone is the fairness figure (before the pipeline took keys in turn: 40.7 s / 1.3 s).
Target: B's dub waits at most about one other dub, so the ratio stays near 1 and far below
the long dub's own time over the short one's. It also prints how long A's six took.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _box import Box

import dubkit
from dubkit import samples

TARGETS = ("fr-FR", "de-DE", "es-ES", "it-IT", "pt-BR", "nl-NL")


def wall(task: dubkit.Task) -> float:
    started = time.monotonic()
    task.wait(timeout=1800)
    return time.monotonic() - started


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--long-lines", type=int, default=18, help="lines of the long clip")
    args = options.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-fair-"))
    box = Box(folder / "sandbox")
    box.start()
    try:
        handle = box.handle
        handle.set_throttle(rate=0, concurrency=0)  # measure the pipeline, not the throttle
        a = dubkit.Client(handle.create_key("student-a"), handle.url)
        b = dubkit.Client(handle.create_key("student-b"), handle.url)
        lines = [
            f"This is sentence number {i} of a long narration about the harbour and its boats."
            for i in range(args.long_lines)
        ]
        long_clip = samples.narrated_clip(folder / "long.mp4", lines, pause=1.2)
        short_clip = samples.narrated_clip(
            folder / "short.mp4", ["The harbour wakes.", "Boats go out."]
        )
        long_one = a.materials.upload(long_clip, progress=False)
        short_one = b.materials.upload(short_clip, progress=False)
        print(
            f"long clip {long_one.duration_seconds:.0f} s, short clip {short_one.duration_seconds:.0f} s"
        )
        alone = wall(b.dubbing.create(short_one, source="en-US", target="fr-FR"))
        long_alone = wall(a.dubbing.create(long_one, source="en-US", target="fr-FR"))
        started = time.monotonic()
        queue = [a.dubbing.create(long_one, source="en-US", target=t) for t in TARGETS]
        behind = wall(b.dubbing.create(short_one, source="en-US", target="fr-FR"))
        for task in queue:
            task.wait(timeout=1800)
        six = time.monotonic() - started
        print(f"B's short dub alone:                 {alone:6.1f} s")
        print(f"one of A's long dubs alone:          {long_alone:6.1f} s")
        print(
            f"B's short dub behind A's six:        {behind:6.1f} s  ({behind / alone:.1f}x alone)"
        )
        print(f"A's six long dubs, B's beside them:  {six:6.1f} s")
    finally:
        box.stop()


if __name__ == "__main__":
    main()
