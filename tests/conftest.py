"""Test session plumbing: one real sandbox over real HTTP, started by the session itself.

Every sandbox of the session (this process's, and those the notebooks' kernels start) runs in
strict contract mode and appends mismatches with the contract document to one file; a test
after which new mismatches appear fails with them (operation, direction, JSON path), and so
does the session if any arrive after the last test. A test that sends requests the document
forbids on purpose, through dubkit's client, says so with ``@pytest.mark.sends_invalid_requests``
(only the ``request`` direction is then let through).

Fixtures:
  sandbox     the session's SandboxHandle (tmp data dir, free port)
  client      a Client on the sandbox's default key, with fast retries; faults, timing and
              limits are reset after each test
  new_key     a fresh API key with its own credits (for isolation and credit tests)
  ffmpeg_runs every ffmpeg process started while the test runs (they still run): for claims of
              "one process for a request's lines"
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Tests run side by side in pytest-xdist workers (the README's command, ``--dist loadfile``: a
# file's tests stay on one worker, so a notebook's cells run in order on one kernel and a
# module's costly set-up is made once): each worker makes its own sandbox dir and contract log
# below, rather than share the ones the controller made.


def _own(name: str, make: str) -> None:
    """``name`` set to ``make`` unless the caller set it (a value the session made, which a
    worker inherits from the controller, is made again in each worker)."""
    if name not in os.environ or os.environ.get(f"{name}_MADE_BY_TESTS"):
        os.environ[name] = make
        os.environ[f"{name}_MADE_BY_TESTS"] = "1"


# What the session's child processes leave in their temp dir (notebook kernels, CLI runs, Lab
# servers, PostgreSQL) goes into one folder, which the process that made it removes as the
# session ends: without it each run left its scratch in /tmp (each notebook's media, each
# PostgreSQL cluster). Workers inherit the controller's folder; a run without xdist makes its own.
if "DUBKIT_TESTS_SCRATCH" not in os.environ:
    os.environ["DUBKIT_TESTS_SCRATCH"] = tempfile.mkdtemp(prefix="dubkit-tests-")
    _REMOVES_SCRATCH = True
else:  # a worker: its own temp files too (tmp_path is the controller's --basetemp)
    _REMOVES_SCRATCH = False
    tempfile.tempdir = os.environ["DUBKIT_TESTS_SCRATCH"]
_SCRATCH = os.environ["TMPDIR"] = os.environ["DUBKIT_TESTS_SCRATCH"]  # children; tmp_path stays

# Notebook kernels started by nbval inherit this, so their embedded sandbox never touches the
# user's ~/.cache/dubkit.
_own("DUBKIT_SANDBOX_DIR", tempfile.mkdtemp(prefix="dubkit-nb-sandbox-", dir=_SCRATCH))
os.environ.pop("DUBKIT_API_KEY", None)
os.environ.pop("DUBKIT_BASE_URL", None)
os.environ["DUBKIT_CONTRACT"] = "strict"
# nbval's kernels run as the saved notebooks were run: no front end, no forced media path.
for _forced in ("DUBKIT_JUPYTER_PROXY", "DUBKIT_FRONTEND", "DUBKIT_MEDIA"):
    os.environ.pop(_forced, None)
_own(
    "DUBKIT_CONTRACT_LOG",
    str(Path(tempfile.mkdtemp(prefix="dubkit-contract-", dir=_SCRATCH)) / "log.jsonl"),
)

import dubkit  # noqa: E402
from dubkit import SandboxHandle  # noqa: E402
from dubkit import start_sandbox as start  # noqa: E402
from dubkit.sandbox.throttle import DEFAULTS as THROTTLE_DEFAULTS  # noqa: E402

FAST_RETRY = dubkit.RetryPolicy(max_retries=4, backoff=0.01, max_backoff=0.05, max_retry_after=0.01)
ARTIFACTS = Path(
    os.environ.get("DUBKIT_TEST_ARTIFACTS", Path(__file__).parent.parent / "test-artifacts")
)


class _ContractWatch:
    """Reads the mismatches strict contract mode appended since it last looked."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0

    def new(self) -> list[dict]:
        if not self.path.exists():
            return []
        with open(self.path, encoding="utf-8") as handle:
            handle.seek(self.offset)
            text = handle.read()
            self.offset = handle.tell()
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    @staticmethod
    def describe(mismatches: list[dict]) -> str:
        return "\n".join(
            f"  {m['operation']} {m['direction']} at {m['path']}: {m['message']}"
            for m in mismatches[:20]
        )


_contract = _ContractWatch(Path(os.environ["DUBKIT_CONTRACT_LOG"]))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    _contract.new()  # what arrived between tests belongs to no test; the session end reports it
    result = yield
    found = _contract.new()
    if item.get_closest_marker("sends_invalid_requests"):
        found = [m for m in found if m["direction"] != "request"]
    if found:
        raise AssertionError(
            "the sandbox recorded mismatches with the contract document "
            "(dubkit/contract/openapi.yaml):\n" + _contract.describe(found)
        )
    return result


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist hands out files with the most tests first, which put the costly files with
    # few tests last; the order below is kept instead (--no-loadscope-reorder, set here so
    # that a run without xdist, -p no:xdist, still parses its options).
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with a costly set-up (``heavy``, ``browser``) first, each file's tests in their
    order: side by side (``--dist loadfile``), a worker that takes a five-minute file last
    runs it alone while the others wait."""
    costly = {
        item.path
        for item in items
        if item.get_closest_marker("heavy") or item.get_closest_marker("browser")
    }
    items.sort(key=lambda item: item.path not in costly)  # stable: the rest keep their order


def pytest_unconfigure(config: pytest.Config) -> None:
    if _REMOVES_SCRATCH:
        shutil.rmtree(os.environ["DUBKIT_TESTS_SCRATCH"], ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    late = _contract.new()
    if late:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print(
            "\nthe sandbox recorded mismatches with the contract document after the last "
            "test:\n" + _contract.describe(late)
        )


@pytest.fixture(scope="session")
def sandbox() -> Iterator[SandboxHandle]:
    handle = start()
    yield handle
    handle.stop()


def _restore(box: SandboxHandle) -> None:
    box.set_faults()
    box.set_throttle(**THROTTLE_DEFAULTS)
    box.set_timing("immediate")
    box.set_webhook(None)
    box.set_credits(1_000_000)


@pytest.fixture
def client(sandbox: SandboxHandle) -> Iterator[dubkit.Client]:
    _restore(sandbox)
    with dubkit.Client(sandbox.api_key, sandbox.url, sandbox=sandbox, retry=FAST_RETRY) as c:
        yield c
    _restore(sandbox)


@pytest.fixture
def sync_client(sandbox: SandboxHandle) -> Iterator[dubkit.Client]:
    """The sync client, where a module's ``client`` is each client (widgets take this one)."""
    _restore(sandbox)
    with dubkit.Client(sandbox.api_key, sandbox.url, sandbox=sandbox, retry=FAST_RETRY) as c:
        yield c
    _restore(sandbox)


@pytest.fixture(scope="session")
def event_loop_thread():
    """One event loop in a thread for the async client's calls (see tests/_clients.py)."""
    from _clients import Loop

    loop = Loop()
    yield loop
    loop.close()


@pytest.fixture(params=["sync", "async"])
def each_client(request, sandbox: SandboxHandle, event_loop_thread):
    """The session sandbox's default key through each client: ``dubkit.Client``, and
    ``dubkit.AsyncClient`` behind the sync face (tests/_clients.py). A module whose scenarios
    both must pass names it ``client``."""
    _restore(sandbox)
    if request.param == "sync":
        with dubkit.Client(sandbox.api_key, sandbox.url, sandbox=sandbox, retry=FAST_RETRY) as c:
            yield c
    else:
        from _clients import async_client

        c = async_client(
            sandbox.api_key, sandbox.url, event_loop_thread, sandbox=sandbox, retry=FAST_RETRY
        )
        yield c
        event_loop_thread.run(c.unwrapped.aclose())
    _restore(sandbox)


@pytest.fixture
def new_key(sandbox: SandboxHandle) -> str:
    return sandbox.create_key("test")


@pytest.fixture
def client_for(sandbox: SandboxHandle):
    """Make a Client for any key of the session sandbox."""
    made: list[dubkit.Client] = []

    def make(api_key: str) -> dubkit.Client:
        made.append(dubkit.Client(api_key, sandbox.url, sandbox=sandbox, retry=FAST_RETRY))
        return made[-1]

    yield make
    for c in made:
        c.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def ffmpeg_runs(monkeypatch) -> list[list[str]]:
    """Every ffmpeg process started (``subprocess.run`` starts them through ``Popen`` too)."""
    runs: list[list[str]] = []

    class Watched(subprocess.Popen):
        def __init__(self, cmd, *args, **kwargs):
            if "ffmpeg" in Path(str(cmd[0])).name and "-i" in cmd:  # not the binary's check
                runs.append(list(cmd))
            super().__init__(cmd, *args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", Watched)
    return runs
