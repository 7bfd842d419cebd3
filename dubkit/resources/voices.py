"""Preset and cloned voices: ``client.voices``."""

from __future__ import annotations

from ._base import Resource


class VoicesResource(Resource):
    """``client.voices``."""
