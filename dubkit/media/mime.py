"""MIME types, in one table for the whole package: players, materials and storage use it."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

# A file extension or an ffmpeg format name -> its MIME type. "*" is the kind of the media:
# an ogg or asf file may hold a picture or only sound.
MIME_TYPES = {
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "m4a": "audio/mp4",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "aiff": "audio/aiff",
    "opus": "audio/ogg",
    "ogg": "*/ogg",
    "webm": "*/webm",
    "asf": "*/x-ms-asf",
    "mp4": "*/mp4",
    "avi": "video/x-msvideo",
    "flv": "video/x-flv",
    "mpegts": "video/mp2t",
    # Subtitles, for download links; SubRip has no registered type, text/plain shows it.
    "srt": "text/plain",
    "vtt": "text/vtt",
}


def format_of(url_or_name: str) -> str:
    """``'https://cdn/x/line.m4a?sig=..'`` -> ``'m4a'`` (empty when there is no extension)."""
    return Path(urlparse(url_or_name).path).suffix.lstrip(".").lower()


def known_mime_type(name: str, kind: str = "audio") -> str | None:
    """The MIME type of an extension or ffmpeg format name, ``None`` when it is not known."""
    mime = MIME_TYPES.get(name.lower())
    return mime.replace("*", kind, 1) if mime else None


def mime_type(fmt: str) -> str:
    """The MIME type for an audio player of format ``fmt`` (``audio/<fmt>`` when unknown)."""
    return known_mime_type(fmt) or "audio/" + (fmt.lower() or "mpeg")
