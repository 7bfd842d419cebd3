"""Media translation (translate and dub): ``client.media``."""

from __future__ import annotations

from ._base import Resource


class MediaResource(Resource):
    """``client.media``."""
