"""Real media work for the sandbox, done by the static ffmpeg that ``imageio-ffmpeg`` ships.

Probe, decode and encode audio, stretch speech in time, cut thumbnails, extract tracks, mux dubbed
audio with soft or burned-in subtitles, make compressed variants, and generate narrated test clips.

>>> from dubkit.sandbox.engines import media
>>> info = media.probe("talk.mp4")                      # doctest: +SKIP
>>> info.category, info.mime_type, round(info.duration)  # doctest: +SKIP
('video', 'video/mp4', 60)

Choices worth knowing:

- There is no ffprobe in the wheel, so ``probe`` reads the stream summary ffmpeg prints for its
  input and decodes half a second to catch files whose header is fine but whose data is not.
- Every call is bounded to ``THREADS`` threads: the sandbox shares the machine with the notebook
  kernel that is waiting for it.
- Burned subtitles need a font and no system font can be assumed: the default comes from the
  ``fontpkg-noto-sans`` wheel (Latin, Greek, Cyrillic, Vietnamese). For other scripts pass
  ``fontsdir`` and ``style={"FontName": ...}``.
- Nothing runs at import time; the ffmpeg path is resolved on first use.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Union

import numpy as np
import soundfile as sf

from .subtitles import Cue, ass_style, parse_srt, to_srt

__all__ = [
    "MediaError", "MediaInfo", "probe", "decode_audio", "encode_audio", "time_stretch",
    "trim_silence", "thumbnail", "extract_audio", "extract_subtitles", "mux", "compress",
    "stretch_video", "make_test_pattern", "default_fontsdir", "AUDIO_FORMATS",
]

PathLike = Union[str, "os.PathLike[str]"]

THREADS = 2
AUDIO_FORMATS = ("wav", "mp3", "m4a", "flac", "ogg")
FONT_FAMILY = "Noto Sans"
# Text codecs ffmpeg can turn into SubRip; bitmap subtitles (DVD, PGS) cannot become cues.
_TEXT_SUBTITLES = {"mov_text", "subrip", "srt", "ass", "ssa", "webvtt", "text"}
# Video codecs an mp4 can carry as they are, so muxing copies instead of re-encoding.
_MP4_VIDEO = {"h264", "hevc", "av1", "mpeg4"}
_X264 = ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"]


class MediaError(Exception):
    """ffmpeg could not do the job: unreadable, corrupt or unsuitable media.

    ``str(err)`` names the file and the step and ends with the tail of ffmpeg's own message.
    """

    def __init__(self, message: str, stderr: str = "") -> None:
        tail = "\n".join(stderr.strip().splitlines()[-12:])
        super().__init__(f"{message}\n--- ffmpeg said ---\n{tail}" if tail else message)
        self.stderr = stderr


@dataclass(frozen=True)
class MediaInfo:
    """What ``probe`` found. Sizes are as displayed (rotation applied); ``duration`` in seconds.

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
    brand: str = ""  # mp4 major brand (``isom``, ``qt``, ``M4A``): tells mp4, mov and m4a apart

    @property
    def category(self) -> str:
        """``"video"`` or ``"audio"``, the material categories of the service."""
        return "video" if self.has_video else "audio"

    @property
    def mime_type(self) -> str:
        """MIME type of the container, e.g. ``video/mp4``, ``audio/mpeg``, ``audio/mp4``."""
        kind = self.category
        names = set(self.format_name.split(","))
        if "mov" in names:
            if self.brand == "qt":
                return "video/quicktime"
            return "video/mp4" if kind == "video" else "audio/mp4"
        if "matroska" in names:
            return f"{kind}/webm" if self.brand == "webm" else f"{kind}/x-matroska"
        simple = {"mp3": "audio/mpeg", "wav": "audio/wav", "flac": "audio/flac", "aac": "audio/aac",
                  "ogg": f"{kind}/ogg", "avi": "video/x-msvideo", "flv": "video/x-flv",
                  "mpegts": "video/mp2t", "asf": f"{kind}/x-ms-asf", "aiff": "audio/aiff"}
        return next((simple[n] for n in names if n in simple), "application/octet-stream")


def probe(path: PathLike) -> MediaInfo:
    """Describe a media file; ``MediaError`` if it is not audio/video or its data is corrupt.

    >>> probe("clip.mp4").resolution if False else probe("clip.mp4").width  # doctest: +SKIP
    1280
    """
    src = _existing(path)
    # One process: the header summary plus a short decode of the main streams.
    result = _ffmpeg(["-i", src, "-map", "0:V:0?", "-map", "0:a:0?", "-t", "0.5", "-f", "null", "-"],
                     check=False)
    info = _parse_input(result.stderr, src)
    if result.returncode != 0:
        raise MediaError(f"cannot decode {src}: the file is damaged", result.stderr)
    if info.duration <= 0:
        info = _replace_duration(info, _measure_duration(src))
    return info


def decode_audio(path: PathLike, sample_rate: int | None = None,
                 mono: bool = True) -> tuple[np.ndarray, int]:
    """First audio track of any file ffmpeg reads, as float32 in [-1, 1], and its sample rate.

    Mono gives shape ``(n,)``; ``mono=False`` keeps the channels, shape ``(n, channels)``.

    >>> samples, rate = decode_audio("talk.mp4", sample_rate=16000)  # doctest: +SKIP
    """
    src = _existing(path)
    args = ["-i", src, "-map", "0:a:0", "-vn", "-sn", "-dn"]
    args += ["-ac", "1"] if mono else []
    args += ["-ar", str(sample_rate)] if sample_rate else []
    result = _ffmpeg([*args, "-f", "f32le", "-c:a", "pcm_f32le", "pipe:1"], check=False)
    if result.returncode != 0:
        reason = "no audio track" if "matches no streams" in result.stderr else "cannot decode audio"
        raise MediaError(f"{reason} in {src}", result.stderr)
    # Rate and channels of what ffmpeg actually wrote, read from its output summary.
    out = _parse_streams(result.stderr.split("Output #0", 1)[-1])
    rate, channels = out["audio"][0]["rate"], out["audio"][0]["channels"]
    samples = np.frombuffer(result.stdout, dtype="<f4").astype(np.float32)
    return (samples if mono else samples.reshape(-1, channels)), rate


def encode_audio(samples: np.ndarray, sample_rate: int, fmt: str, path: PathLike) -> None:
    """Write audio as ``wav`` (16-bit), ``flac``, ``ogg`` (Vorbis), ``mp3`` or ``m4a`` (AAC).

    >>> encode_audio(np.zeros(16000, np.float32), 16000, "mp3", "quiet.mp3")  # doctest: +SKIP
    """
    if fmt not in AUDIO_FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(AUDIO_FORMATS)}; got {fmt!r}")
    data = np.clip(np.asarray(samples, dtype=np.float32), -1.0, 1.0)
    if fmt in ("wav", "flac", "ogg"):
        subtype = "VORBIS" if fmt == "ogg" else "PCM_16"
        sf.write(str(path), data, sample_rate, format=fmt.upper(), subtype=subtype)
        return
    codec = ["-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp3"] if fmt == "mp3" else \
        ["-c:a", "aac", "-b:a", "128k", "-f", "ipod"]  # ipod = mp4 muxer with the M4A brand
    _ffmpeg([*_raw_input(data, sample_rate), *codec, _out(path)], input=data.tobytes())


def time_stretch(samples: np.ndarray, sample_rate: int, factor: float) -> np.ndarray:
    """Multiply the duration by ``factor`` (0.25..4) keeping the pitch; exact output length.

    Rubber Band rather than an ``atempo`` chain: one pass over the whole range and cleaner
    speech at strong factors. The result is cut or padded to ``round(len * factor)`` samples so a
    dub lands exactly on its segment.

    >>> slower = time_stretch(speech, 24000, 1.25)  # doctest: +SKIP
    """
    if not 0.25 <= factor <= 4:
        raise ValueError(f"factor must be within 0.25..4; got {factor}")
    data = np.asarray(samples, dtype=np.float32)
    target = round(len(data) * factor)
    if factor != 1 and len(data):
        result = _ffmpeg([*_raw_input(data, sample_rate), "-af", f"rubberband=tempo={1 / factor:.6f}",
                          "-f", "f32le", "pipe:1"], input=data.tobytes())
        stretched = np.frombuffer(result.stdout, dtype="<f4").reshape(-1, *data.shape[1:])
    else:
        stretched = data
    return _fit_length(stretched, target)


def thumbnail(video_path: PathLike, out_jpg: PathLike, at: float | None = None) -> None:
    """Save one frame as JPEG; by default a tenth into the clip (first frames are often black).

    >>> thumbnail("talk.mp4", "talk.jpg")  # doctest: +SKIP
    """
    src = _existing(video_path)
    info = _header(src)
    if not info.has_video:
        raise MediaError(f"no video track in {src} to take a thumbnail from")
    when = info.duration / 10 if at is None else at
    # Seeking at or past the last frame yields nothing, so stay a little before the end.
    when = min(max(0.0, when), max(0.0, info.duration - 0.1))
    _ffmpeg(["-ss", f"{when:.3f}", "-i", src, "-map", "0:V:0", "-frames:v", "1", "-q:v", "3",
             "-update", "1", "-f", "image2", _out(out_jpg)])
    if not Path(out_jpg).is_file() or Path(out_jpg).stat().st_size == 0:
        raise MediaError(f"no frame at {when:.2f}s in {src}")


def extract_audio(path: PathLike, out_path: PathLike) -> None:
    """Save the first audio track as m4a (AAC), copied without re-encoding when it is AAC already.

    >>> extract_audio("talk.mp4", "talk.m4a")  # doctest: +SKIP
    """
    src = _existing(path)
    info = _header(src)
    if not info.has_audio:
        raise MediaError(f"no audio track in {src}")
    codec = ["-c:a", "copy"] if _codecs(src, "audio")[:1] == ["aac"] else ["-c:a", "aac", "-b:a", "128k"]
    _ffmpeg(["-i", src, "-map", "0:a:0", *codec, "-movflags", "+faststart", "-f", "ipod",
             _out(out_path)])


def extract_subtitles(path: PathLike) -> list[Cue]:
    """Cues of the first embedded text subtitle track (mov_text, SubRip, ASS, WebVTT); ``[]`` if none.

    Styling tags are dropped: the cues feed transcription, which wants the words.

    >>> [c.text for c in extract_subtitles("narrated.mp4")]  # doctest: +SKIP
    ['Hello there', 'Second line']
    """
    src = _existing(path)
    text_tracks = [i for i, codec in enumerate(_codecs(src, "subtitle")) if codec in _TEXT_SUBTITLES]
    if not text_tracks:
        return []
    result = _ffmpeg(["-i", src, "-map", f"0:s:{text_tracks[0]}", "-f", "srt", "pipe:1"])
    cues = parse_srt(result.stdout.decode("utf-8", errors="replace"))
    return [Cue(c.start, c.end, _strip_tags(c.text)) for c in cues]


def mux(video_path: PathLike, audio_path: PathLike, out_path: PathLike, *,
        subtitles_path: PathLike | None = None, burn: bool = False, soft: bool = True,
        style: dict | None = None, fontsdir: PathLike | None = None) -> None:
    """Combine the video of one file with the audio of another into an mp4.

    With ``subtitles_path`` (SRT or VTT): a soft ``mov_text`` track (unless ``soft=False``), and
    with ``burn=True`` the cues also drawn into the picture. Video is copied when it can be and
    when nothing is burned; otherwise x264. The output lasts as long as the video.
    ``style`` takes ASS style fields (``FontName``, ``FontSize``, ``PrimaryColour``, ``Outline``,
    ``MarginV``, ``Alignment``...) plus the shorthands ``font``, ``size``, ``color`` ("#RRGGBB")
    and ``position`` ("top"/"bottom").

    >>> mux("talk.mp4", "dub.wav", "dubbed.mp4", subtitles_path="zh.srt", burn=True)  # doctest: +SKIP
    """
    video, audio = _existing(video_path), _existing(audio_path)
    info = _header(video)
    if not info.has_video:
        raise MediaError(f"no video track in {video}")
    if not _header(audio).has_audio:
        raise MediaError(f"no audio track in {audio}")
    subs = _existing(subtitles_path) if subtitles_path is not None else None
    args = ["-i", video, "-i", audio, *(["-i", subs] if subs else []), "-map", "0:V:0", "-map", "1:a:0"]
    if subs and burn:
        fonts = Path(fontsdir) if fontsdir is not None else default_fontsdir()
        if fonts is None:
            raise MediaError("burned subtitles need a font: install fontpkg-noto-sans or pass fontsdir")
        force = ass_style({"FontName": FONT_FAMILY, **(style or {})})
        args += ["-vf", f"subtitles=filename={_filter_value(subs)}:fontsdir={_filter_value(str(fonts))}"
                        f":force_style={_filter_value(force)}", *_X264, "-crf", "23"]
    elif _codecs(video, "video")[:1] and _codecs(video, "video")[0] in _MP4_VIDEO:
        args += ["-c:v", "copy"]
    else:
        args += [*_X264, "-crf", "23"]
    args += ["-c:a", "copy"] if _codecs(audio, "audio")[:1] == ["aac"] else ["-c:a", "aac", "-b:a", "128k"]
    if subs and soft:
        # A burned-in cue and a default soft track would show the same line twice.
        args += ["-map", "2:s:0", "-c:s", "mov_text", "-disposition:s:0", "0" if burn else "default"]
    _ffmpeg([*args, "-t", f"{info.duration:.3f}", "-movflags", "+faststart", "-f", "mp4", _out(out_path)])


def compress(video_path: PathLike, out_path: PathLike, height: int) -> None:
    """Transcode to an mp4 at most ``height`` pixels tall (e.g. 480, 360), keeping the aspect.

    Audio and a text subtitle track are carried over; AAC audio is copied, not re-encoded.

    >>> compress("dubbed.mp4", "dubbed-480p.mp4", 480)  # doctest: +SKIP
    """
    src = _existing(video_path)
    info = _header(src)
    if not info.has_video or info.height is None:
        raise MediaError(f"no video track in {src}")
    # Never upscale; x264 with 4:2:0 needs even dimensions.
    target = min(height, info.height) // 2 * 2
    args = ["-i", src, "-map", "0:V:0", "-vf", f"scale=-2:{target}", *_X264, "-crf", "26"]
    if info.has_audio:
        args += ["-map", "0:a:0", "-c:a"] + (["copy"] if _codecs(src, "audio")[:1] == ["aac"] else
                                              ["aac", "-b:a", "96k"])
    texts = [i for i, c in enumerate(_codecs(src, "subtitle")) if c in _TEXT_SUBTITLES]
    if texts:
        args += ["-map", f"0:s:{texts[0]}", "-c:s", "mov_text"]
    _ffmpeg([*args, "-movflags", "+faststart", "-f", "mp4", _out(out_path)])


def stretch_video(video_path: PathLike, out_path: PathLike, factor: float) -> None:
    """Slow down (``factor`` > 1) or speed up the picture; the result has no audio.

    Used for dynamic video length: the dubbed audio is muxed onto the stretched picture after.
    The frame rate stays that of the source (frames are repeated or dropped).

    >>> stretch_video("talk.mp4", "talk-slow.mp4", 1.1)  # doctest: +SKIP
    """
    if not 0.25 <= factor <= 4:
        raise ValueError(f"factor must be within 0.25..4; got {factor}")
    src = _existing(video_path)
    info = _header(src)
    if not info.has_video:
        raise MediaError(f"no video track in {src}")
    rate = f",fps={info.fps:g}" if info.fps else ""
    _ffmpeg(["-i", src, "-map", "0:V:0", "-vf", f"setpts={factor:.6f}*PTS{rate}", *_X264, "-crf", "23",
             "-an", "-sn", "-movflags", "+faststart", "-f", "mp4", _out(out_path)])


def make_test_pattern(out_path: PathLike, duration: float, width: int = 1280, height: int = 720,
                      fps: int = 25, audio: np.ndarray | None = None, sample_rate: int = 44100,
                      subtitles: list[Cue] | None = None) -> None:
    """An mp4 test card (ffmpeg's ``testsrc2``) with the given audio and a soft subtitle track.

    ``audio`` is padded or cut to ``duration``; without it the track is a quiet 440 Hz tone.
    This is how the sandbox makes narrated sample clips offline.

    >>> make_test_pattern("card.mp4", 4, audio=speech, sample_rate=24000,
    ...                   subtitles=[Cue(0.5, 2, "Hello")])  # doctest: +SKIP
    """
    if audio is None:
        t = np.arange(round(duration * sample_rate)) / sample_rate
        audio = (0.2 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    with tempfile.TemporaryDirectory(prefix="dubkit-media-") as tmp:
        wav = os.path.join(tmp, "audio.wav")
        encode_audio(audio, sample_rate, "wav", wav)
        args = ["-f", "lavfi", "-i", f"testsrc2=size={width}x{height}:rate={fps}:duration={duration}",
                "-i", wav]
        if subtitles:
            srt = os.path.join(tmp, "cues.srt")
            Path(srt).write_text(to_srt(subtitles), encoding="utf-8")
            args += ["-i", srt, "-map", "2:0", "-c:s", "mov_text", "-disposition:s:0", "default"]
        # ultrafast: a synthetic card compresses well anyway, and sample clips are made on demand.
        _ffmpeg([*args, "-map", "0:v", "-map", "1:a", "-af", "apad", "-t", f"{duration:.3f}",
                 "-c:v", "libx264", "-preset", "ultrafast", "-crf", "28", "-pix_fmt", "yuv420p",
                 "-c:a", "aac", "-b:a", "128k", "-movflags", "+faststart", "-f", "mp4", _out(out_path)])


def default_fontsdir() -> Path | None:
    """Folder of the font used for burned subtitles (from ``fontpkg-noto-sans``), or None."""
    try:
        import fontpkg_noto_sans
    except ImportError:
        return None
    folder = Path(fontpkg_noto_sans.ROOT) / "files"
    return folder if any(folder.glob("*.ttf")) else None


# --- running ffmpeg ----------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _exe() -> str:
    import imageio_ffmpeg  # resolved on first use: finding the binary starts a process

    return imageio_ffmpeg.get_ffmpeg_exe()


def _ffmpeg(args: list[str], *, input: bytes | None = None, check: bool = True
            ) -> subprocess.CompletedProcess[bytes]:
    """Run ffmpeg; stderr comes back decoded; ``MediaError`` on failure when ``check``."""
    cmd = [_exe(), "-hide_banner", "-nostdin", "-nostats", "-y", "-threads", str(THREADS),
           "-filter_threads", str(THREADS), *args]
    raw = subprocess.run(cmd, input=input, capture_output=True,
                         stdin=subprocess.DEVNULL if input is None else None)
    result = subprocess.CompletedProcess(cmd, raw.returncode, raw.stdout,
                                         raw.stderr.decode("utf-8", errors="replace"))
    if check and result.returncode != 0:
        target = next((a for a in reversed(args) if a.startswith(("/", "pipe:", "-"))), "")
        raise MediaError(f"ffmpeg failed (exit {result.returncode}) writing {target}", result.stderr)
    return result


def _raw_input(data: np.ndarray, sample_rate: int) -> list[str]:
    channels = 1 if data.ndim == 1 else data.shape[1]
    return ["-f", "f32le", "-ar", str(sample_rate), "-ac", str(channels), "-i", "pipe:0"]


def _existing(path: PathLike) -> str:
    resolved = Path(path).resolve()
    if not resolved.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    return str(resolved)


def _out(path: PathLike) -> str:
    # Absolute paths cannot be mistaken for ffmpeg protocols ("name:...") or options ("-x").
    return str(Path(path).resolve())


def _filter_value(value: str) -> str:
    """Escape a value for a filter option inside a filtergraph (two levels, as ffmpeg parses)."""
    for ch in "\\':":
        value = value.replace(ch, "\\" + ch)
    for ch in "\\'[],;":
        value = value.replace(ch, "\\" + ch)
    return value


def _fit_length(data: np.ndarray, target: int) -> np.ndarray:
    if len(data) >= target:
        return np.ascontiguousarray(data[:target], dtype=np.float32)
    pad = np.zeros((target - len(data), *data.shape[1:]), dtype=np.float32)
    return np.concatenate([data.astype(np.float32), pad])


def _strip_tags(text: str) -> str:
    return re.sub(r"<[^>]*>|\{\\[^}]*\}", "", text).strip()

