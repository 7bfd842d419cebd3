"""Dubs as a widget: one dub in full, or the original beside several (:func:`compare`).

>>> compare(dub_fr, dub_de)      # the original and several dubs in one row

The page is :mod:`dubkit.views.dubbing`'s; saved notebooks show it as static HTML.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..frontends.channel import LiveHTML
from ..views.dubbing import compare_html, dubbing_html
from ..views.shapes import DubbingShape


class DubbingView(LiveHTML):
    """A widget showing one dub (full view) or several (side by side); static HTML fallback."""

    def __init__(self, results: Iterable[DubbingShape]) -> None:
        self.results = list(results)
        if not self.results:
            raise ValueError("DubbingView needs at least one dubbing result")
        page = (
            dubbing_html(self.results[0]) if len(self.results) == 1 else compare_html(self.results)
        )
        super().__init__(page)

    def __repr__(self) -> str:
        return f"DubbingView({', '.join(str(r.target_locale) for r in self.results)})"


def compare(*results: DubbingShape) -> DubbingView:
    """The original and each dub side by side: ``compare(dub_fr, dub_de)``; a local
    re-dub (``client.dubbing.redub``) compares the same way."""
    return DubbingView(results)
