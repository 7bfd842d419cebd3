"""Widgets shown the same way everywhere: with their static HTML beside the view, and where
the front end wants them (IPython's display, marimo's output).

>>> show(UploadProgressBar("talk.mp4"))     # in the running cell, in any front end
>>> widget.settle()                         # its final state into the saved notebook
"""

from __future__ import annotations

from typing import Any

from .detect import _shell, current

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class ShownWithFallback:
    """A widget shown with its static HTML beside its view, in ipywidgets 7 and 8 alike.

    ipywidgets 7 (Google Colab's) displays a widget through ``_ipython_display_`` and has no
    ``_repr_mimebundle_``; 8 the other way round. Both are defined here, from one bundle: the
    view, plus :meth:`fallback_html` (what a saved notebook, nbviewer and nbval show). Shown
    with a display id, so :meth:`settle` can write the final state into the saved output.
    """

    model_id: str

    def fallback_html(self) -> str:
        raise NotImplementedError

    def view_bundle(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The widget's own view (the protocol's 2.0, which both ipywidgets speak)."""
        view = {"version_major": 2, "version_minor": 0, "model_id": self.model_id}
        return {WIDGET_VIEW: view}, {}

    def display_bundle(self) -> tuple[dict[str, Any], dict[str, Any]]:
        data, metadata = self.view_bundle()
        return {**data, "text/plain": repr(self), "text/html": self.fallback_html()}, metadata

    def _repr_mimebundle_(
        self, **kwargs: Any
    ) -> dict[str, Any] | tuple[dict[str, Any], dict[str, Any]]:
        data, metadata = self.display_bundle()
        return (data, metadata) if metadata else data

    def _ipython_display_(self, **kwargs: Any) -> None:
        from IPython.display import display

        data, metadata = self.display_bundle()
        handle = display(data, metadata=metadata, raw=True, display_id=True)  # type: ignore[no-untyped-call]
        self.__dict__.setdefault("_dubkit_handles", []).append(handle)

    def settle(self) -> None:
        """Write the current state into every output that shows this widget: what a saved
        notebook, nbviewer and an HTML export then show, instead of the first state.

        Sent as the cell that showed it (JupyterLab routes it by display id) and again as the
        request running now: nbclient and nbconvert, which write the committed notebooks,
        take a display update only from the cell they are running."""
        handles = self.__dict__.get("_dubkit_handles", [])
        if not handles:
            return
        data, metadata = self.display_bundle()

        def update() -> None:
            for handle in handles:
                try:
                    handle.update(data, metadata=metadata, raw=True)
                except Exception:  # no kernel to send to: nothing is saved anywhere then
                    continue

        update()
        _as_latest_request(update)


def _as_latest_request(send: Any) -> None:
    """Run ``send`` with the parent of the kernel's latest request (the cell running now)."""
    shell = _shell()
    kernel = getattr(shell, "kernel", None)
    if kernel is None or not hasattr(shell, "set_thread_parent"):
        return
    try:
        latest = kernel.get_parent("shell")  # a thread of ours falls back to the latest request
    except Exception:
        return
    current = shell.parent_header  # the header of the cell this thread speaks for
    if not latest or latest.get("header", {}).get("msg_id") == current.get("msg_id"):
        return
    token = shell.set_thread_parent(latest)
    try:
        send()
    finally:
        shell.reset_thread_parent(token)


def shows_widgets() -> bool:
    """True where a cell's output can show a widget: a Jupyter kernel, or a marimo notebook."""
    if current().name == "marimo":
        return True
    shell = _shell()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def show(widget: Any) -> None:
    """Show ``widget`` in the running cell, in the front end's own way (marimo's output, else
    IPython's display)."""
    if current().name == "marimo":
        import marimo

        marimo.output.append(widget)
        return
    from IPython.display import display

    display(widget)  # type: ignore[no-untyped-call]
