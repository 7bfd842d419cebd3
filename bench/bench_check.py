"""A dub of 100 lines checked (issue 44): the first check, against fetching the lines' audio
alone, and a second check from the kept measures.

    python bench/bench_check.py            # 100 lines
    python bench/bench_check.py --lines 40

One narrated clip of ``--lines`` short sentences (two speakers taking turns) is dubbed by the
embedded sandbox; then, timed in this process: **fetch only** (every line's audio downloaded,
as a reviewer's player would, nothing measured: the baseline), **first check**
(``dub.check()`` on a fresh result: each line fetched, decoded and metered by ffmpeg's EBU
R128 filter, the subtitles fetched and parsed, every rule applied) and **second check** (the
same result again: nothing fetched). Printed: seconds and the ratio of each to fetch only.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import dubkit
from dubkit import samples
from dubkit.results import DubbingResult

WORDS = [
    "the boats come home",
    "gulls follow the tide",
    "the town wakes early",
    "nets dry on the quay",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100)
    count = parser.parse_args().lines
    client = dubkit.connect(quiet=True)
    script = [(f"Line {i}: {WORDS[i % 4]}.", "f2" if i % 2 else "m3") for i in range(count)]
    clip = samples.narrated_clip(
        Path(tempfile.mkdtemp()) / "long.mp4", script, width=160, height=90, fps=5, pause=0.4
    )
    started = time.perf_counter()
    raw = client.dubbing.create(clip, target="fr-FR", source="en-US").wait(1800).result.raw
    print(f"dub of {count} lines made in {time.perf_counter() - started:.1f} s (not timed below)")

    # Both timings include making the result, which fetches its first lines (for its view).
    started = time.perf_counter()
    fresh = DubbingResult(client.transport, raw)
    for line in fresh.script:
        if fresh.held(line.audio_url) is None:
            client.transport.download(line.audio_url)
    fetch = time.perf_counter() - started

    started = time.perf_counter()
    dub = DubbingResult(client.transport, raw)
    report = dub.check()
    first = time.perf_counter() - started
    started = time.perf_counter()
    dub.check()
    second = time.perf_counter() - started
    print(f"lines checked: {len(report.lines)}; verdict {report.summary()}")
    print(f"fetch only    {fetch:7.2f} s  1.00x")
    print(f"first check   {first:7.2f} s  {first / fetch:5.2f}x fetch only")
    print(f"second check  {second:7.3f} s  {second / fetch:5.3f}x fetch only")


if __name__ == "__main__":
    main()
