"""Running the bundled ffmpeg and reading the stream summary it prints (there is no ffprobe).

Private to the media engine: ``media`` is the public face and re-exports ``MediaError`` and
``MediaInfo``. Nothing runs at import time; the binary is located on first use.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Union

from .mime import known_mime_type

PathLike = Union[str, "os.PathLike[str]"]

# Every run is held to this many threads: the sandbox shares the machine with the notebook kernel
# that waits for it.
THREADS = 2
# Demuxers that open still images and terminal text: ffmpeg reads them, but they are not media.
_NOT_MEDIA = re.compile(r"image2|.*_pipe|tty|gif|apng")
_WEBM_CODECS = {"vp8", "vp9", "av1", "opus", "vorbis", "webvtt"}


class MediaError(Exception):
    """ffmpeg could not do the job: unreadable, corrupt or unsuitable media.

    The message names the file and the step and ends with the tail of ffmpeg's own words.
    """

    def __init__(self, message: str, stderr: str = "") -> None:
        tail = "\n".join(stderr.strip().splitlines()[-12:])
        super().__init__(f"{message}\n--- ffmpeg said ---\n{tail}" if tail else message)
        self.stderr = stderr


@dataclass(frozen=True)
class MediaInfo:
    """What ``probe`` found. Sizes as displayed (rotation applied), ``duration`` in seconds.

    >>> MediaInfo(3.0, False, True, None, None, None, 44100, 1, 0, "mp3").mime_type
    'audio/mpeg'
    """

    duration: float
    has_video: bool
    has_audio: bool
    width: int | None
    height: int | None
    fps: float | None
    audio_rate: int | None
    audio_channels: int | None
    subtitle_streams: int
    format_name: str
    video_codec: str | None = None
    audio_codec: str | None = None
    subtitle_codecs: tuple[str, ...] = ()
    brand: str = ""  # mp4 major brand (isom, qt, M4A) or "webm": tells look-alike containers apart

    @property
    def category(self) -> str:
        """``"video"`` or ``"audio"``, the material categories of the service."""
        return "video" if self.has_video else "audio"

    @property
    def mime_type(self) -> str:
        """MIME type of the container, e.g. ``video/mp4``, ``audio/mpeg``, ``audio/mp4``."""
        kind, names = self.category, set(self.format_name.split(","))
        if "mov" in names:
            return "video/quicktime" if self.brand == "qt" else f"{kind}/mp4"
        if "matroska" in names:
            return f"{kind}/webm" if self.brand == "webm" else f"{kind}/x-matroska"
        known = (known_mime_type(n, kind) for n in sorted(names))
        return next((mime for mime in known if mime), "application/octet-stream")


@functools.lru_cache(maxsize=1)
def exe() -> str:
    import imageio_ffmpeg  # located on first use: checking the binary starts a process

    return imageio_ffmpeg.get_ffmpeg_exe()


@dataclass(frozen=True)
class Ran:
    """What an ffmpeg run left: its exit code, what it wrote to stdout, its log as text."""

    returncode: int
    stdout: bytes
    stderr: str


def run(
    args: list[str], *, input: bytes | Iterable[bytes] | None = None, check: bool = True
) -> Ran:
    """Run ffmpeg with our defaults; stderr comes back as text; ``MediaError`` if it fails.

    ``args`` ends with the output (absent when only reading the input summary). ``input`` is
    stdin: bytes, or an iterable of byte chunks written as ffmpeg reads them.
    """
    # -threads binds to the next input (decoder) or to the output (encoder): give it to each.
    # A run with several outputs gives each its own, and then the last one is left alone.
    bounded = [
        part for arg in args for part in (["-threads", str(THREADS)] if arg == "-i" else []) + [arg]
    ]
    if len(args) > 1 and args[-2] != "-i" and "-threads" not in args:
        bounded[-1:-1] = ["-threads", str(THREADS)]
    cmd = [
        exe(),
        "-hide_banner",
        "-nostdin",
        "-nostats",
        "-y",
        "-filter_threads",
        str(THREADS),
        *bounded,
    ]
    if input is None or isinstance(input, bytes):
        done = subprocess.run(
            cmd,
            input=input,
            capture_output=True,
            stdin=subprocess.DEVNULL if input is None else None,
        )
        code, stdout, err = done.returncode, done.stdout, done.stderr
    else:
        code, stdout, err = _streamed(cmd, input)
    stderr = err.decode("utf-8", errors="replace")
    if check and code != 0:
        raise MediaError(f"ffmpeg failed (exit {code}) making {args[-1]}", stderr)
    return Ran(code, stdout, stderr)


def _streamed(cmd: list[str], chunks: Iterable[bytes]) -> tuple[int, bytes, bytes]:
    """Feed ``chunks`` to ffmpeg's stdin one by one, so the whole input is never held at once
    (a long track as bytes is a second copy of it)."""
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    read: dict[str, bytes] = {}
    readers = [
        threading.Thread(target=lambda n=name, f=f: read.__setitem__(n, f.read()), daemon=True)
        for name, f in (("out", proc.stdout), ("err", proc.stderr))
    ]
    for reader in readers:
        reader.start()
    try:
        for chunk in chunks:
            proc.stdin.write(chunk)  # type: ignore[union-attr]
    except BrokenPipeError:
        pass  # ffmpeg stopped reading: its exit code and log say why
    finally:
        try:
            proc.stdin.close()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass
    code = proc.wait()
    for reader in readers:
        reader.join()
    return code, read.get("out", b""), read.get("err", b"")


def existing(path: PathLike) -> str:
    resolved = Path(path).resolve()
    if not resolved.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    return str(resolved)


def out(path: PathLike) -> str:
    # Absolute paths cannot be taken for ffmpeg protocols ("name:...") or options ("-x").
    return str(Path(path).resolve())


def filter_value(value: str) -> str:
    """Escape a filter option value inside a filtergraph: two levels, as ffmpeg unescapes."""
    for ch in "\\':":
        value = value.replace(ch, "\\" + ch)
    for ch in "\\'[],;":
        value = value.replace(ch, "\\" + ch)
    return value


def header(path: PathLike) -> MediaInfo:
    """``probe`` without the trial decode: for steps about to read the file anyway, and for files
    this process has just written."""
    src = existing(path)
    return parse_input(run(["-i", src], check=False).stderr, src)


def parse_input(stderr: str, src: str, *, check_length: bool = False) -> MediaInfo:
    """MediaInfo from ffmpeg's input summary; ``check_length`` also reads the packets through
    to catch files cut short (an interrupted upload keeps a header that promises more)."""
    # Only the input summary: the output summary that follows has "Stream #" lines of its own.
    summary = re.split(r"^(?:Output #|Stream mapping:)", stderr, maxsplit=1, flags=re.M)[0]
    found = re.search(r"^Input #0, (.+?), from ", summary, flags=re.M)
    if found is None:
        raise MediaError(f"not readable as audio or video: {src}", stderr)
    format_name = found.group(1)
    streams = parse_streams(summary)
    video, audio = streams["Video"][:1], streams["Audio"][:1]
    if _NOT_MEDIA.fullmatch(format_name):
        raise MediaError(f"not audio or video: {src} (ffmpeg reads it as {format_name})", stderr)
    if not (video or audio):
        raise MediaError(f"no audio or video stream in {src}", stderr)
    codecs = {s["codec"] for kind in streams.values() for s in kind}
    brand = re.search(r"^\s*major_brand\s*:\s*(\S+)", summary, flags=re.M)
    clock = re.search(r"^\s*Duration: (\d+):(\d+):(\d+(?:\.\d+)?)", summary, flags=re.M)
    duration = _seconds(clock.groups()) if clock else 0.0
    if duration <= 0 or check_length:
        measured = _measure_duration(src)
        # A duration estimated from the bitrate (headerless VBR mp3) can be off either way.
        trusted = duration > 0 and "Estimating duration from bitrate" not in stderr
        if check_length and trusted and measured < duration - max(0.5, 0.02 * duration):
            raise MediaError(
                f"{src} is cut short: its data ends at {measured:.2f}s of the "
                f"{duration:.2f}s its header announces"
            )
        duration = duration if duration > 0 else measured
    return MediaInfo(
        duration=duration,
        has_video=bool(video),
        has_audio=bool(audio),
        width=video[0]["width"] if video else None,
        height=video[0]["height"] if video else None,
        fps=video[0]["fps"] if video else None,
        audio_rate=audio[0]["rate"] if audio else None,
        audio_channels=audio[0]["channels"] if audio else None,
        subtitle_streams=len(streams["Subtitle"]),
        format_name=format_name,
        video_codec=video[0]["codec"] if video else None,
        audio_codec=audio[0]["codec"] if audio else None,
        subtitle_codecs=tuple(s["codec"] for s in streams["Subtitle"]),
        brand="webm"
        if "matroska" in format_name and codecs <= _WEBM_CODECS
        else (brand.group(1) if brand else ""),
    )


def parse_streams(summary: str) -> dict[str, list[dict]]:
    streams: dict[str, list[dict]] = {"Video": [], "Audio": [], "Subtitle": []}
    for block in re.split(r"^\s*Stream #", summary, flags=re.M)[1:]:
        line, _, details = block.partition("\n")
        found = re.match(r"\d+:\d+\S*: (Video|Audio|Subtitle): (\w+)(.*)", line)
        if found is None or "(attached pic)" in line:  # cover art is not video
            continue
        kind, codec, rest = found.groups()
        stream: dict = {"codec": codec}
        if kind == "Video":
            size = re.search(r"\b(\d{1,5})x(\d{1,5})\b", rest)
            width, height = (int(size.group(1)), int(size.group(2))) if size else (None, None)
            # Phones store portrait video as landscape plus a rotation.
            turn = re.search(r"rotation of (-?[\d.]+)", details)
            if turn and round(abs(float(turn.group(1)))) % 180 == 90:
                width, height = height, width
            rate = re.search(r"([\d.]+)(k?) (?:fps|tbr)", rest)
            fps = float(rate.group(1)) * (1000 if rate.group(2) else 1) if rate else None
            stream.update(width=width, height=height, fps=fps)
        elif kind == "Audio":
            rate = re.search(r"(\d+) Hz", rest)
            layout = re.search(r"Hz, ([^,]+)", rest)
            stream.update(
                rate=int(rate.group(1)) if rate else None,
                channels=_channel_count(layout.group(1)) if layout else None,
            )
        streams[kind].append(stream)
    return streams


def _channel_count(layout: str) -> int | None:
    layout = layout.strip().split("(")[0]
    named = {"mono": 1, "stereo": 2, "downmix": 2, "quad": 4, "hexagonal": 6, "octagonal": 8}
    if found := re.fullmatch(r"(\d+) channels", layout):
        return int(found.group(1))
    if found := re.fullmatch(r"(\d+)\.(\d+)", layout):
        return int(found.group(1)) + int(found.group(2))
    return named.get(layout)


def _measure_duration(src: str) -> float:
    # Copying packets to nowhere reads the whole file without decoding it: fast, and it knows
    # where the data really ends, also for streams written without a duration (piped webm).
    result = run(
        ["-i", src, "-map", "0:V:0?", "-map", "0:a:0?", "-c", "copy", "-f", "null", "-"],
        check=False,
    )
    times = re.findall(r"time=(\d+):(\d+):(\d+(?:\.\d+)?)", result.stderr)
    return _seconds(times[-1]) if times else 0.0


def _seconds(clock: tuple[str, ...]) -> float:
    hours, minutes, seconds = clock
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)
