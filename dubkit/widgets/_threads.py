"""Background threads that may update widgets and print into the cell that started them.

ipykernel 7 no longer routes a thread's messages to the cell that was running when the thread
started: the thread has no parent header, so JupyterLab drops its output. Capturing the parent
in the starting cell and setting it again inside the thread restores the old behaviour.
"""

from __future__ import annotations

import threading
from typing import Any, Callable


def _shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:   # pragma: no cover - IPython is a dependency
        return None
    return get_ipython()


def start_cell_thread(target: Callable[[], None], *, name: str) -> threading.Thread:
    """Start a daemon thread that runs ``target`` under the current cell's parent header."""
    shell = _shell()
    parent = shell.get_parent() if shell is not None and hasattr(shell, "get_parent") else None

    def run() -> None:
        if parent and shell is not None and hasattr(shell, "set_parent"):
            shell.set_parent(parent)
        target()

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread
