"""Test session plumbing: one real sandbox over real HTTP, started by the session itself.

Fixtures:
  sandbox     the session's SandboxHandle (tmp data dir, free port)
  client      a Client on the sandbox's default key, with fast retries; faults, timing and
              limits are reset after each test
  new_key     a fresh API key with its own credits (for isolation and credit tests)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

# Notebook kernels started by nbval inherit this, so their embedded sandbox never touches the
# user's ~/.cache/dubkit.
os.environ.setdefault("DUBKIT_SANDBOX_DIR", tempfile.mkdtemp(prefix="dubkit-nb-sandbox-"))
os.environ.pop("DUBKIT_API_KEY", None)
os.environ.pop("DUBKIT_BASE_URL", None)

import dubkit  # noqa: E402
from dubkit.sandbox import SandboxHandle, start  # noqa: E402

FAST_RETRY = dubkit.RetryPolicy(max_retries=4, backoff=0.01, max_backoff=0.05,
                                max_retry_after=0.01)
ARTIFACTS = Path(os.environ.get("DUBKIT_TEST_ARTIFACTS", Path(__file__).parent.parent /
                                "test-artifacts"))


@pytest.fixture(scope="session")
def sandbox() -> Iterator[SandboxHandle]:
    handle = start()
    yield handle
    handle.stop()


def _restore(box: SandboxHandle) -> None:
    box.set_faults()
    box.set_timing("immediate")
    box.set_webhook(None)
    box.set_credits(1_000_000)


@pytest.fixture
def client(sandbox: SandboxHandle) -> Iterator[dubkit.Client]:
    _restore(sandbox)
    with dubkit.Client(sandbox.api_key, sandbox.url, sandbox=sandbox,
                       retry=FAST_RETRY) as c:
        yield c
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

