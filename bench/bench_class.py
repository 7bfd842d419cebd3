"""A class of students at once on one sandbox, against one student doing their work in a row
(issue 26, item 5).

    python bench/bench_class.py                          # 30 students; the baseline: 30 in a row
    python bench/bench_class.py --students 3 --sequential 3
    python bench/bench_class.py --sequential 10          # 10 in a row, scaled to 30 (it says so)
    python bench/bench_class.py --no-fairness            # without item 2's figures

Each student has a key of their own and a ``dubkit.Client`` in a thread of their own, and all
start together on one standalone sandbox (``_box.Box``, default timing and limits, as the
other benches): list the voice catalogue, speak 5 one-line TTS calls, translate 5 lines, clone
a voice from a short recording, upload a clip of a few seconds and dub it into French, waiting
for the task. Every student's lines, recording and clip differ, so no cache or upload by hash
answers for another's work. The baseline is the same work done N times in a row on one key in
a second fresh sandbox (a fresh client each time, as a student re-running the notebooks), so
each sandbox's peak memory (``VmHWM``, a lifetime peak) is its own run's. It prints wall time
and the sandbox's CPU (with the ffmpeg it ran) of the class against the row and their ratio,
p50/p95 of each step, peak memory, errors by type, and isolation: after the class, each
student's task list must hold none of another student's task ids. With fairness on, a third
sandbox measures item 2 in small: key B's short dub alone against behind key A's six long
dubs, and B's one-line TTS p95 idle against while A's six run. ``--embedded K`` (default 3)
measures the other set-up, one sandbox per student embedded in their kernel (Binder, a
Kubernetes hub): K students, each in a process of their own, one after another; it prints each
one's median wall time, CPU and peak memory.

Target: no errors and 0 isolation violations; the class's CPU near the row's (no cost per
student beyond the work), its wall time well under the row's (the work overlaps on the
pool); B's dub behind A's six near B's alone, and B's TTS p95 near idle.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from _box import Box

import dubkit
from dubkit import samples

NARRATOR = "sv_s1_en_us_clear_f"
STEPS = ("voices", "tts x5", "translate x5", "clone", "upload", "dub", "student total")
CALLS = ("tts call", "translate call")
THINGS = ("lamp", "boat", "bridge", "market", "garden")
LONG_TARGETS = ("fr-FR", "de-DE", "es-ES", "it-IT", "pt-BR", "nl-NL")
T = TypeVar("T")


# ---------------------------------------------------------------------------- material


@dataclass
class Kit:
    """One student's own media, made before any sandbox starts (not timed)."""

    index: int
    clip: Path
    recording: Path
    script: str


def kit_of(folder: Path, i: int) -> Kit:
    """Student ``i``'s kit in ``folder`` (made by :func:`make_kits`)."""
    script = (
        f"My name is student {i}. The morning train was late again, so we walked along the river."
    )
    return Kit(i, folder / f"clip{i:02d}.mp4", folder / f"voice{i:02d}.wav", script)


def make_kits(folder: Path, count: int) -> list[Kit]:
    folder.mkdir(parents=True, exist_ok=True)

    def one(i: int) -> Kit:
        kit = kit_of(folder, i)
        samples.speech_recording(
            kit.recording, kit.script, variant="m3", rate_wpm=130, pitch=20 + i % 40
        )
        samples.narrated_clip(kit.clip, ["The harbour wakes.", f"Student {i} waves at the boats."])
        return kit

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(one, range(count)))


# ---------------------------------------------------------------------------- one student


@dataclass
class Record:
    """What one student's workload took and made."""

    times: dict[str, list[float]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    first_error: dict[str, str] = field(default_factory=dict)
    task_ids: set[str] = field(default_factory=set)

    def took(self, name: str, seconds: float) -> None:
        self.times.setdefault(name, []).append(seconds)

    def merge(self, other: Record) -> None:
        for name, values in other.times.items():
            self.times.setdefault(name, []).extend(values)
        self.errors.update(other.errors)
        for name, message in other.first_error.items():
            self.first_error.setdefault(name, message)
        self.task_ids |= other.task_ids


def step(record: Record, name: str, work: Callable[[], T]) -> T | None:
    started = time.perf_counter()
    try:
        made = work()
    except Exception as exc:  # counted, not raised: the next step still runs
        kind = type(exc).__name__
        record.errors[kind] += 1
        record.first_error.setdefault(kind, f"{name}: {str(exc)[:160]}")
        return None
    record.took(name, time.perf_counter() - started)
    return made


def workload(client: dubkit.Client, kit: Kit) -> Record:
    record, i, started = Record(), kit.index, time.perf_counter()
    step(record, "voices", lambda: len(client.voices.presets()))

    def tts() -> None:
        for n, thing in enumerate(THINGS):
            began = time.perf_counter()
            said = client.tts.create(
                [f"Student {i} points at the {thing}, number {n + 1}."], voice=NARRATOR
            )
            record.took("tts call", time.perf_counter() - began)
            if not said[0].ok:
                raise dubkit.DubkitError(f"line not spoken: {said[0].error_message}")
            record.task_ids.update(said.task_ids)

    def translate() -> None:
        for n, thing in enumerate(THINGS):
            began = time.perf_counter()
            done = client.translate.create(
                [f"Student {i} found the {thing} at {n + 7} o'clock."],
                source="en-US",
                target="fr-FR",
            )
            record.took("translate call", time.perf_counter() - began)
            if done.task_id:
                record.task_ids.add(done.task_id)

    def clone() -> None:
        made = client.clones.create(
            kit.recording, name=f"student{i:02d} voice", locale="en-US", text=kit.script
        )
        if made.task_id:
            record.task_ids.add(made.task_id)

    step(record, "tts x5", tts)
    step(record, "translate x5", translate)
    step(record, "clone", clone)
    material = step(record, "upload", lambda: client.materials.upload(kit.clip, progress=False))
    if material is not None:

        def dub() -> None:
            task = client.dubbing.create(material, source="en-US", target="fr-FR")
            record.task_ids.add(task.task_id)
            task.wait(timeout=1800)

        step(record, "dub", dub)
    if not record.errors:
        record.took("student total", time.perf_counter() - started)
    return record


# ---------------------------------------------------------------------------- runs


@dataclass
class Run:
    wall: float
    cpu: float  # the sandbox's own, with its waited-for children (ffmpeg)
    cpu_own: float  # the sandbox process alone
    peak_mb: float
    idle_peak_mb: float
    record: Record
    isolation: tuple[int, int, int, int, int] | None = None  # foreign unknown missing lists ids


def cpu_pair(box: Box) -> tuple[float, float]:
    return box.cpu_seconds(children=True), box.cpu_seconds()


def class_run(folder: Path, kits: list[Kit]) -> Run:
    box = Box(folder / "class")
    box.start()
    try:
        handle = box.handle
        idle_peak = box.memory_kb()["VmHWM"] / 1024
        keys = [handle.create_key(name=f"student{k.index:02d}", credits=1e9) for k in kits]
        clients = [dubkit.Client(key, handle.url) for key in keys]
        records: list[Record | None] = [None] * len(kits)
        gate = threading.Barrier(len(kits) + 1)

        def student(n: int) -> None:
            gate.wait()
            try:
                records[n] = workload(clients[n], kits[n])
            except Exception as exc:  # a bug in the bench itself: count it, keep the class
                broken = Record()
                broken.errors[type(exc).__name__] += 1
                broken.first_error[type(exc).__name__] = f"student: {exc}"[:160]
                records[n] = broken

        threads = [threading.Thread(target=student, args=(n,)) for n in range(len(kits))]
        for thread in threads:
            thread.start()
        cpu, cpu_own = cpu_pair(box)
        started = time.perf_counter()
        gate.wait()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        cpu_after, cpu_own_after = cpu_pair(box)
        peak = box.memory_kb()["VmHWM"] / 1024
        total = Record()
        for record in records:
            assert record is not None
            total.merge(record)
        owner = {tid: n for n, r in enumerate(records) if r for tid in r.task_ids}
        foreign = unknown = missing = seen = 0
        for n, (client, record) in enumerate(zip(clients, records)):
            assert record is not None
            try:
                listed = {t.task_id for t in client.tasks.list() if t.task_id}
            except Exception as exc:
                total.errors[type(exc).__name__] += 1
                total.first_error.setdefault(type(exc).__name__, f"tasks.list: {exc}"[:160])
                continue
            foreign += sum(1 for tid in listed if owner.get(tid, n) != n)
            unknown += sum(1 for tid in listed if tid not in owner)
            missing += len(record.task_ids - listed)
            seen += len(listed)
        for client in clients:
            client.close()
        return Run(
            wall,
            cpu_after - cpu,
            cpu_own_after - cpu_own,
            peak,
            idle_peak,
            total,
            (foreign, unknown, missing, len(clients), seen),
        )
    finally:
        box.stop()


def row_run(folder: Path, kits: list[Kit]) -> Run:
    box = Box(folder / "row")
    box.start()
    try:
        handle = box.handle
        idle_peak = box.memory_kb()["VmHWM"] / 1024
        key = handle.create_key(name="student-alone", credits=1e9)
        total = Record()
        cpu, cpu_own = cpu_pair(box)
        started = time.perf_counter()
        for kit in kits:
            with dubkit.Client(key, handle.url) as client:  # a fresh run of the notebooks
                total.merge(workload(client, kit))
        wall = time.perf_counter() - started
        cpu_after, cpu_own_after = cpu_pair(box)
        peak = box.memory_kb()["VmHWM"] / 1024
        return Run(wall, cpu_after - cpu, cpu_own_after - cpu_own, peak, idle_peak, total)
    finally:
        box.stop()


# ---------------------------------------------------------------------------- fairness


@dataclass
class Fairness:
    short_alone: float
    short_behind: float
    six: float
    tts_idle: list[float]
    tts_busy: list[float]
    long_seconds: float
    short_seconds: float
    errors: Counter[str]


def fairness_run(folder: Path, long_lines: int) -> Fairness:
    box = Box(folder / "fair")
    box.start()
    errors: Counter[str] = Counter()
    try:
        handle = box.handle
        handle.set_throttle(rate=0, concurrency=0)  # the pipeline, not the throttle (as item 2)
        a = dubkit.Client(handle.create_key("student-a", credits=1e9), handle.url)
        b_key = handle.create_key("student-b", credits=1e9)
        b = dubkit.Client(b_key, handle.url)
        b_tts = dubkit.Client(b_key, handle.url)  # B's TTS from a thread of its own
        lines = [
            f"This is sentence number {i} of a long narration about the harbour and its boats."
            for i in range(long_lines)
        ]
        long_clip = samples.narrated_clip(folder / "long.mp4", lines, pause=1.2)
        short_clip = samples.narrated_clip(
            folder / "short.mp4", ["The harbour wakes.", "Boats go out."]
        )
        long_one = a.materials.upload(long_clip, progress=False)
        short_one = b.materials.upload(short_clip, progress=False)
        counter = iter(range(10**6))

        def one_tts() -> float:
            n = next(counter)
            began = time.perf_counter()
            b_tts.tts.create([f"Line {n}: the tide turns at {n % 12 + 1}."], voice=NARRATOR)
            return time.perf_counter() - began

        def timed_dub(client: dubkit.Client, material: dubkit.Material, target: str) -> float:
            began = time.monotonic()
            client.dubbing.create(material, source="en-US", target=target).wait(timeout=1800)
            return time.monotonic() - began

        short_alone = timed_dub(b, short_one, "fr-FR")
        tts_idle = [one_tts() for _ in range(20)]

        busy: list[float] = []
        six_done = threading.Event()

        def probe() -> None:  # B's one-line TTS, one after another, while A's six run
            while not six_done.is_set():
                try:
                    took = one_tts()
                except Exception as exc:
                    errors[type(exc).__name__] += 1
                    continue
                if not six_done.is_set():
                    busy.append(took)

        started = time.monotonic()
        queue = [a.dubbing.create(long_one, source="en-US", target=t) for t in LONG_TARGETS]
        prober = threading.Thread(target=probe)
        prober.start()
        short_behind = timed_dub(b, short_one, "fr-FR")
        for task in queue:
            try:
                task.wait(timeout=1800)
            except Exception as exc:
                errors[type(exc).__name__] += 1
        six = time.monotonic() - started
        six_done.set()
        prober.join()
        for client in (a, b, b_tts):
            client.close()
        return Fairness(
            short_alone,
            short_behind,
            six,
            tts_idle,
            busy,
            long_one.duration_seconds or 0,
            short_one.duration_seconds or 0,
            errors,
        )
    finally:
        box.stop()


# ---------------------------------------------------------------------------- printing


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def spread(values: list[float] | None) -> str:
    if not values:
        return f"{'-':>7} {'-':>7}"
    return f"{statistics.median(values):7.2f} {p95(values):7.2f}"


def errors_text(record: Record) -> str:
    if not record.errors:
        return "0"
    kinds = ", ".join(f"{k} {v}" for k, v in record.errors.most_common())
    return f"{sum(record.errors.values())} ({kinds})"


def report(students: int, repeats: int, group: Run, row: Run) -> None:
    scale = students / repeats
    scaled = f"{repeats} in a row, x{scale:.2f}" if repeats != students else f"{students} in a row"
    if repeats != students:
        print(
            f"NOTE: the baseline ran {repeats} students' work in a row; its wall and CPU are "
            f"scaled by {students}/{repeats} to {students} (its p50/p95 and peak are not)"
        )
    wall, cpu, own = row.wall * scale, row.cpu * scale, row.cpu_own * scale
    print(f"{'':30}{'class of ' + str(students):>16}{'one key: ' + scaled:>28}{'class/row':>11}")
    print(f"{'wall (s)':30}{group.wall:16.1f}{wall:28.1f}{group.wall / wall:10.2f}x")
    print(f"{'sandbox CPU with ffmpeg (s)':30}{group.cpu:16.1f}{cpu:28.1f}{group.cpu / cpu:10.2f}x")
    print(
        f"{'  of it the sandbox alone (s)':30}{group.cpu_own:16.1f}{own:28.1f}"
        f"{group.cpu_own / own:10.2f}x"
    )
    print(
        f"{'sandbox peak VmHWM (MB)':30}{group.peak_mb:16.0f}{row.peak_mb:28.0f}"
        f"{group.peak_mb / row.peak_mb:10.2f}x"
    )
    print(f"{'  VmHWM at start (MB)':30}{group.idle_peak_mb:16.0f}{row.idle_peak_mb:28.0f}")
    print()
    print(f"{'step (s)':30}{'class p50     p95':>20}{'in a row p50     p95':>26}")
    for name in STEPS + CALLS:
        print(
            f"{name:30}     {spread(group.record.times.get(name))}"
            f"          {spread(row.record.times.get(name))}"
        )
    print()
    print(f"errors: class {errors_text(group.record)}; in a row {errors_text(row.record)}")
    for name, message in {**row.record.first_error, **group.record.first_error}.items():
        print(f"  first {name}: {message}")
    assert group.isolation is not None
    foreign, unknown, missing, checked, seen = group.isolation
    print(
        f"isolation: {foreign} foreign task ids among {seen} listed by {checked} students "
        f"(target 0); {unknown} unknown, {missing} of their own not listed"
    )


def report_fairness(fair: Fairness) -> None:
    print()
    print(
        f"fairness (item 2, small): B's {fair.short_seconds:.0f} s clip against A's six "
        f"{fair.long_seconds:.0f} s clips, throttle off"
    )
    print(f"  B's short dub alone:              {fair.short_alone:6.1f} s")
    print(
        f"  B's short dub behind A's six:     {fair.short_behind:6.1f} s  "
        f"({fair.short_behind / fair.short_alone:.1f}x alone); A's six took {fair.six:.1f} s"
    )
    if fair.tts_busy:
        ratio = f"({p95(fair.tts_busy) / p95(fair.tts_idle):.1f}x idle)"
        busy = f"{p95(fair.tts_busy):6.2f} s  {ratio}, n={len(fair.tts_busy)}"
    else:
        busy = "   -   (no call ended while A's six ran)"
    print(
        f"  B's TTS p95 idle:                 {p95(fair.tts_idle):6.2f} s  n={len(fair.tts_idle)}"
    )
    print(f"  B's TTS p95 while A's six run:    {busy}")
    if fair.errors:
        print(f"  errors: {dict(fair.errors)}")


def as_student(kit: Kit) -> None:
    """The child of ``--embedded``: one student with the sandbox embedded in this process, as
    a kernel on Binder or a Kubernetes hub has it; prints its own cost as one JSON line."""
    started = time.perf_counter()
    client = dubkit.connect(quiet=True)
    record = workload(client, kit)
    used = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    status = Path("/proc/self/status").read_text()
    peak = next(line for line in status.splitlines() if line.startswith("VmHWM"))
    print(
        json.dumps(
            {
                "wall": time.perf_counter() - started,
                "cpu": used.ru_utime + used.ru_stime + children.ru_utime + children.ru_stime,
                "peak_mb": int(peak.split()[1]) / 1024,
                "errors": sum(record.errors.values()),
            }
        )
    )


def embedded_run(folder: Path, kits: list[Kit]) -> list[dict[str, float]]:
    """Each kit's student in a process of their own with an embedded sandbox, one after another
    (so each one's cost is its own, not shared with the others')."""
    costs = []
    for kit in kits:
        env = {**os.environ, "DUBKIT_SANDBOX_DIR": str(folder / f"embedded{kit.index:02d}")}
        for name in ("DUBKIT_API_KEY", "DUBKIT_BASE_URL"):
            env.pop(name, None)
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--as-student",
                str(kit.index),
                "--media",
                str(kit.clip.parent),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        costs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return costs


def report_embedded(costs: list[dict[str, float]]) -> None:
    def median(name: str) -> float:
        return statistics.median(c[name] for c in costs)

    print(f"\none embedded sandbox per student ({len(costs)} students, each in its own process)")
    print(
        f"  per student, median: wall {median('wall'):.1f} s, CPU {median('cpu'):.1f} s "
        f"(with ffmpeg), peak memory {median('peak_mb'):.0f} MB "
        f"(max {max(c['peak_mb'] for c in costs):.0f} MB)"
    )
    print(f"  errors: {sum(int(c['errors']) for c in costs)}")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--students", type=int, default=30, help="students at once")
    options.add_argument(
        "--sequential", type=int, default=None, help="runs in a row (default: --students)"
    )
    options.add_argument("--no-fairness", action="store_true", help="skip item 2's figures")
    options.add_argument("--long-lines", type=int, default=8, help="lines of A's long clip")
    options.add_argument(
        "--embedded",
        type=int,
        default=3,
        help="students measured with a sandbox each, embedded in their process (0: skip)",
    )
    options.add_argument("--as-student", type=int, default=None, help=argparse.SUPPRESS)
    options.add_argument("--media", type=Path, default=None, help=argparse.SUPPRESS)
    args = options.parse_args()
    if args.as_student is not None:  # a child of --embedded
        as_student(kit_of(args.media, args.as_student))
        return
    students = max(1, args.students)
    repeats = max(1, min(args.sequential or students, students))
    folder = Path(tempfile.mkdtemp(prefix="bench-class-"))
    try:
        load = os.getloadavg()
        print(
            f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} cores)"
        )
        started = time.perf_counter()
        kits = make_kits(folder / "media", students)
        print(
            f"{students} students' clips and recordings made in {time.perf_counter() - started:.1f} s"
        )
        sys.stdout.flush()
        group = class_run(folder, kits)
        row = row_run(folder, kits[:repeats])
        report(students, repeats, group, row)
        if args.embedded:
            report_embedded(embedded_run(folder, kits[: args.embedded]))
        if not args.no_fairness:
            report_fairness(fairness_run(folder, args.long_lines))
        load = os.getloadavg()
        print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
