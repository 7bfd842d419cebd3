"""Listening copies a browser without AAC or Opus decodes (VS Code's webview has neither).

The result's own file stays exactly what the service made; a rendition is only for listening:
sound as MP3 (audio alone: an MP3 file; with a picture: the picture copied as it is when it is
H.264 or VP8, else made H.264, beside MP3 sound in MP4). Made once per content, by hash, and
kept in ``~/.cache/dubkit/renditions`` (``DUBKIT_RENDITION_DIR`` to move it), so the same dub
heard again, or in another kernel, costs nothing. No call to the service is made.

>>> copy = listenable(m4a_bytes)        # Rendition(data=b'ID3...', mime='audio/mpeg')
>>> listenable(mp3_bytes).data is mp3_bytes   # already playable: the bytes themselves
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ._ffmpeg import MediaInfo, parse_input, run

# Codecs the webview decodes (VS Code: H.264, VP8, MP3, Vorbis, FLAC, PCM WAV).
PLAYABLE_AUDIO = {"mp3", "vorbis", "flac"}
PLAYABLE_VIDEO = {"h264", "vp8"}
UNPLAYABLE_AUDIO = {"aac", "opus"}


@dataclass(frozen=True)
class Rendition:
    """Bytes to play and their MIME type; ``made`` is False when the original plays as it is."""

    data: bytes
    mime: str
    made: bool


def cache_dir() -> Path:
    """``$DUBKIT_RENDITION_DIR``, else ``~/.cache/dubkit/renditions``."""
    chosen = os.environ.get("DUBKIT_RENDITION_DIR")
    return Path(chosen) if chosen else Path.home() / ".cache" / "dubkit" / "renditions"


def codecs_of(data: bytes) -> MediaInfo:
    """What the bytes hold (container, picture and sound codecs), read by ffmpeg."""
    with tempfile.NamedTemporaryFile(suffix=".media") as source:
        source.write(data)
        source.flush()
        said = run(["-i", source.name], check=False).stderr
        return parse_input(said, source.name)


def needs_rendition(info: MediaInfo) -> bool:
    """True when a browser without AAC and Opus could not play this file's sound or picture."""
    audio = (info.audio_codec or "").lower()
    video = (info.video_codec or "").lower()
    return (info.has_audio and audio not in PLAYABLE_AUDIO and not audio.startswith("pcm_")) or (
        info.has_video and video not in PLAYABLE_VIDEO
    )


def listenable(data: bytes, mime: str = "") -> Rendition:
    """A copy of ``data`` with no AAC or Opus in it (the bytes themselves when they have none).

    ``mime`` is the original's type, returned when no copy is needed.
    """
    info = codecs_of(data)
    if not needs_rendition(info):
        return Rendition(data, mime or info.mime_type, made=False)
    video = info.has_video
    digest = hashlib.sha256(data).hexdigest()
    kept = cache_dir() / f"{digest}.{'mp4' if video else 'mp3'}"
    out_mime = "video/mp4" if video else "audio/mpeg"
    if kept.exists():
        return Rendition(kept.read_bytes(), out_mime, made=True)
    kept.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=kept.parent) as work:
        source = Path(work) / "source.media"
        source.write_bytes(data)
        made = Path(work) / kept.name
        run(["-i", str(source), *_streams(info), str(made)])
        os.replace(made, kept)  # whole or not at all: another kernel may be reading it
    return Rendition(kept.read_bytes(), out_mime, made=True)


def _streams(info: MediaInfo) -> list[str]:
    """ffmpeg's arguments for the copy: the picture kept where it plays, sound as MP3."""
    sound = ["-c:a", "libmp3lame", "-q:a", "3"] if info.has_audio else ["-an"]
    if not info.has_video:
        return ["-vn", *sound]
    picture = (
        ["-c:v", "copy"]
        if (info.video_codec or "").lower() == "h264"
        else ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"]
    )
    return ["-map", "0:v:0", "-map", "0:a:0?", *picture, *sound, "-movflags", "+faststart"]
