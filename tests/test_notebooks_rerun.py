"""Every notebook runs twice in a row on one sandbox data dir, and says the same both times.

A newcomer runs the notebooks, then runs them again: the embedded sandbox keeps its state in
``DUBKIT_SANDBOX_DIR`` (``~/.cache/dubkit/sandbox`` by default), so the second run meets the
clones, materials and tasks the first one left. This test executes the notebooks in order with
nbclient, then all of them again, in one fresh data dir, and compares each cell's outputs of
the two runs the way nbval compares them with the saved ones (same sanitizers from
``notebooks/sanitize.cfg``, same output keys skipped, ``NBVAL_IGNORE_OUTPUT`` cells not
compared).

Cost: every notebook runs twice, one after another (about 95 s on a 2-CPU machine, twice what
nbval spends on them; the runtime is printed, ``-s`` to see it). They are not run concurrently:
two kernels cannot share one data dir (the second embedded sandbox would fall back to a
temporary one, and the test would prove nothing).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbval.plugin import (
    coalesce_streams,
    find_comment_markers,
    find_metadata_tags,
    get_sanitize_patterns,
    transform_streams_for_comparison,
)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SANITIZE = get_sanitize_patterns((ROOT / "notebooks" / "sanitize.cfg").read_text())
# What nbval leaves out of a comparison (nbval.plugin.IPyNbFile.skip_compare, without nbdime).
SKIP_COMPARE = {
    "metadata",
    "traceback",
    "prompt_number",
    "output_type",
    "name",
    "execution_count",
    "application/vnd.jupyter.widget-view+json",
    "image/png",
    "image/jpeg",
}
CELL_TIMEOUT = 600


def sanitize(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    for regex, replace in SANITIZE:
        value = re.sub(regex, replace, value)
    return value


def markers(cell: nbformat.NotebookNode) -> dict[str, bool]:
    """nbval's options of a cell, from its comment markers and metadata tags."""
    options = dict(find_comment_markers(cell.source))
    options.update(find_metadata_tags(cell.metadata))
    return options


def checked(cell: nbformat.NotebookNode) -> bool:
    """False for cells nbval would not compare (``NBVAL_IGNORE_OUTPUT``, ``NBVAL_SKIP``)."""
    options = markers(cell)
    return options.get("check", True) and not options.get("skip", False)


def comparable(outputs: list[nbformat.NotebookNode]) -> dict[str, list[Any]]:
    """A cell's outputs as nbval compares them: by key (MIME types flattened), sanitized."""
    flat: dict[str, list[Any]] = defaultdict(list)
    for output in transform_streams_for_comparison(
        coalesce_streams([nbformat.from_dict(o) for o in outputs])
    ):
        for key, value in output.items():
            if key in SKIP_COMPARE:
                continue
            if key == "data":
                for mime, data in value.items():
                    if mime not in SKIP_COMPARE:
                        flat[mime].append(sanitize(data))
            else:
                flat[key].append(sanitize(value))
    return dict(flat)


async def execute(path: Path, data_dir: Path) -> tuple[nbformat.NotebookNode, float]:
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code" and markers(cell).get("skip"):
            cell.source = ""  # nbval does not run these either
    env = {**os.environ, "DUBKIT_SANDBOX_DIR": str(data_dir)}
    for name in ("DUBKIT_API_KEY", "DUBKIT_BASE_URL"):
        env.pop(name, None)
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    started = time.monotonic()
    await client.async_execute(env=env)
    return notebook, time.monotonic() - started


def differences(
    name: str, first: nbformat.NotebookNode, second: nbformat.NotebookNode
) -> list[str]:
    found = []
    code = [(a, b) for a, b in zip(first.cells, second.cells) if a.cell_type == "code"]
    for index, (a, b) in enumerate(code):
        if not checked(a):
            continue
        left, right = comparable(a.outputs), comparable(b.outputs)
        for key in sorted(k for k in set(left) | set(right) if left.get(k) != right.get(k)):
            found.append(
                f"{name} code cell {index}, {key}: "
                f"{first_difference(left.get(key), right.get(key))}"
            )
    return found


def first_difference(first: Any, second: Any) -> str:
    """The first line where two runs' outputs of one kind differ (run 1 -> run 2)."""
    lines = [
        ("\n".join(map(str, v)) if v is not None else "<none>").splitlines()
        for v in (first, second)
    ]
    for number, (a, b) in enumerate(itertools.zip_longest(*lines, fillvalue="<no line>"), 1):
        if a != b:
            return f"line {number}: {a[:200]!r} -> {b[:200]!r}"
    return "same lines, different values"


@pytest.mark.timeout(1800)  # twice every notebook; each cell still has CELL_TIMEOUT
def test_every_notebook_runs_twice_on_one_data_dir_with_the_same_outputs():
    data_dir = Path(tempfile.mkdtemp(prefix="dubkit-rerun-"))
    started = time.monotonic()

    async def run_all() -> list[tuple[nbformat.NotebookNode, float]]:
        return [await execute(path, data_dir) for path in NOTEBOOKS]

    # A thread of its own: the browser suite's Playwright may hold this thread's event loop.
    with ThreadPoolExecutor(1) as worker:
        first = worker.submit(asyncio.run, run_all()).result()
        second = worker.submit(asyncio.run, run_all()).result()
    elapsed = time.monotonic() - started
    problems = []
    for path, (a, _), (b, _) in zip(NOTEBOOKS, first, second):
        problems += differences(path.name, a, b)
    timings = ", ".join(
        f"{p.stem[:2]} {a:.0f}+{b:.0f}s" for p, (_, a), (_, b) in zip(NOTEBOOKS, first, second)
    )
    print(f"\nnotebooks run twice in {elapsed:.0f} s ({timings})")
    assert not problems, "\n".join(problems)
