"""Registered materials (interface §3.1) as results: a card with a player, a list as a table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import PrivateAttr

from .. import schema
from .._transport import Transport
from ..views.materials import material_html
from ._display import ShowsMedia
from ._held import fetch_held

if TYPE_CHECKING:
    import pandas as pd  # imported where a table is made: pandas is slow to import

COLUMNS = [
    "material_id",
    "name",
    "category",
    "duration_s",
    "filesize",
    "resolution",
    "mime_type",
    "create_time",
]


class Material(schema.Material, ShowsMedia):
    """A registered material (interface §3.1); in a notebook it shows a player."""

    _thumbnail: bytes | None = PrivateAttr(default=None)

    @property
    def duration_seconds(self) -> float | None:
        return self.duration / 1000 if self.duration is not None else None

    def hold_thumbnail(self, transport: Transport) -> Material:
        """Fetch the local sandbox's poster frame now, so the card embeds it (a view never
        fetches); the service's thumbnails are left to the browser."""
        self._thumbnail = fetch_held(transport, [self.thumbnail_url]).get(self.thumbnail_url or "")
        return self

    def held_thumbnail(self) -> bytes | None:
        return self._thumbnail

    def __repr__(self) -> str:
        return (
            f"Material({self.material_id!r}, {self.name!r}, {self.category}, "
            f"{self.duration_seconds or 0:.1f} s)"
        )

    def _repr_html_(self) -> str:
        return material_html(self)


class MaterialList(list[Material]):
    """Materials from ``client.materials.list``; ``.to_frame()`` for a table."""

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        rows = [{**m.model_dump(), "duration_s": m.duration_seconds} for m in self]
        return pd.DataFrame(rows, columns=COLUMNS)

    def _repr_html_(self) -> str:
        table: str = self.to_frame().to_html(index=False, na_rep="", escape=True)
        return table
