"""The habits CI holds the code to: layers that import only downward (no circle anywhere),
ruff's lint and format, mypy strict on the client's public surface, small modules and
functions.

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


MAX_FUNCTION_LINES = 100  # a reader's alarm: a function this long should be cut by what it does


def test_no_function_is_100_lines_or_more():
    import ast

    long = []
    for path in (ROOT / "dubkit").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines >= MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.name} ({lines} lines)")
    assert not long, f"cut each by what it does (steps, parts), not by size: {long}"


# ``import dubkit`` is the first cell of every notebook: what it loads is checked here, by name
# (its time is bench/bench_import.py's to print, against ``import requests, pandas``).
# httpx: the async client's transport, imported when the first async client is made.
HEAVY_AT_IMPORT = (
    "numpy",
    "soundfile",
    "pandas",
    "ipywidgets",
    "anywidget",
    "IPython",
    "PIL",
    "httpx",
)


def test_import_dubkit_loads_no_media_table_or_widget_library():
    probe = (
        f"import sys, dubkit\nprint(' '.join(m for m in {HEAVY_AT_IMPORT!r} if m in sys.modules))"
    )
    loaded = run(sys.executable, "-c", probe).stdout.split()
    assert not loaded, f"import dubkit loads {loaded}: import them where media are decoded"


def test_the_command_line_loads_no_media_table_or_widget_library():
    """Each ``dubkit`` command is a new process: what ``dubkit.cli`` imports, every command
    waits for (the class commands once loaded the teacher's widget, some 200 ms of it)."""
    probe = (
        f"import sys, dubkit.cli\n"
        f"print(' '.join(m for m in {HEAVY_AT_IMPORT!r} if m in sys.modules))"
    )
    loaded = run(sys.executable, "-c", probe).stdout.split()
    assert not loaded, f"dubkit.cli loads {loaded}: import them in the command that needs them"


def test_import_dubkit_builds_no_validator():
    """Every wire model builds its pydantic validator on first use (``defer_build``), not at
    import: building the 120-odd models was most of ``import dubkit``'s time. The sandbox's
    admin route bodies are the exception (see ``RouteBody``)."""
    probe = (
        "import dubkit, dubkit.webhooks\n"
        "from dubkit.schema.base import Wire\n"
        "from dubkit.schema.sandbox_admin import RouteBody\n"
        "def every(c):\n"
        "    for s in c.__subclasses__():\n"
        "        yield s\n"
        "        yield from every(s)\n"
        "models = set(every(Wire)) - {RouteBody, *every(RouteBody)}\n"
        "print(len(models), sorted(m.__name__ for m in models if m.__pydantic_complete__))"
    )
    count, built = run(sys.executable, "-c", probe).stdout.split(" ", 1)
    assert int(count) > 100, f"only {count} wire models found: did the probe break?"
    assert built.strip() == "[]", f"built at import: {built}"
