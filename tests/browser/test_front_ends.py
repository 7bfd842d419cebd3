"""Notebooks 02 and 06 in the front ends whose page is a Jupyter app's, as a remote browser
sees them: Notebook 7 (real), Colab and VS Code (emulated), and dubkit installed beside Colab's
ipywidgets. Voila, marimo and a static export: test_voila_marimo_export.py.

Each front end runs the repo's notebooks unchanged (copies), and a person's checks follow:
every cell runs, no error shows, every player gets a source and loads, each one plays (time
moves on), the dubbed video seeks, and a task cell reaches "finished" by itself. What reached
each player is read back from the browser and probed with ffmpeg: sound or a picture, and,
under VS Code, never AAC or Opus.

Emulated (see :mod:`front_ends`): Colab and VS Code, in a page that reaches no kernel port and
no ``/proxy/``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from accessibility import assert_no_violations, assert_players_named
from front_ends import (
    COLAB_PAGE,
    VSCODE_PAGE,
    ColabProxy,
    block_proxy_paths,
    colab_kernel,
    colab_venv,
    init_page,
    vscode_kernel,
)
from jupyter_servers import NOTEBOOKS, Server, start_lab
from lab_page import OUTPUTS, LabNotebook, NotebookSevenPage
from page_checks import block_other_loopback_ports, screenshot, shown_errors
from player_checks import check_players, check_task_cell_finished

pytestmark = pytest.mark.browser

LESSONS = ("02_text_to_speech.ipynb", "06_translate_and_dub.ipynb")
HOSTED = ("notebook7", "colab", "vscode")  # front ends whose page is a Jupyter app's


@dataclass
class Host:
    """A front end whose page around the outputs is a Jupyter app (real or standing in)."""

    name: str
    server: Server
    opens: type[LabNotebook]
    allowed: set[int] = field(default_factory=set)  # ports its browser reaches
    page_script: tuple[str, object] | None = None
    proxy: ColabProxy | None = None


@pytest.fixture(scope="module")
def colab_python(tmp_path_factory) -> Path:
    """Colab's widgets: ipywidgets 7.7.1 installed first, dubkit beside it."""
    return colab_venv(tmp_path_factory.mktemp("colab-venv") / "venv")


@pytest.fixture(scope="module", params=HOSTED)
def host(request, tmp_path_factory, shots) -> Iterator[Host]:
    base = tmp_path_factory.mktemp(f"front-end-{request.param}")
    root = base / "root"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    log = shots / f"{request.param}-server.log"
    if request.param == "notebook7":
        server = start_lab(root, base / "home", log, app="notebook")
        yield Host("notebook7", server, NotebookSevenPage, {server.port})
        server.stop()
        return
    if request.param == "colab":
        proxy = ColabProxy()
        kernel = colab_kernel(str(request.getfixturevalue("colab_python")))
        server = start_lab(root, base / "home", log, kernel=kernel)
        yield Host(
            "colab", server, LabNotebook, {server.port, proxy.port}, (COLAB_PAGE, proxy.port), proxy
        )
        server.stop()
        proxy.stop()
        return
    # VS Code talks to its kernel directly: no IOPub rate limit stands in between.
    server = start_lab(
        root,
        base / "home",
        log,
        kernel=vscode_kernel(),
        extra=("--ServerApp.iopub_data_rate_limit=0",),
    )
    yield Host("vscode", server, LabNotebook, {server.port}, (VSCODE_PAGE, None))
    server.stop()


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_lesson_plays_in_the_front_end(host, lesson, page, shots):
    if host.page_script:
        init_page(page, *host.page_script)
    if host.name == "notebook7":
        refused = block_other_loopback_ports(page, host.server.port)
    else:
        refused = block_proxy_paths(page, host.allowed)
    notebook = host.opens(page, host.server, lesson)
    notebook.open()
    try:
        report = notebook.run_all()
        errors = [e for c in report.code_cells for e in c["errors"]]
        assert not errors, errors
        assert not shown_errors(page, OUTPUTS)
        players = f"{OUTPUTS} audio, {OUTPUTS} video"
        states = check_players(page, players, refused, vscode=host.name == "vscode")
        if lesson.startswith("06"):
            check_task_cell_finished(page, f"{OUTPUTS} table.dubkit-tasks")
        if host.proxy is not None:  # Colab: the sandbox's files came through its port proxy
            proxied = [s for s in states if s["resolved"] == "colab"]
            assert bool(proxied) == bool(host.proxy.served), (proxied, host.proxy.served)
        assert not [u for u in refused if "/files/" in u and "/proxy/" not in u], refused[:5]
        assert_no_violations(page, f"{lesson} in {host.name}")
        assert_players_named(page, f"{lesson} in {host.name}")
        screenshot(page, shots / f"{host.name}-{Path(lesson).stem}.png")
    finally:
        notebook.shutdown_kernel()


def test_dubkit_installs_beside_colabs_ipywidgets_and_runs_its_lessons(colab_python, tmp_path):
    """Colab's first cell, ``pip install dubkit``, keeps its ipywidgets 7.7.1; notebooks 00 and
    02 then run, unchanged, in a kernel with Colab's marks."""
    import nbformat
    from jupyter_servers import write_kernel_spec
    from nbclient import NotebookClient

    shown = subprocess.run(
        [str(colab_python), "-c", "import ipywidgets, dubkit; print(ipywidgets.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout.strip() == "7.7.1"
    write_kernel_spec(tmp_path / "share" / "kernels" / "colab", colab_kernel(str(colab_python)))
    env = {"JUPYTER_PATH": str(tmp_path / "share"), "DUBKIT_SANDBOX_DIR": str(tmp_path / "sbx")}
    for lesson in ("00_quickstart.ipynb", "02_text_to_speech.ipynb"):
        notebook = nbformat.read(NOTEBOOKS / lesson, as_version=4)
        with pytest.MonkeyPatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            NotebookClient(notebook, timeout=600, kernel_name="colab").execute(cwd=str(NOTEBOOKS))
        errors = [
            o for c in notebook.cells for o in c.get("outputs", []) if o.output_type == "error"
        ]
        assert not errors, f"{lesson}: {errors[0].ename}: {errors[0].evalue}"
        if lesson.startswith("00"):  # its first cell shows the client, whose repr says so
            shown = json.dumps([c.get("outputs", []) for c in notebook.cells])
            assert "Google Colab, via Colab's port proxy" in shown
