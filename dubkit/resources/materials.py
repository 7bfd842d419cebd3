"""Uploaded media (materials): ``client.materials``."""

from __future__ import annotations

from ._base import Resource


class MaterialsResource(Resource):
    """``client.materials``."""
