"""Jobs that write an mp4 picture, with the static ffmpeg's x264: mux, compress, stretch, test card.

Apart from :mod:`dubkit.media.av` because these are the heavy encodes that build a deliverable
(the dubbed video, its smaller variants, sample clips), whereas ``av`` reads media and handles
audio. They build on ``av``'s track helpers and never the other way round.

>>> from dubkit.media import mp4
>>> mp4.mux("talk.mp4", "dub.wav", "dubbed.mp4", subtitles_path="fr.srt")  # doctest: +SKIP
>>> mp4.compress("dubbed.mp4", {480: "dubbed-480p.mp4"})                   # doctest: +SKIP

Burned subtitles need a font and no system font can be assumed: the default is Noto Sans from
the ``fontpkg-noto-sans`` wheel (Latin, Greek, Cyrillic, Vietnamese). For other scripts pass
``fontsdir`` and ``style={"FontName": ...}``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ._ffmpeg import (
    THREADS,
    MediaError,
    MediaInfo,
    PathLike,
    existing,
    filter_value,
    header,
    out,
    run,
)
from .av import _aac, _text_track, _video, encode_audio
from .subtitles import Cue, ass_style, to_srt

__all__ = [
    "mux",
    "add_sound",
    "compress",
    "stretch_video",
    "make_test_pattern",
    "default_fontsdir",
    "FONT_FAMILY",
    "X264_PRESETS",
]

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
# Video an mp4 carries as it is, so muxing copies instead of re-encoding.
_MP4_VIDEO = {"h264", "hevc", "av1", "mpeg4"}


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
    variants: Mapping[int, PathLike] | None = None,
) -> None:
    """Put the picture of one file and the audio of another into an mp4 as long as the picture.

    With ``subtitles_path`` (SRT or VTT) the mp4 gets a soft ``mov_text`` track (unless
    ``soft=False``) and, with ``burn=True``, the cues drawn into the picture in ``style`` (see
    ``subtitles.ass_style``). The video is copied unless something is burned or its codec does
    not fit mp4; then x264. ``variants`` (``{height: path}``) are smaller copies of the result
    made in the same run, as :func:`compress` would make them from it: the picture is decoded
    and subtitles are burned once for all of them.

    >>> mux("talk.mp4", "dub.wav", "dubbed.mp4", subtitles_path="en.srt",
    ...     burn=True)  # doctest: +SKIP
    """
    video, info = _video(video_path)
    audio, sound = existing(audio_path), header(audio_path)
    if not sound.has_audio:
        raise MediaError(f"no audio track in {audio}")
    subs = existing(subtitles_path) if subtitles_path is not None else None
    args = ["-i", video, "-i", audio, *(["-i", subs] if subs else [])]
    picture = "0:V:0"
    burner = ""
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
    heights = _heights(info, variants or {})
    if burner or heights:
        branches = (["[main]"] if burner else []) + [f"[s{i}]" for i in range(len(heights))]
        graph = f"[0:V:0]{burner or 'null'},split={len(branches)}{''.join(branches)}"
        graph += "".join(f";[s{i}]scale=-2:{h}[v{i}]" for i, h in enumerate(heights))
        args += ["-filter_complex", graph]
        picture = "[main]" if burner else picture
    duration = ["-t", f"{info.duration:.3f}", "-movflags", "+faststart", "-f", "mp4"]
    tracks = _tracks(sound, "128k", subs if soft else None, shown=not burn)
    if burner or info.video_codec not in _MP4_VIDEO:
        coded = [*_x264(), "-crf", "23"]
    else:
        coded = ["-c:v", "copy"]
    args += ["-map", picture, *coded, *tracks, *duration, out(out_path)]
    for i, path in enumerate((variants or {}).values()):
        args += ["-map", f"[v{i}]", *_x264(), "-crf", "26", "-threads", str(THREADS)]
        args += [*_tracks(sound, "96k", subs if soft else None, shown=not burn), *duration]
        args.append(out(path))
    run(args)


def add_sound(
    pictures: Mapping[PathLike, PathLike],
    audio_path: PathLike,
    *,
    subtitles_path: PathLike | None = None,
) -> None:
    """:func:`mux` of several pictures with one sound, in one run: ``{picture: out_path}``,
    each picture copied (it must be mp4-ready, e.g. from ``compress(..., tracks=False)``)."""
    audio, sound = existing(audio_path), header(audio_path)
    subs = existing(subtitles_path) if subtitles_path is not None else None
    sources = [_video(path) for path in pictures]
    args = [arg for src, _ in sources for arg in ("-i", src)]
    args += ["-i", audio, *(["-i", subs] if subs else [])]
    for i, ((_, info), path) in enumerate(zip(sources, pictures.values())):
        args += ["-map", f"{i}:V:0", "-c:v", "copy"]
        args += _tracks(sound, "128k", subs, shown=True, first=len(sources))
        args += ["-t", f"{info.duration:.3f}", "-movflags", "+faststart", "-f", "mp4", out(path)]
    run(args)


def _tracks(
    sound: MediaInfo, bitrate: str, subs: str | None, *, shown: bool, first: int = 1
) -> list[str]:
    """Input ``first``'s audio, and the next input's cues as a soft track (shown by default
    unless burned: a burned cue plus a shown one would put every line on screen twice)."""
    tracks = ["-map", f"{first}:a:0", *_aac(sound, bitrate)]
    if subs:
        tracks += ["-map", f"{first + 1}:s:0", "-c:s", "mov_text", "-disposition:s:0"]
        tracks.append("default" if shown else "0")
    return tracks


def _heights(info: MediaInfo, outputs: Mapping[int, PathLike]) -> list[int]:
    # Never upscale; 4:2:0 video needs even dimensions.
    return [min(h, info.height or h) // 2 * 2 for h in outputs]


def compress(
    video_path: PathLike,
    outputs: Mapping[int, PathLike],
    *,
    preset: str = "veryfast",
    tracks: bool = True,
) -> None:
    """Transcode to one mp4 per ``{height: path}``, each at most that tall, aspect ratio kept.

    The picture is decoded once and split between the outputs (one scaler and x264 encoder
    each, in the same ffmpeg run), so two variants cost two encodes but a single decode.
    ``preset`` is x264's speed/size trade-off (``X264_PRESETS``): on the 720p test card,
    ``superfast`` saves about a fifth of the time and makes files over twice as big. Audio and a
    text subtitle track come along (AAC audio is copied, not re-encoded) unless ``tracks`` is
    False: then the picture alone, to be given its sound later with :func:`mux`.

    >>> compress("dubbed.mp4", {480: "dubbed-480p.mp4", 360: "dubbed-360p.mp4"})  # doctest: +SKIP
    """
    if not outputs:
        raise ValueError("outputs: at least one {height: path} is needed")
    if preset not in X264_PRESETS:
        raise ValueError(f"preset must be one of {', '.join(X264_PRESETS)}; got {preset!r}")
    src, info = _video(video_path)
    heights = _heights(info, outputs)
    graph = (
        f"[0:V:0]split={len(heights)}"
        + "".join(f"[s{i}]" for i in range(len(heights)))
        + ";"
        + ";".join(f"[s{i}]scale=-2:{h}[v{i}]" for i, h in enumerate(heights))
    )
    track = _text_track(info) if tracks else None
    args = ["-i", src, "-filter_complex", graph]
    for i, path in enumerate(outputs.values()):
        args += ["-map", f"[v{i}]", *_x264(preset), "-crf", "26"]
        if info.has_audio and tracks:
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


def _x264(preset: str = "veryfast") -> list[str]:
    return ["-c:v", "libx264", "-preset", preset, "-pix_fmt", "yuv420p"]
