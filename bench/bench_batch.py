"""A course dubbed as one batch, against the ideal where the sandbox's dub workers never idle,
and the batch's memory as its ledger grows (issue 43).

    python bench/bench_batch.py                    # 12 clips x 3 locales; memory at 40/200/1000 rows
    python bench/bench_batch.py --memory 40,200    # shorter

**Wall time.** Twelve narrated clips (320x180, a sentence each) into three locales through
``client.dubbing.batch``, timed from the call to ``wait()``'s return: planning (each file
measured and hashed), uploads, creates, waiting, downloads. **The ideal** is the sandbox's own
work spread over its workers with none of them ever idle: the sum of every dub's pipeline
seconds (``timings.total``, which the sandbox reports per task) over the number of workers one
key gets (2). Beside it, **the way before** the batch: one file at a time, its three locales
at once (what ``dubkit dub FILE --to L1,L2,L3`` did for each file), on the same sandbox, same
clips. Target: batch <= 1.15x the ideal.

**Memory.** A fresh process dubs N rows (N/4 one-second audio clips into 4 locales, through the
ledger) and its peak resident memory (VmHWM) is printed for each N: flat means the batch holds
no more per row than the row itself.

The sandbox is a separate process (``dubkit sandbox``), so its work does not share the batch
process's interpreter.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _box import Box  # bench/_box.py

import dubkit
from dubkit import samples

LOCALES = ["fr-FR", "de-DE", "es-ES"]
WORKERS = 2  # the sandbox's workers for one key (work_pool: per_key)

MEMORY_RUN = """
import resource, sys, dubkit
from pathlib import Path
key, url, folder, out = sys.argv[1:5]
with dubkit.Client(key, url) as api:
    batch = api.dubbing.batch(folder, targets=["fr-FR", "de-DE", "es-ES", "it-IT"], out=out)
    batch.wait()
    assert batch.finished, batch.to_frame()
    print(len(batch.rows), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def pipeline_seconds(api: dubkit.Client, task_ids: list[str]) -> float:
    return sum(float((api.tasks.get(t).raw_result or {})["timings"]["total"]) for t in task_ids)


def one_file_at_a_time(api: dubkit.Client, clips: list[Path], out: Path) -> tuple[float, list[str]]:
    started = time.perf_counter()
    made = []
    for clip in clips:
        material = api.materials.upload(clip, progress=False)
        tasks = [api.dubbing.create(material, target=locale) for locale in LOCALES]
        for task in tasks:
            task.wait().result.save(out, clip.stem)
            made.append(task.task_id)
    return time.perf_counter() - started, made


def wall_time(box: Box, folder: Path) -> None:
    clips = [
        samples.narrated_clip(
            folder / f"clip{i:02d}.mp4",
            [f"Part {i}. Welcome back to the course."],
            width=320,
            height=180,
            fps=15,
        )
        for i in range(12)
    ]
    api = box.start()
    api.dubbing.create(clips[0], target="it-IT").wait()  # the sandbox's first dub calibrates
    started = time.perf_counter()
    batch = api.dubbing.batch(clips, targets=LOCALES, out=folder / "batch").wait()
    batch_wall = time.perf_counter() - started
    assert batch.finished, batch.to_frame()
    batch_ideal = pipeline_seconds(api, [r.task_id for r in batch.rows]) / WORKERS
    loop_wall, loop_ids = one_file_at_a_time(api, clips, folder / "loop")
    loop_ideal = pipeline_seconds(api, loop_ids) / WORKERS
    print(f"{len(batch.rows)} dubs (12 clips x {len(LOCALES)} locales), sandbox workers: {WORKERS}")
    print(
        f"  batch:               {batch_wall:6.2f} s  ideal {batch_ideal:6.2f} s  "
        f"ratio {batch_wall / batch_ideal:.2f}x  (target <= 1.15x)"
    )
    print(
        f"  one file at a time:  {loop_wall:6.2f} s  ideal {loop_ideal:6.2f} s  "
        f"ratio {loop_wall / loop_ideal:.2f}x"
    )
    print(f"  batch vs one file at a time: {loop_wall / batch_wall:.2f}x faster")
    batch.close()
    api.close()


def memory(box: Box, folder: Path, sizes: list[int]) -> None:
    api = box.start()
    print("peak resident memory of a process dubbing N rows (VmHWM):")
    for rows in sizes:
        files = folder / f"audio{rows}"
        files.mkdir()
        for i in range(rows // 4):
            samples.speech_recording(files / f"line{i:04d}.wav", f"Line {i}.")
        started = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                MEMORY_RUN,
                api.transport._secret,
                api.base_url,
                str(files),
                str(folder / f"out{rows}"),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        count, peak_kb = done.stdout.split()
        print(
            f"  {count:>5} rows: {int(peak_kb) / 1024:7.1f} MiB  ({time.perf_counter() - started:.0f} s)"
        )
    api.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory", default="40,200,1000", help="row counts ('' skips it)")
    parser.add_argument("--no-wall", action="store_true", help="skip the wall-time run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        folder = Path(tmp)
        box = Box(folder / "sandbox")
        try:
            if not args.no_wall:
                wall_time(box, folder)
            sizes = [int(n) for n in args.memory.split(",") if n.strip()]
            if sizes:
                memory(box, folder, sizes)
        finally:
            box.stop()


if __name__ == "__main__":
    main()
