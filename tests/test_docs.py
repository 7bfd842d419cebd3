"""The API reference (Sphinx, ``docs/``): it builds with warnings as errors, and every public
name, every public call of the clients' products and every notebook has its page."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from sphinx.util.inventory import InventoryFile

import dubkit
import dubkit.batch
import dubkit.resources
import dubkit.webhooks

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.heavy  # a Sphinx build of every page and notebook


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("docs")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            "-d",
            str(out / "doctrees"),
            str(ROOT / "docs"),
            str(out / "html"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stderr.strip() == "", done.stderr[-4000:]  # no warning at all
    return out / "html"


@pytest.fixture(scope="module")
def documented(built) -> set[str]:
    with open(built / "objects.inv", "rb") as stream:
        inventory = InventoryFile.load(stream, "", lambda base, uri: uri)
    return {
        name for kind, objects in inventory.items() if kind.startswith("py:") for name in objects
    }


def _public_calls(cls: type) -> list[str]:
    """The public calls and properties ``cls`` defines or takes from a base of dubkit's own."""
    own = [c for c in cls.__mro__ if c.__module__.startswith("dubkit")]
    return sorted(
        {
            name
            for base in own
            for name, member in vars(base).items()
            if not name.startswith("_")
            and (inspect.isfunction(member) or isinstance(member, property))
        }
    )


def test_every_public_name_of_dubkit_has_its_entry(documented):
    modules = {"frontends", "webhooks"}
    missing = [
        name
        for name in dubkit.__all__
        if name != "__version__" and f"dubkit.{name}" not in documented
    ]
    assert missing == []
    assert {f"dubkit.{m}" for m in modules} <= documented
    for module in (dubkit.webhooks, dubkit.batch):
        names = [n for n in module.__all__ if not n.isupper() and n != "WebhookVerificationError"]
        # a name is a class or function of the module, or a module below it (webhooks.push)
        assert [n for n in names if not {f"{module.__name__}.{n}", n} & documented] == []


def test_every_product_call_of_both_clients_is_documented(documented):
    """Autodoc leaves out a member without a docstring: a call added undocumented fails here."""
    missing = []
    for name in dubkit.resources.__all__:
        cls = getattr(dubkit.resources, name)
        if not inspect.isclass(cls):
            continue
        for call in _public_calls(cls):
            if f"dubkit.resources.{name}.{call}" not in documented:
                missing.append(f"{name}.{call}")
    for cls in (dubkit.Client, dubkit.AsyncClient, dubkit.Task, dubkit.AsyncTask):
        missing += [
            f"{cls.__name__}.{call}"
            for call in _public_calls(cls)
            if f"dubkit.{cls.__name__}.{call}" not in documented
        ]
    assert missing == []


def test_every_notebook_is_a_page_of_the_reference(built):
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 12
    for stem in notebooks:
        page = (built / "notebooks" / f"{stem}.html").read_text(encoding="utf-8")
        assert "<h1>" in page and "highlight-ipython3" in page, stem
