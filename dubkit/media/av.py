"""Audio and video work, done by the static ffmpeg that ``imageio-ffmpeg`` ships.

Shared by the sandbox's pipeline and the client (one copy of every media step).

Probe files, decode and encode audio, stretch speech, cut thumbnails, extract tracks, mux dubbed
audio with soft or burned-in subtitles, make compressed variants, generate narrated test clips.
Timeline mixing (duck, place, mix, trim) is numpy-only and lives in :mod:`dubkit.media.mixing`.

>>> from dubkit.media import av
>>> info = av.probe("talk.mp4")                       # doctest: +SKIP
>>> info.category, info.mime_type, round(info.duration)  # doctest: +SKIP
('video', 'video/mp4', 60)

Choices worth knowing:

- The wheel has no ffprobe, so ``probe`` reads the stream summary ffmpeg prints for its input,
  decodes half a second and reads the packets through, to catch files whose header is fine but
  whose data is broken or cut short.
- Every run is held to ``THREADS`` threads: the sandbox shares the machine with the notebook
  kernel that waits for it.
- Burned subtitles need a font and no system font can be assumed: the default is Noto Sans from
  the ``fontpkg-noto-sans`` wheel (Latin, Greek, Cyrillic, Vietnamese). For other scripts pass
  ``fontsdir`` and ``style={"FontName": ...}``.
- Nothing runs at import time; the ffmpeg binary is located on first use.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import soundfile as sf

from ._ffmpeg import (
    THREADS,
    MediaError,
    MediaInfo,
    PathLike,
    existing,
    filter_value,
    header,
    out,
    parse_input,
    parse_streams,
    run,
)
from .subtitles import Cue, ass_style, parse_srt, to_srt

__all__ = [
    "MediaError",
    "MediaInfo",
    "probe",
    "decode_audio",
    "encode_audio",
    "time_stretch",
    "thumbnail",
    "extract_audio",
    "extract_subtitles",
    "mux",
    "compress",
    "stretch_video",
    "make_test_pattern",
    "default_fontsdir",
    "AUDIO_FORMATS",
    "FONT_FAMILY",
    "THREADS",
    "X264_PRESETS",
]

AUDIO_FORMATS = ("wav", "mp3", "m4a", "flac", "ogg")
FONT_FAMILY = "Noto Sans"
X264_PRESETS = (
    "ultrafast",
    "superfast",
    "veryfast",
    "faster",
    "fast",
    "medium",
    "slow",
    "slower",
    "veryslow",
)
# Text codecs ffmpeg turns into SubRip; bitmap subtitles (DVD, PGS) cannot become cues.
_TEXT_SUBTITLES = {"mov_text", "subrip", "srt", "ass", "ssa", "webvtt", "text"}
# Video an mp4 carries as it is, so muxing copies instead of re-encoding.
_MP4_VIDEO = {"h264", "hevc", "av1", "mpeg4"}


def probe(path: PathLike) -> MediaInfo:
    """Describe a media file; ``MediaError`` if it is not audio/video or its data is corrupt.

    >>> probe("clip.mp4").width  # doctest: +SKIP
    1280
    """
    src = existing(path)
    # The input summary and a short decode of the main streams, which catches broken data.
    result = run(
        ["-i", src, "-map", "0:V:0?", "-map", "0:a:0?", "-t", "0.5", "-f", "null", "-"], check=False
    )
    # Parsing first: "not media" and "no audio or video" say more than "damaged".
    info = parse_input(result.stderr, src, check_length=result.returncode == 0)
    if result.returncode != 0:
        raise MediaError(f"cannot decode {src}: the file is damaged", result.stderr)
    return info


def decode_audio(
    path: PathLike, sample_rate: int | None = None, mono: bool = True
) -> tuple[np.ndarray, int]:
    """First audio track of any file ffmpeg reads, as float32 in [-1, 1], and its sample rate.

    Mono gives shape ``(n,)``; ``mono=False`` keeps the channels: shape ``(n, channels)``.

    >>> samples, rate = decode_audio("talk.mp4", sample_rate=16000)  # doctest: +SKIP
    """
    src = existing(path)
    args = [
        "-i",
        src,
        "-map",
        "0:a:0",
        "-vn",
        "-sn",
        "-dn",
        *(["-ac", "1"] if mono else []),
        *(["-ar", str(sample_rate)] if sample_rate else []),
        "-f",
        "f32le",
        "-c:a",
        "pcm_f32le",
        "pipe:1",
    ]
    result = run(args, check=False)
    if result.returncode != 0:
        reason = (
            "no audio track" if "matches no streams" in result.stderr else "cannot decode audio"
        )
        raise MediaError(f"{reason} in {src}", result.stderr)
    # Rate and channels of what ffmpeg actually wrote, read from its output summary.
    written = parse_streams(result.stderr.split("Output #0", 1)[-1])["Audio"][0]
    samples = np.frombuffer(result.stdout, dtype="<f4").copy()
    return (samples if mono else samples.reshape(-1, written["channels"])), written["rate"]


def encode_audio(samples: np.ndarray, sample_rate: int, fmt: str, path: PathLike) -> None:
    """Write audio as ``wav`` (16-bit), ``flac``, ``ogg`` (Vorbis), ``mp3`` or ``m4a`` (AAC).

    >>> encode_audio(np.zeros(16000, np.float32), 16000, "mp3", "quiet.mp3")  # doctest: +SKIP
    """
    if fmt not in AUDIO_FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(AUDIO_FORMATS)}; got {fmt!r}")
    # 16-bit and lossy encoders wrap around or distort past full scale: clip first.
    data = np.clip(np.asarray(samples, dtype=np.float32), -1.0, 1.0)
    if fmt in ("wav", "flac", "ogg"):
        sf.write(
            str(path),
            data,
            sample_rate,
            format=fmt.upper(),
            subtype="VORBIS" if fmt == "ogg" else "PCM_16",
        )
        return
    codec = (
        ["-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp3"]
        if fmt == "mp3"
        else ["-c:a", "aac", "-b:a", "128k", "-f", "ipod"]
    )  # ipod: the mp4 muxer with the M4A brand
    run([*_raw_input(data, sample_rate), *codec, out(path)], input=data.tobytes())


def time_stretch(samples: np.ndarray, sample_rate: int, factor: float) -> np.ndarray:
    """Multiply the duration by ``factor`` (0.25..4) keeping the pitch; exact output length.

    Rubber Band rather than a chain of ``atempo``: one pass over the whole range, and cleaner
    speech at strong factors. The result is cut or padded to ``round(len * factor)`` samples so a
    dub lands exactly on its segment.

    >>> slower = time_stretch(speech, 24000, 1.25)  # doctest: +SKIP
    """
    if not 0.25 <= factor <= 4:
        raise ValueError(f"factor must be within 0.25..4; got {factor}")
    data = np.asarray(samples, dtype=np.float32)
    if factor != 1 and len(data):
        result = run(
            [
                *_raw_input(data, sample_rate),
                "-af",
                f"rubberband=tempo={1 / factor:.6f}",
                "-f",
                "f32le",
                "pipe:1",
            ],
            input=data.tobytes(),
        )
        data = np.frombuffer(result.stdout, dtype="<f4").reshape(-1, *data.shape[1:])
    target = round(len(samples) * factor)
    pad = np.zeros((max(0, target - len(data)), *data.shape[1:]), dtype=np.float32)
    return np.concatenate([data[:target], pad])


def thumbnail(video_path: PathLike, out_jpg: PathLike, at: float | None = None) -> None:
    """Save one frame as JPEG; by default a tenth into the clip (first frames are often black).

    >>> thumbnail("talk.mp4", "talk.jpg")  # doctest: +SKIP
    """
    src, info = _video(video_path)
    when = info.duration / 10 if at is None else at
    # Seeking at or past the last frame yields nothing, so stay a little before the end.
    when = min(max(0.0, when), max(0.0, info.duration - 0.1))
    run(
        [
            "-ss",
            f"{when:.3f}",
            "-i",
            src,
            "-map",
            "0:V:0",
            "-frames:v",
            "1",
            "-q:v",
            "3",
            "-update",
            "1",
            "-f",
            "image2",
            out(out_jpg),
        ]
    )
    if not Path(out_jpg).is_file() or Path(out_jpg).stat().st_size == 0:
        raise MediaError(f"no frame at {when:.2f}s in {src}")


def extract_audio(path: PathLike, out_path: PathLike) -> None:
    """Save the first audio track as m4a (AAC); AAC is copied, not re-encoded.

    >>> extract_audio("talk.mp4", "talk.m4a")  # doctest: +SKIP
    """
    src, info = existing(path), header(path)
    if not info.has_audio:
        raise MediaError(f"no audio track in {src}")
    run(
        [
            "-i",
            src,
            "-map",
            "0:a:0",
            *_aac(info, "128k"),
            "-movflags",
            "+faststart",
            "-f",
            "ipod",
            out(out_path),
        ]
    )


def extract_subtitles(path: PathLike) -> list[Cue]:
    """Cues of the first embedded text subtitle track (mov_text, SubRip, ASS, WebVTT); ``[]`` if none.

    Styling tags are dropped: the cues feed transcription, which wants the words.

    >>> [c.text for c in extract_subtitles("narrated.mp4")]  # doctest: +SKIP
    ['Hello there', 'Second line']
    """
    src, info = existing(path), header(path)
    track = _text_track(info)
    if track is None:
        return []
    result = run(["-i", src, "-map", f"0:s:{track}", "-f", "srt", "pipe:1"])
    cues = parse_srt(result.stdout.decode("utf-8", errors="replace"))
    return [Cue(c.start, c.end, re.sub(r"<[^>]*>|\{\\[^}]*\}", "", c.text).strip()) for c in cues]


def mux(
    video_path: PathLike,
    audio_path: PathLike,
    out_path: PathLike,
    *,
    subtitles_path: PathLike | None = None,
    burn: bool = False,
    soft: bool = True,
    style: dict[str, object] | None = None,
    fontsdir: PathLike | None = None,
) -> None:
    """Put the picture of one file and the audio of another into an mp4 as long as the picture.

    With ``subtitles_path`` (SRT or VTT) the mp4 gets a soft ``mov_text`` track (unless
    ``soft=False``) and, with ``burn=True``, the cues drawn into the picture in ``style`` (see
    ``subtitles.ass_style``). The video is copied unless something is burned or its codec does
    not fit mp4; then x264.

    >>> mux("talk.mp4", "dub.wav", "dubbed.mp4", subtitles_path="en.srt", burn=True)  # doctest: +SKIP
    """
    video, info = _video(video_path)
    audio, sound = existing(audio_path), header(audio_path)
    if not sound.has_audio:
        raise MediaError(f"no audio track in {audio}")
    subs = existing(subtitles_path) if subtitles_path is not None else None
    args = [
        "-i",
        video,
        "-i",
        audio,
        *(["-i", subs] if subs else []),
        "-map",
        "0:V:0",
        "-map",
        "1:a:0",
    ]
    if subs and burn:
        fonts = Path(fontsdir) if fontsdir is not None else default_fontsdir()
        if fonts is None:
            raise MediaError(
                "burned subtitles need a font: install fontpkg-noto-sans or pass fontsdir"
            )
        force = ass_style({"FontName": FONT_FAMILY, **(style or {})})
        burner = (
            f"subtitles=filename={filter_value(subs)}:fontsdir={filter_value(str(fonts))}"
            f":force_style={filter_value(force)}"
        )
        args += ["-vf", burner, *_x264(), "-crf", "23"]
    else:
        args += ["-c:v", "copy"] if info.video_codec in _MP4_VIDEO else [*_x264(), "-crf", "23"]
    args += _aac(sound, "128k")
    if subs and soft:
        # A burned cue plus a soft track shown by default would put every line on screen twice.
        args += [
            "-map",
            "2:s:0",
            "-c:s",
            "mov_text",
            "-disposition:s:0",
            "0" if burn else "default",
        ]
    run(
        [*args, "-t", f"{info.duration:.3f}", "-movflags", "+faststart", "-f", "mp4", out(out_path)]
    )


def compress(
    video_path: PathLike, outputs: Mapping[int, PathLike], *, preset: str = "veryfast"
) -> None:
    """Transcode to one mp4 per ``{height: path}``, each at most that tall, keeping the aspect ratio.

    The picture is decoded once and split between the outputs (one scaler and x264 encoder
    each, in the same ffmpeg run), so two variants cost two encodes but a single decode.
    ``preset`` is x264's speed/size trade-off (``X264_PRESETS``): on the 720p test card,
    ``superfast`` saves about a fifth of the time and makes files over twice as big. Audio and a
    text subtitle track come along; AAC audio is copied, not re-encoded.

    >>> compress("dubbed.mp4", {480: "dubbed-480p.mp4", 360: "dubbed-360p.mp4"})  # doctest: +SKIP
    """
    if not outputs:
        raise ValueError("outputs: at least one {height: path} is needed")
    if preset not in X264_PRESETS:
        raise ValueError(f"preset must be one of {', '.join(X264_PRESETS)}; got {preset!r}")
    src, info = _video(video_path)
    # Never upscale; 4:2:0 video needs even dimensions.
    heights = [min(h, info.height or h) // 2 * 2 for h in outputs]
    graph = (
        f"[0:V:0]split={len(heights)}"
        + "".join(f"[s{i}]" for i in range(len(heights)))
        + ";"
        + ";".join(f"[s{i}]scale=-2:{h}[v{i}]" for i, h in enumerate(heights))
    )
    track = _text_track(info)
    args = ["-i", src, "-filter_complex", graph]
    for i, path in enumerate(outputs.values()):
        args += ["-map", f"[v{i}]", *_x264(preset), "-crf", "26"]
        if info.has_audio:
            args += ["-map", "0:a:0", *_aac(info, "96k")]
        if track is not None:
            args += ["-map", f"0:s:{track}", "-c:s", "mov_text"]
        args += ["-threads", str(THREADS), "-movflags", "+faststart", "-f", "mp4", out(path)]
    run(args)


def stretch_video(video_path: PathLike, out_path: PathLike, factor: float) -> None:
    """Slow down (``factor`` > 1) or speed up the picture to ``factor`` times its length; no audio.

    For dynamic video length: the dubbed audio is muxed onto the stretched picture afterwards.
    The source frame rate is kept (frames are repeated or dropped).

    >>> stretch_video("talk.mp4", "talk-slow.mp4", 1.1)  # doctest: +SKIP
    """
    if not 0.25 <= factor <= 4:
        raise ValueError(f"factor must be within 0.25..4; got {factor}")
    src, info = _video(video_path)
    rate = f",fps={info.fps:g}" if info.fps else ""
    run(
        [
            "-i",
            src,
            "-map",
            "0:V:0",
            "-vf",
            f"setpts={factor:.6f}*PTS{rate}",
            *_x264(),
            "-crf",
            "23",
            "-an",
            "-sn",
            "-movflags",
            "+faststart",
            "-f",
            "mp4",
            out(out_path),
        ]
    )


def make_test_pattern(
    out_path: PathLike,
    duration: float,
    width: int = 1280,
    height: int = 720,
    fps: int = 25,
    audio: np.ndarray | None = None,
    sample_rate: int = 44100,
    subtitles: list[Cue] | None = None,
) -> None:
    """An mp4 test card (ffmpeg's ``testsrc2``) with the given audio and a soft subtitle track.

    ``audio`` is padded or cut to ``duration``; without it the track is a quiet 440 Hz tone.
    This is how the sandbox makes narrated sample clips offline.

    >>> make_test_pattern("card.mp4", 4, audio=speech, sample_rate=24000,
    ...                   subtitles=[Cue(0.5, 2.0, "Hello")])  # doctest: +SKIP
    """
    if audio is None:
        t = np.arange(round(duration * sample_rate)) / sample_rate
        audio = 0.2 * np.sin(2 * np.pi * 440 * t)
    with tempfile.TemporaryDirectory(prefix="dubkit-media-") as tmp:
        wav = os.path.join(tmp, "audio.wav")
        encode_audio(audio, sample_rate, "wav", wav)
        card = f"testsrc2=size={width}x{height}:rate={fps}:duration={duration}"
        inputs, maps = ["-f", "lavfi", "-i", card, "-i", wav], ["-map", "0:v", "-map", "1:a"]
        if subtitles:
            srt = os.path.join(tmp, "cues.srt")
            Path(srt).write_text(to_srt(subtitles), encoding="utf-8")
            inputs += ["-i", srt]
            maps += ["-map", "2:0", "-c:s", "mov_text", "-disposition:s:0", "default"]
        # ultrafast: a synthetic card compresses well anyway, and sample clips are made on demand.
        run(
            [
                *inputs,
                *maps,
                "-af",
                "apad",
                "-t",
                f"{duration:.3f}",
                "-c:v",
                "libx264",
                "-preset",
                "ultrafast",
                "-crf",
                "28",
                "-pix_fmt",
                "yuv420p",
                "-c:a",
                "aac",
                "-b:a",
                "128k",
                "-movflags",
                "+faststart",
                "-f",
                "mp4",
                out(out_path),
            ]
        )


def default_fontsdir() -> Path | None:
    """Folder holding the Noto Sans files of ``fontpkg-noto-sans``, or None when not installed."""
    try:
        import fontpkg_noto_sans
    except ImportError:
        return None
    folder = Path(fontpkg_noto_sans.ROOT) / "files"
    return folder if any(folder.glob("*.ttf")) else None


# --- helpers -----------------------------------------------------------------------------------


def _x264(preset: str = "veryfast") -> list[str]:
    return ["-c:v", "libx264", "-preset", preset, "-pix_fmt", "yuv420p"]


def _raw_input(data: np.ndarray, sample_rate: int) -> list[str]:
    channels = 1 if data.ndim == 1 else data.shape[1]
    return ["-f", "f32le", "-ar", str(sample_rate), "-ac", str(channels), "-i", "pipe:0"]


def _aac(info: MediaInfo, bitrate: str) -> list[str]:
    return ["-c:a", "copy"] if info.audio_codec == "aac" else ["-c:a", "aac", "-b:a", bitrate]


def _video(path: PathLike) -> tuple[str, MediaInfo]:
    info = header(path)
    if not info.has_video:
        raise MediaError(f"no video track in {existing(path)}")
    return existing(path), info


def _text_track(info: MediaInfo) -> int | None:
    return next((i for i, c in enumerate(info.subtitle_codecs) if c in _TEXT_SUBTITLES), None)
