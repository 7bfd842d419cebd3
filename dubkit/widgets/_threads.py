"""Running code for a cell from another thread: background refreshes, webhook workers.

ipykernel 7 no longer routes a thread's messages to the cell that was running when the thread
started: the thread has no parent header, so JupyterLab drops its output and widget updates.
A :class:`CellContext` captures the cell's parent header where it is made and sets it again
around code run from any other thread. Every widget update off the cell's thread goes
through it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .. import frontends

SETTLE_AFTER = 3.0  # seconds a screen reader gets to say what changed before the redraw


def _shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return None
    return get_ipython()


class CellContext:
    """The cell running where this is made; :meth:`run` runs code as that cell, from any
    thread (outside a kernel it just runs it)."""

    def __init__(self) -> None:
        self._shell = _shell()
        self._parent = (
            self._shell.get_parent()
            if self._shell is not None and hasattr(self._shell, "get_parent")
            else None
        )

    def run(self, target: Callable[[], None]) -> None:
        if self._parent and hasattr(self._shell, "set_parent"):
            self._shell.set_parent(self._parent)
        target()


def start_cell_thread(target: Callable[[], None], *, name: str) -> threading.Thread:
    """Start a daemon thread that runs ``target`` under the current cell's parent header."""
    cell = CellContext()
    thread = threading.Thread(target=lambda: cell.run(target), name=name, daemon=True)
    thread.start()
    return thread


def settle_later(widget: Any, cell: CellContext) -> None:
    """Write ``widget``'s final picture into the saved output (``widget.settle()``): at once
    where nobody watches (nbclient, nbconvert), else after :data:`SETTLE_AFTER` seconds, once
    its live region has been read out (writing the output draws the widget anew)."""
    if frontends.current().name == "plain":
        widget.settle()
        return
    timer = threading.Timer(SETTLE_AFTER, lambda: cell.run(widget.settle))
    timer.daemon = True
    timer.start()
