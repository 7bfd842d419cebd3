"""What the saved notebooks hold: outputs from a real run, no errors, no secrets, and nothing
that only worked on the machine that ran them (a loopback URL, a temp path): opened from a clone,
on GitHub or nbviewer, they stand on their own."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").rglob("*.ipynb"))
SECRETS = re.compile(r"sk_sandbox_[0-9a-f]{8,}|whsec_[0-9a-f]{8,}|Bearer\s+sk_")
# A URL of the kernel machine's loopback, or a path under a temporary directory.
MACHINE_BOUND = re.compile(
    r"(https?://)?(127\.0\.0\.1|localhost|\[::1\])(:\d+)?/|"
    r"(/tmp/|/var/folders/|\\AppData\\Local\\Temp\\)"
)


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
