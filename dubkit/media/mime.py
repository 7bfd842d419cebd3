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
    # Pictures (voice covers, poster frames).
    "svg": "image/svg+xml",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "png": "image/png",
    # Subtitles, for download links; SubRip has no registered type, text/plain shows it.
    "srt": "text/plain",
    "vtt": "text/vtt",
}


def format_of(url_or_name: str) -> str:
    """``'https://cdn/x/line.m4a?sig=..'`` -> ``'m4a'`` (empty when there is no extension)."""
    return Path(urlparse(url_or_name).path).suffix.lstrip(".").lower()


def file_name(url_or_name: str) -> str:
    """``'https://cdn/x/line.m4a?sig=..'`` -> ``'line.m4a'``."""
    return Path(urlparse(url_or_name).path).name


def known_mime_type(name: str, kind: str = "audio") -> str | None:
    """The MIME type of an extension or ffmpeg format name, ``None`` when it is not known."""
    mime = MIME_TYPES.get(name.lower())
    return mime.replace("*", kind, 1) if mime else None


def mime_type(fmt: str) -> str:
    """The MIME type for an audio player of format ``fmt`` (``audio/<fmt>`` when unknown)."""
    return known_mime_type(fmt) or "audio/" + (fmt.lower() or "mpeg")


# What a browser is asked about before it plays a file (``canPlayType``), by extension: the
# codecs the service's files of that kind hold. A guess for other files; the comm path reads
# the real codecs from the bytes (:func:`dubkit.media.renditions.codecs_of`).
CODEC_HINTS = {
    "m4a": "mp4a.40.2",
    "aac": "mp4a.40.2",
    "mp4": "avc1.42E01E, mp4a.40.2",
    "opus": "opus",
    "webm": "vp8, opus",
}


def codecs_hint(mime: str, url: str = "") -> str:
    """``'mp4a.40.2'`` for an M4A file: what to ask ``canPlayType`` (empty: nothing to ask)."""
    fmt = format_of(url) if url else ""
    if not fmt and mime in ("audio/mp4", "video/mp4"):
        fmt = "m4a" if mime == "audio/mp4" else "mp4"
    hint = CODEC_HINTS.get(fmt, "")
    if hint and mime.startswith("audio/") and fmt == "mp4":
        return "mp4a.40.2"
    return hint
