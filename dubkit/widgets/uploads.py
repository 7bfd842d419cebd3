"""Upload progress (bytes, rate, parts) and a material card with its player.

>>> client.materials.upload("talk.mp4")                  # a bar in notebooks, tqdm elsewhere
>>> bar = UploadProgressBar("talk.mp4"); display(bar)
>>> client.materials.upload("talk.mp4", progress=bar)    # the same bar, placed yourself

The bar is updated from the thread that called ``upload`` (the uploader reports from there),
so no background thread touches the widget. When the upload ends the output is refreshed
once, so a saved notebook shows the final line (name, size, rate, parts, material id).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, Callable

import ipywidgets as widgets

from ..media.audio import format_of, mime_type
from .audio import player_html
from .sources import browser_url, embedded_or_url

if TYPE_CHECKING:
    from ..resources.materials import Material
    from ..uploads import UploadProgress

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(count: float) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    for unit in _UNITS:
        if abs(count) < 1024 or unit == _UNITS[-1]:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TiB"


def progress_text(p: "UploadProgress") -> str:
    """One line: what is happening, how much, how fast, which parts."""
    if p.phase == "hashing":
        return f"hashing {human_bytes(p.hashed)} of {human_bytes(p.total)} (MD5)"
    parts = f" · parts {p.parts_done}/{p.parts_total}" if p.parts_total > 1 else ""
    resumed = f" (resumed with {p.resumed_parts} done)" if p.resumed_parts else ""
    if p.phase == "done":
        if p.duplicate:
            return (f"already on the service: material {p.material_id}, nothing uploaded "
                    f"({human_bytes(p.total)})")
        return (f"registered as material {p.material_id}: {human_bytes(p.total)} in "
                f"{p.elapsed:.1f} s · {human_bytes(p.rate)}/s{parts}{resumed}")
    verb = "registering" if p.phase == "registering" else "uploading"
    return (f"{verb} {human_bytes(p.sent)} of {human_bytes(p.total)} · "
            f"{human_bytes(p.rate)}/s{parts}{resumed}")


def _fraction(p: "UploadProgress") -> float:
    done = p.hashed if p.phase == "hashing" else p.sent
    return min(1.0, done / p.total) if p.total else 1.0


def progress_html(name: str, p: "UploadProgress | None") -> str:
    """The static view: file name, a <progress> element, the line of :func:`progress_text`."""
    text = progress_text(p) if p is not None else "starting"
    value = _fraction(p) if p is not None else 0.0
    return (f"<div class='dubkit-upload'><b>{html.escape(name)}</b> "
            f"<progress max='1' value='{value:.3f}' style='width:240px'></progress> "
            f"<span>{html.escape(text)}</span></div>")


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where widgets can show)."""
    try:
        from IPython import get_ipython
    except ImportError:   # pragma: no cover - IPython is a dependency
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class UploadProgressBar(widgets.VBox):
    """A progress bar for one upload; pass it as ``progress=`` or let ``upload`` make one."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.last: "UploadProgress | None" = None
        self._bar = widgets.FloatProgress(value=0.0, min=0.0, max=1.0, description="upload",
                                          layout=widgets.Layout(width="320px"))
        self._line = widgets.HTML(html.escape(name))
        self._handle: Any = None
        super().__init__([widgets.HBox([self._bar, self._line])])

    def show(self) -> "UploadProgressBar":
        """Display in the current cell, remembering where, so the end can refresh it."""
        from IPython.display import display
        self._handle = display(self, display_id=True)
        return self

    def __call__(self, p: "UploadProgress") -> None:
        self.last = p
        self._bar.description = p.phase
        self._bar.value = _fraction(p)
        self._line.value = f"<b>{html.escape(self.name)}</b> {html.escape(progress_text(p))}"
        if p.phase == "done":
            self._bar.bar_style = "success"
            if self._handle is not None:
                self._handle.update(self)       # the saved notebook keeps the final line

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = progress_html(self.name, self.last)
        bundle["text/plain"] = f"UploadProgressBar({self.name!r})"
        return bundle


def terminal_progress(name: str) -> Callable[["UploadProgress"], None]:
    """A tqdm bar on stderr, in bytes, with the parts as a postfix."""
    from tqdm import tqdm

    state: dict[str, Any] = {}

    def report(p: "UploadProgress") -> None:
        bar = state.get(p.phase if p.phase == "hashing" else "sending")
        if bar is None:
            if "hashing" in state and p.phase != "hashing":
                state["hashing"].close()
            bar = tqdm(total=p.total, unit="B", unit_scale=True, unit_divisor=1024,
                       desc=f"{'hashing' if p.phase == 'hashing' else 'uploading'} {name}",
                       leave=False)
            state[p.phase if p.phase == "hashing" else "sending"] = bar
        bar.n = p.hashed if p.phase == "hashing" else p.sent
        if p.parts_total > 1:
            bar.set_postfix_str(f"parts {p.parts_done}/{p.parts_total}", refresh=False)
        bar.refresh()
        if p.phase == "done":
            bar.close()

    return report


def material_html(material: "Material") -> str:
    """A card: the picture or player, then the record's facts."""
    url = material.address_url or ""
    if material.category == "video" and url:
        # The frame embedded (it survives a saved notebook), the stream from a reachable URL.
        poster = (f" poster='{html.escape(embedded_or_url(material.thumbnail_url, 'image/jpeg'))}'"
                  if material.thumbnail_url else "")
        media = (f"<video controls preload='none' width='320'{poster}><source "
                 f"src='{html.escape(browser_url(url))}' "
                 f"type='{html.escape(material.mime_type or '')}'></video>")
    elif url:
        media = player_html(url, material.mime_type or mime_type(format_of(url)))
    else:
        media = ""
    facts = [("id", material.material_id), ("name", material.name),
             ("category", material.category), ("type", material.mime_type),
             ("duration", f"{material.duration_seconds:.2f} s"
              if material.duration_seconds is not None else None),
             ("resolution", material.resolution), ("MD5", material.file_hash)]
    rows = "".join(f"<tr><th style='text-align:left'>{k}</th><td><code>{html.escape(str(v))}"
                   f"</code></td></tr>" for k, v in facts if v)
    return (f"<div class='dubkit-material' style='display:flex;gap:12px;align-items:flex-start'>"
            f"<div>{media}</div><table>{rows}</table></div>")
