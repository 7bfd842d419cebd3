"""A progress widget for an upload: bytes, rate, parts, then the material it became.

>>> bar = UploadProgressBar("talk.mp4").show()
>>> client.materials.upload("talk.mp4", progress=bar)    # the bar, placed yourself

The bar is updated from the thread that called ``upload`` (the uploader reports from there),
so no background thread touches the widget. When the upload ends the output is refreshed
once, so a saved notebook shows the final line (name, size, rate, parts, material id).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from ..views.materials import fraction, progress_html, progress_text

if TYPE_CHECKING:
    from ..uploads import UploadProgress


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where widgets can show)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class UploadProgressBar(widgets.VBox):
    """A progress bar for one upload; pass it as ``progress=`` or let ``upload`` make one."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.last: UploadProgress | None = None
        self._bar = widgets.FloatProgress(
            value=0.0, min=0.0, max=1.0, description="upload", layout=widgets.Layout(width="320px")
        )
        self._line = widgets.HTML(html.escape(name))
        self._handle: Any = None
        super().__init__([widgets.HBox([self._bar, self._line])])

    def show(self) -> UploadProgressBar:
        """Display in the current cell, remembering where, so the end can refresh it."""
        from IPython.display import display

        self._handle = display(self, display_id=True)
        return self

    def __call__(self, p: UploadProgress) -> None:
        self.last = p
        self._bar.description = p.phase
        self._bar.value = fraction(p)
        self._line.value = f"<b>{html.escape(self.name)}</b> {html.escape(progress_text(p))}"
        if p.phase == "done":
            self._bar.bar_style = "success"
            if self._handle is not None:
                self._handle.update(self)  # the saved notebook keeps the final line

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = progress_html(self.name, self.last)
        bundle["text/plain"] = f"UploadProgressBar({self.name!r})"
        return bundle


def upload_progress(name: str) -> Callable[[UploadProgress], None]:
    """What ``client.materials.upload(progress=True)`` shows: the widget in a notebook, a
    terminal bar elsewhere."""
    return UploadProgressBar(name).show() if in_notebook() else terminal_progress(name)


def terminal_progress(name: str) -> Callable[[UploadProgress], None]:
    """A tqdm bar on stderr, in bytes, with the parts as a postfix."""
    from tqdm import tqdm

    bars: dict[str, Any] = {}

    def report(p: UploadProgress) -> None:
        stage = "hashing" if p.phase == "hashing" else "sending"
        bar = bars.get(stage)
        if bar is None:
            if "hashing" in bars and stage != "hashing":
                bars["hashing"].close()
            bar = bars[stage] = tqdm(
                total=p.total,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                leave=False,
                desc=f"{'hashing' if stage == 'hashing' else 'uploading'} {name}",
            )
        bar.n = p.hashed if stage == "hashing" else p.sent
        if p.parts_total > 1:
            bar.set_postfix_str(f"parts {p.parts_done}/{p.parts_total}", refresh=False)
        bar.refresh()
        if p.phase == "done":
            bar.close()

    return report
