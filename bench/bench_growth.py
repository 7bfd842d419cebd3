"""Does the sandbox slow down as it fills? Measured in one run (issue 15, item 2).

    python bench/bench_growth.py [--levels 0,20000,100000,300000]

A standalone sandbox (``dubkit sandbox``) runs in its own process so its CPU time can be read
from /proc. At each level it is stopped, its database is filled to that many stored tasks (with
a tenth as many materials and cloned voices), and it is started again; then, over real HTTP:

* ``create``: a sync ``translate.create`` (the cheapest create), median ms (each figure is
  the lowest of three rounds' medians);
* ``detail``: ``tasks/detail`` of one task, median ms;
* ``list``: the first page of 20 of ``tasks/list``, ``materials/list`` and ``voice/clone/list``;
* ``idle CPU``: the sandbox's CPU time over 5 idle seconds, as a percentage of one core.

The baseline is the same sandbox empty (level 0), measured in the same run; the ratios are
each figure over it (target: flat within 1.5x). Stored rows are copies of rows the API made at
level 0 (one of each kind: sync and async tasks with their outbox rows, a material, a clone),
written straight into SQLite because making 300,000 tasks over HTTP takes too long to wait for.
It talks to whatever ``dubkit`` is importable (PYTHONPATH picks an older checkout to compare).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _box import Box  # bench/_box.py

import dubkit
from dubkit import samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", default="0,20000,100000,300000")
    levels = [int(n) for n in parser.parse_args().levels.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-growth-") as tmp:
        box = Box(Path(tmp) / "box")
        client = box.start()
        probe = templates(client, Path(tmp))
        box.stop()
        rows: list[dict[str, float]] = []
        stored = 0
        try:
            for level in levels:
                fill(box.data_dir / "sandbox.sqlite3", stored, level)
                stored = level
                client = box.start()
                rows.append(measure(box, client, probe))
                box.stop()
                print(_line(level, rows[-1], rows[0]), flush=True)
        finally:
            box.stop()


def templates(client: dubkit.Client, tmp: Path) -> str:
    """One stored row of each kind to copy; the id of a task whose detail is polled."""
    client.translate.create(["Hello"], source="en-US", target="fr-FR")
    probe = client.translate.create_async(["Hello"], source="en-US", target="fr-FR")
    probe.wait()
    recording = samples.speech_recording(tmp / "voice.wav", "A sample of a voice to copy.")
    client.clones.create(recording, name="template")
    return probe.task_id


def fill(db_path: Path, have: int, want: int) -> None:
    """Copy template rows until ``want`` tasks are stored (materials and clones: a tenth)."""
    if want <= have:
        return
    db = sqlite3.connect(db_path)
    db.row_factory = sqlite3.Row
    with db:
        _copy(db, "tasks", "task_id", want - have, _task_copier(db))
        extra = want // 10 - have // 10
        _copy(db, "materials", "material_id", extra, _renamer("material_id", "file_hash"))
        _copy(db, "cloned_voices", "voice_id", extra, _renamer("voice_id"))
    db.close()


def _copy(
    db: sqlite3.Connection,
    table: str,
    key: str,
    count: int,
    copier: Callable[[dict[str, Any], int], dict[str, Any]],
) -> None:
    template = [dict(r) for r in db.execute(f"SELECT * FROM {table} ORDER BY seq LIMIT 4")]
    start = db.execute(f"SELECT MAX(seq) FROM {table}").fetchone()[0]
    batch: list[dict[str, Any]] = []
    for i in range(count):
        row = copier(dict(template[i % len(template)]), start + 1 + i)
        batch.append(row)
        if len(batch) == 5000 or i == count - 1:
            columns = list(batch[0])
            db.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
                f"({', '.join('?' * len(columns))})",
                [[r[c] for c in columns] for r in batch],
            )
            batch.clear()


def _renamer(*unique: str) -> Callable[[dict[str, Any], int], dict[str, Any]]:
    def copy(row: dict[str, Any], seq: int) -> dict[str, Any]:
        for column in unique:
            row[column] = uuid.uuid4().hex
        row["seq"] = seq
        return row

    return copy


def _task_copier(db: sqlite3.Connection) -> Callable[[dict[str, Any], int], dict[str, Any]]:
    """Tasks copied with their outbox row, as an ended async task has one."""
    outbox = {r["task_id"]: dict(r) for r in db.execute("SELECT * FROM outbox").fetchall()}

    def copy(row: dict[str, Any], seq: int) -> dict[str, Any]:
        template_id = row["task_id"]
        row.update(task_id=uuid.uuid4().hex, pipeline_key=uuid.uuid4().hex, seq=seq)
        if template_id in outbox:
            event = {k: v for k, v in outbox[template_id].items() if k != "id"}
            event["task_id"] = row["task_id"]
            db.execute(
                f"INSERT INTO outbox ({', '.join(event)}) VALUES ({', '.join('?' * len(event))})",
                list(event.values()),
            )
        return row

    return copy


def measure(box: Box, client: dubkit.Client, probe: str) -> dict[str, float]:
    def median_ms(call: Callable[[], Any], n: int = 40) -> float:
        """The lowest of three rounds' medians: the round least disturbed by the machine."""
        call()  # warm: first touch of pages and caches
        rounds = []
        for _ in range(3):
            times = []
            for _ in range(n):
                started = time.perf_counter()
                call()
                times.append((time.perf_counter() - started) * 1000)
            rounds.append(statistics.median(times))
        return min(rounds)

    figures = {
        "create": median_ms(
            lambda: client.call(
                "translate.create",
                {"language": {"source": "en-US", "target": "fr-FR"}, "segments": [{"text": "Hi"}]},
            ),
            n=30,
        ),
        "detail": median_ms(lambda: client.call("tasks.detail", {"taskId": probe})),
        "tasks/list": median_ms(
            lambda: client.call("tasks.list", {"currentPage": 1, "pageSize": 20})
        ),
        "materials/list": median_ms(
            lambda: client.call("materials.list", {"currentPage": 1, "pageSize": 20})
        ),
        "clone/list": median_ms(
            lambda: client.call("voices.clones", {"currentPage": 1, "pageSize": 20})
        ),
    }
    time.sleep(1)  # let the answers' after-effects settle before watching idle time
    before = box.cpu_seconds()
    time.sleep(5)
    figures["idle CPU %"] = (box.cpu_seconds() - before) / 5 * 100
    return figures


def _line(level: int, figures: dict[str, float], base: dict[str, float]) -> str:
    parts = []
    for name, value in figures.items():
        unit = "" if name.endswith("%") else " ms"
        ratio = f" ({value / base[name]:.2f}x)" if level and base[name] > 0.05 else ""
        parts.append(f"{name} {value:.1f}{unit}{ratio}")
    return f"{level:>7,} tasks: " + ", ".join(parts)


if __name__ == "__main__":
    main()
