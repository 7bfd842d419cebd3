"""Browser suite plumbing: one headless Chromium and one JupyterLab for the whole session.

Chromium is Debian's (``/usr/bin/chromium``, installed by ``.ci/run``), driven by Python
Playwright; Playwright's own browser download is never used. Without it every test here skips
and says why, except in CI (``DUBKIT_REQUIRE_BROWSER=1``), where that is a failure. Screenshots and server logs go to ``<artifacts>/browser/``; a failing test leaves a
screenshot of what the page showed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from _waiting import PATIENCE
from jupyter_servers import NOTEBOOKS, Server, start_lab

CHROMIUM = Path(os.environ.get("DUBKIT_CHROMIUM", "/usr/bin/chromium"))
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"report_{report.when}", report)  # lets the page fixture see a failure
    return report


def _cannot_run(reason: str) -> None:
    """Skip, saying why; in CI (DUBKIT_REQUIRE_BROWSER=1, set by .ci/run) fail instead."""
    if os.environ.get("DUBKIT_REQUIRE_BROWSER") == "1":
        pytest.fail(f"the browser suite must run here: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        _cannot_run(
            f"no Chromium at {CHROMIUM}: install Debian's (apt-get install -y "
            "chromium; .ci/run does) to run the browser suite"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _cannot_run("the playwright Python package is missing: pip install -e '.[test]'")
    driver = sync_playwright().start()
    chromium = driver.chromium.launch(
        executable_path=str(CHROMIUM), args=LAUNCH_ARGS, headless=True
    )
    yield chromium
    chromium.close()
    driver.stop()


@pytest.fixture(scope="session")
def shots(artifacts: Path) -> Path:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    folder = artifacts / "browser" / worker if worker else artifacts / "browser"
    if folder.exists():
        shutil.rmtree(folder)  # pictures of this run only
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def page(browser, request, shots: Path):
    context = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(PATIENCE * 1000)  # a hang, not a slow machine, reaches it
    problems: list[str] = []  # printed for diagnosis (Lab logs some harmless ones)
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    yield page
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        try:
            name = "".join(c if c.isalnum() or c in "-_." else "_" for c in request.node.name)
            page.screenshot(path=str(shots / f"FAILED-{name}.png"))
        except Exception as exc:  # the report matters more than the picture
            print(f"no failure screenshot: {exc}")
    if problems:
        print("JavaScript errors on the page:\n" + "\n".join(problems))
    context.close()


# Where Lab is served: at the root, and below a hub's per-user prefix (Binder, JupyterHub).
LAB_BASES = {"root": "/", "hub-prefix": "/user/tester/"}


@pytest.fixture(scope="session", params=sorted(LAB_BASES))
def lab(request, browser, tmp_path_factory, shots: Path) -> Iterator[Server]:
    """JupyterLab on loopback serving copies of the notebooks (runs never touch the repo's)."""
    base = tmp_path_factory.mktemp(f"lab-{request.param}")
    root = base / "root"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    server = start_lab(
        root,
        base / "home",
        shots / f"jupyterlab-{request.param}.log",
        base_url=LAB_BASES[request.param],
    )
    yield server
    server.stop()
