"""The notebooks as a person meets them: the README's Lab command, saved notebooks that stand on
their own (run, no errors, no secrets, nothing bound to the machine that ran them), and every
notebook run twice on one data dir saying the same both times."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat
import pytest
import requests
from _waiting import PATIENCE, wait_for
from nbclient import NotebookClient
from nbval.plugin import (
    coalesce_streams,
    find_comment_markers,
    find_metadata_tags,
    get_sanitize_patterns,
    transform_streams_for_comparison,
)

REPO = Path(__file__).resolve().parent.parent


def readme_command(marker: str) -> str:
    lines = (REPO / "README.md").read_text().splitlines()
    return lines[lines.index(f"<!-- {marker} -->") + 2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").rglob("*.ipynb"))


SECRETS = re.compile(r"sk_sandbox_[0-9a-f]{8,}|whsec_[0-9a-f]{8,}|Bearer\s+sk_")


MACHINE_BOUND = re.compile(
    r"(https?://)?(127\.0\.0\.1|localhost|\[::1\])(:\d+)?/|"
    r"(/tmp/|/var/folders/|\\AppData\\Local\\Temp\\)"
)


ROOT = Path(__file__).resolve().parent.parent

RUNNING = r"data-status=\\*'running'|>running<"  # a task row's status (old pictures: bare)
KERNEL_ADDRESS = re.compile(
    r"""(src|href|poster)=\\*['"](/[^'"]*proxy/\d+|https?://(127\.0\.0\.1|localhost|\[::1\]))"""
)


TOUR_NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


SANITIZE = get_sanitize_patterns((ROOT / "notebooks" / "sanitize.cfg").read_text())


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


def test_notebook_06_explains_vt_before_showing_it_and_knows_its_clip_has_two_speakers():
    import re

    import nbformat

    notebook = nbformat.read(
        Path(__file__).parent.parent / "notebooks" / "06_translate_and_dub.ipynb", as_version=4
    )
    text = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert "dub a clip with two speakers" not in text and "a clone of the\n  narrator" not in text
    shows_vt = re.compile(r"[>\s']vt[<\s,')]")  # a table cell, a repr, printed text
    first_vt = next(
        i
        for i, c in enumerate(notebook.cells)
        if c.cell_type == "code"
        and any(shows_vt.search(str(o.get("text", "")) + str(o.get("data", {}))) for o in c.outputs)
    )
    explained = [c.source for c in notebook.cells[:first_vt] if c.cell_type == "markdown"]
    assert any("`vt`" in source and "video translation" in source for source in explained)


@pytest.mark.heavy  # starts JupyterLab: the quick loop leaves it out (README)
def test_the_readmes_lab_command_starts_lab_for_whoever_runs_it(tmp_path):
    """The command as written (its last step, with this environment's venv): Lab serves, also
    as root (containers, Codespaces, this CI), where plain ``jupyter lab`` refuses."""
    last_step = readme_command("lab-command").split("&&")[-1].strip()
    argv = shlex.split(last_step)
    assert argv[0] == ".venv/bin/jupyter"
    port = _free_port()
    argv = [
        str(Path(sys.executable).parent / "jupyter"),
        *argv[1:],
        "--no-browser",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=t0k",
    ]
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "BROWSER": "true",
    }
    log = tmp_path / "lab.log"
    with open(log, "wb") as sink:
        lab = subprocess.Popen(
            argv, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    try:

        def answered() -> requests.Response | bool | None:
            if lab.poll() is not None:
                return True  # it ended: nothing more to wait for
            try:
                return requests.get(
                    f"http://127.0.0.1:{port}/api/status",
                    headers={"Authorization": "token t0k"},
                    timeout=2,
                )
            except (requests.ConnectionError, requests.Timeout):  # not up yet, or busy starting
                return None

        status = wait_for(answered)
        status = status if isinstance(status, requests.Response) else None
        assert status is not None and status.status_code == 200, log.read_text()[-2000:]
    finally:
        lab.terminate()
        lab.wait(PATIENCE)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_notebook_holds_no_secret(path):
    text = path.read_text()
    assert not SECRETS.search(text), f"{path.name} stores a key or webhook secret"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_notebook_was_run_and_has_no_errors(path):
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert cells, f"{path.name} has no code"
    assert all(c.get("execution_count") for c in cells), f"{path.name} has unexecuted cells"
    errors = [o for c in cells for o in c["outputs"] if o["output_type"] == "error"]
    assert not errors, f"{path.name} saved an error: {errors[0].get('ename')}"
    warned = [
        "".join(o["text"])[:300]
        for c in cells
        for o in c["outputs"]
        if o.get("name") == "stderr" and "Warning" in "".join(o["text"])
    ]  # a library's warning in a lesson is noise a student cannot act on
    assert not warned, f"{path.name} saved a warning: {warned[0]}"


def test_every_notebook_is_listed_in_the_readme():
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    missing = [p.stem for p in NOTEBOOKS if p.parent.name == "notebooks" and p.stem not in readme]
    assert not missing, f"README does not mention {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_outputs_point_at_nothing_on_the_machine_that_ran_them(path):
    found = []
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        for output in cell.get("outputs", []):
            text = json.dumps(output)
            found += [
                f"cell {index}: ...{text[max(0, m.start() - 40) : m.end() + 40]}..."
                for m in MACHINE_BOUND.finditer(text)
            ]
    assert not found, f"{path.name} saved outputs naming this machine:\n" + "\n".join(found[:5])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_media_point_at_no_kernel_and_task_cells_show_their_last_state(path):
    """A saved notebook stands on its own (GitHub, nbviewer, an HTML export): no player,
    picture or link points at a kernel's loopback or a Jupyter server's ``/proxy/``, no task
    cell's picture is stuck at "running", and no widget state is kept (its views need the
    widget manager's script from a CDN; the HTML each widget output carries shows instead)."""
    notebook = json.loads(path.read_text())
    texts = [json.dumps(output) for cell in notebook["cells"] for output in cell.get("outputs", [])]
    pointing = [m.group(0) for text in texts for m in KERNEL_ADDRESS.finditer(text)]
    assert not pointing, f"{path.name}: {len(pointing)} media point at a kernel: {pointing[:3]}"
    stale = [t for t in texts if "dubkit-tasks" in t and re.search(RUNNING, t)]
    assert not stale, f"{path.name}: {len(stale)} task pictures say running"
    assert "widgets" not in notebook["metadata"], f"{path.name} keeps widget state"


@pytest.mark.heavy  # runs every notebook twice: the quick loop leaves it out (README)
@pytest.mark.timeout(1800)  # twice every notebook; each cell still has CELL_TIMEOUT
def test_every_notebook_runs_twice_on_one_data_dir_with_the_same_outputs():
    data_dir = Path(tempfile.mkdtemp(prefix="dubkit-rerun-"))
    started = time.monotonic()

    async def run_all() -> list[tuple[nbformat.NotebookNode, float]]:
        return [await execute(path, data_dir) for path in TOUR_NOTEBOOKS]

    # A thread of its own: the browser suite's Playwright may hold this thread's event loop.
    with ThreadPoolExecutor(1) as worker:
        first = worker.submit(asyncio.run, run_all()).result()
        second = worker.submit(asyncio.run, run_all()).result()
    elapsed = time.monotonic() - started
    problems = []
    for path, (a, _), (b, _) in zip(TOUR_NOTEBOOKS, first, second):
        problems += differences(path.name, a, b)
    timings = ", ".join(
        f"{p.stem[:2]} {a:.0f}+{b:.0f}s" for p, (_, a), (_, b) in zip(TOUR_NOTEBOOKS, first, second)
    )
    print(f"\nnotebooks run twice in {elapsed:.0f} s ({timings})")
    assert not problems, "\n".join(problems)
