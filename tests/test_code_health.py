"""The habits CI holds the code to: layers that import only downward (no circle anywhere),
ruff's lint and format, mypy strict on the client's public surface, and small modules.

Each runs the tool a developer runs by hand, configured in pyproject.toml, so a failure here
reads exactly like the tool's own output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MAX_MODULE_LINES = 800  # a size alarm: a module this long should still be one concept


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )


@pytest.mark.parametrize(
    "command",
    [
        ("lint-imports", "--no-cache"),
        ("ruff", "check", "dubkit", "tests", "bench"),
        ("ruff", "format", "--check", "dubkit", "tests", "bench"),
        ("mypy",),
    ],
    ids=lambda command: " ".join(command[:2]),
)
def test_the_tool_finds_nothing(command):
    done = run(str(BIN / command[0]), *command[1:])
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}\n{done.stderr}"


def test_no_module_is_over_800_lines():
    long = {
        str(path.relative_to(ROOT)): lines
        for path in (ROOT / "dubkit").rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"is each of these one concept? split by concept, not by size: {long}"
