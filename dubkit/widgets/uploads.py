"""A progress widget for an upload: bytes, rate, parts, then the material it became.

>>> bar = UploadProgressBar("talk.mp4").show()
>>> client.materials.upload("talk.mp4", progress=bar)    # the bar, placed yourself

The bar is the live channel's widget (an anywidget: it shows in JupyterLab, Notebook 7, Voila,
VS Code, Colab and marimo), updated from the thread that called ``upload`` (the uploader
reports from there), so no background thread touches it. When the upload ends its output is
written again, so a saved notebook shows the final line (name, size, rate, parts, material id).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..frontends.channel import LiveHTML
from ..frontends.display import show, shows_widgets
from ..views.materials import progress_html

if TYPE_CHECKING:
    from ..uploads import UploadProgress


class UploadProgressBar(LiveHTML):
    """A progress bar for one upload; pass it as ``progress=`` or let ``upload`` make one."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.last: UploadProgress | None = None
        super().__init__(progress_html(name, None))

    def __repr__(self) -> str:
        return f"UploadProgressBar({self.name!r})"

    def show(self) -> UploadProgressBar:
        """Show it in the current cell (in any front end), remembering where, so the end can
        refresh the saved output."""
        show(self)
        return self

    def __call__(self, p: UploadProgress) -> None:
        self.last = p
        self.value = progress_html(self.name, p)
        if p.phase == "done":
            self.settle()  # the saved notebook keeps the final line


def upload_progress(name: str) -> Callable[[UploadProgress], Any]:
    """What ``client.materials.upload(progress=True)`` shows: the widget where a notebook shows
    widgets, a terminal bar elsewhere."""
    return UploadProgressBar(name).show() if shows_widgets() else terminal_progress(name)


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
