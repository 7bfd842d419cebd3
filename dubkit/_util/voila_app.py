"""A notebook served as an app by Voila: the one way dubkit's apps (the audition studio, the
teacher's view) are found and launched."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO_APPS = Path(__file__).resolve().parents[2] / "notebooks" / "apps"


def app_notebook(name: str, intro: str, source: str) -> Path:
    """``notebooks/apps/<name>.ipynb`` of the repository, else a copy of its two cells (an
    installed dubkit has no notebooks folder)."""
    here = REPO_APPS / f"{name}.ipynb"
    if here.exists():
        return here
    import nbformat

    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell(intro), nbformat.v4.new_code_cell(source)]
    )
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    target = Path(tempfile.mkdtemp(prefix=f"dubkit-{name}-")) / f"{name}.ipynb"
    nbformat.write(notebook, target)
    return target


def serve(
    notebook: Path, *, port: int, host: str, no_browser: bool, needs: str, token: str | None = None
) -> int:
    """Serve ``notebook`` with Voila until interrupted; exit 2 without Voila (``needs`` is the
    pip extra that brings it). With ``token``, only a browser that has it gets in (the
    address to open, token included, is printed)."""
    try:
        from voila.app import Voila
    except ImportError:
        print(f"this app needs Voila: pip install 'dubkit[{needs}]'", file=sys.stderr)
        return 2
    options: Sequence[str] = [
        str(notebook),
        f"--port={port}",
        f"--Voila.ip={host}",
        "--show_tracebacks=True",
        "--theme=light",
        *(["--no-browser"] if no_browser else []),
        *([f"--token={token}"] if token else []),
    ]
    if token:
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        print(f"open http://{shown}:{port}/?token={token}", file=sys.stderr, flush=True)
    Voila.launch_instance(argv=list(options))
    return 0
