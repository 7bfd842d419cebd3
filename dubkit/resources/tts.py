"""Text to speech (issue: voices and TTS): ``client.tts``."""

from __future__ import annotations

from ._base import Resource


class TTSResource(Resource):
    """``client.tts``."""
