"""How a result with players is shown: its HTML, sent the way this front end can play it.

A result formats itself in ``_repr_html_`` (through :mod:`dubkit.views`, the way pandas
formats a frame); :class:`ShowsMedia` hands that HTML to :func:`dubkit.frontends.pages.bundle`,
which adds the live channel only where a player needs it (the local sandbox's files, or sound a
browser cannot decode). The HTML stays in the bundle for saved notebooks, nbviewer and nbval.
"""

from __future__ import annotations

from typing import Any

from ..frontends.pages import bundle, displayed


class ShowsMedia:
    """Mixed into results whose views hold players, pictures or downloads."""

    def _repr_html_(self) -> str:
        raise NotImplementedError

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, Any] | tuple[dict[str, Any], dict[str, Any]]:
        data, metadata = bundle(self._repr_html_(), text=repr(self))
        return (data, metadata) if metadata else data

    def _display_(self) -> Any:
        """marimo's display protocol, which it asks before any ``_repr_*_``."""
        return displayed(self._repr_html_())
