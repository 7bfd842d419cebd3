"""A page with players as a display: plain HTML where it plays as it is, else the live channel.

>>> bundle(html, text=repr(result))   # what ShowsMedia results and live widgets hand IPython

The HTML is always in the bundle: it is what a saved notebook, nbviewer, an HTML export and
nbval show. The channel (and anywidget) is loaded only where a page first needs it.
"""

from __future__ import annotations

from typing import Any

from .routes import needs_channel


def bundle(page: str, *, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A display's MIME bundle and metadata: the HTML alone where it plays as it is, else the
    live widget with the same HTML as its fallback (what a saved notebook, nbviewer and nbval
    show)."""
    if not needs_channel(page):
        return {"text/plain": text, "text/html": page}, {}
    from .channel import LiveHTML  # anywidget is loaded where a channel is first needed

    widget = LiveHTML(page)
    data, metadata = widget.display_bundle()
    return {**data, "text/plain": text}, metadata


class StaticPage:
    """HTML to show as it is (what :func:`displayed` gives where no channel is needed)."""

    def __init__(self, page: str) -> None:
        self.page = page

    def _repr_html_(self) -> str:
        return self.page


def displayed(page: str) -> Any:
    """What marimo's display protocol (``_display_``) should show for ``page``: the live
    channel's widget where a player needs it, else the HTML. (marimo prefers ``_repr_html_``
    to a MIME bundle, so a bundle alone would leave the sandbox's players silent there.)"""
    if not needs_channel(page):
        return StaticPage(page)
    from .channel import LiveHTML

    return LiveHTML(page)
