"""Sphinx configuration of dubkit's reference: the API from the docstrings, the notebooks as
they were saved (nbval runs them in the tests; here they are rendered, not executed).

Built by ``tests/test_docs.py`` with warnings as errors:
``python -m sphinx -W --keep-going -b html docs docs/_build``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import dubkit

HERE = Path(__file__).parent
ROOT = HERE.parent

project = "dubkit"
release = version = dubkit.__version__
copyright = "dubkit contributors"  # noqa: A001  (Sphinx's name)

extensions = ["sphinx.ext.autodoc", "sphinx.ext.viewcode", "myst_nb"]
# The docstrings are reStructuredText with Sphinx roles (:class:, :meth:); pages are MyST.
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "screenshots", "notebooks/apps", "notebooks/.ipynb_checkpoints"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # rendered as saved; nbval executes them against the sandbox
suppress_warnings = ["mystnb.unknown_mime_type"]  # widget views: their saved HTML shows

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_preserve_defaults = True

html_theme = "furo"
html_title = f"dubkit {release}"


def _notebooks() -> None:
    """The notebooks are read from ``notebooks/`` (Sphinx reads only under ``docs/``)."""
    target = HERE / "notebooks"
    target.mkdir(exist_ok=True)
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        copy = target / notebook.name
        if not copy.exists() or copy.read_bytes() != notebook.read_bytes():
            shutil.copyfile(notebook, copy)


_notebooks()
