"""dubkit as people install it: a wheel built from this checkout, installed (not editable) in a
fresh virtual environment, runs notebooks 00 and 02 there under nbval, against the sandbox the
installed package starts itself. What ``pip install dubkit`` or Colab's ``%pip install git+…``
gives is tested, not the checkout: the notebooks run in a folder of their own, so nothing of
the checkout is on the kernel's path, and the kernel says where it imported dubkit from."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ["00_quickstart.ipynb", "02_text_to_speech.ipynb"]

pytestmark = pytest.mark.heavy


def run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(c) for c in command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, (
        f"{command[:3]} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with the wheel (and nbval to run the notebooks) installed; its python."""
    where = tmp_path_factory.mktemp("installed")
    wheels = where / "wheels"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, ROOT, cwd=where)
    (wheel,) = wheels.glob("dubkit-*.whl")
    venv.create(where / "venv", with_pip=True)
    python = where / "venv" / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", wheel, "nbval", "pytest", "ipykernel", cwd=where)
    return python


def test_the_installed_wheel_runs_notebooks_00_and_02(installed, tmp_path):
    for name in NOTEBOOKS:
        shutil.copy(ROOT / "notebooks" / name, tmp_path / name)
    shutil.copy(ROOT / "notebooks" / "sanitize.cfg", tmp_path / "sanitize.cfg")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DUBKIT_", "PYTHON", "VIRTUAL_ENV"))
    }
    env["DUBKIT_SANDBOX_DIR"] = str(tmp_path / "sandbox")  # its own, as on a new machine
    said = run(
        installed,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        "--nbval",
        "--nbval-current-env",
        "--nbval-sanitize-with",
        "sanitize.cfg",
        *NOTEBOOKS,
        cwd=tmp_path,
        env=env,
    )
    assert " passed" in said and "failed" not in said, said
    where = run(
        installed,
        "-c",
        "import dubkit, json, sys; print(json.dumps([dubkit.__file__, dubkit.__version__]))",
        cwd=tmp_path,
        env=env,
    )
    path, version = json.loads(where.splitlines()[-1])
    assert "site-packages" in path and not path.startswith(str(ROOT)), path
    assert (
        version
        == run(sys.executable, "-c", "import dubkit; print(dubkit.__version__)", cwd=ROOT).strip()
    )
