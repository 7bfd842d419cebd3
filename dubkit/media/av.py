"""Audio and video work, done by the static ffmpeg that ``imageio-ffmpeg`` ships.

Shared by the sandbox's pipeline and the client (one copy of every media step).

Probe files, decode and encode audio, stretch speech, cut thumbnails, extract tracks. Jobs that
write an mp4 picture (mux dubbed audio with soft or burned-in subtitles, compressed variants,
stretched video, narrated test clips) live in :mod:`dubkit.media.mp4`; timeline mixing (duck,
place, mix, trim) is numpy-only and lives in :mod:`dubkit.media.mixing`.

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
- Nothing runs at import time; the ffmpeg binary is located on first use.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import soundfile as sf

from . import m4a
from ._ffmpeg import (
    THREADS,
    MediaError,
    MediaInfo,
    PathLike,
    existing,
    header,
    out,
    parse_input,
    parse_streams,
    run,
)
from .subtitles import Cue, parse_srt

__all__ = [
    "MediaError",
    "MediaInfo",
    "probe",
    "header",
    "decode_audio",
    "decode_audios",
    "decode_to_file",
    "encode_audio",
    "encode_clips",
    "time_stretch",
    "time_stretch_file",
    "thumbnail",
    "extract_audio",
    "extract_subtitles",
    "AUDIO_FORMATS",
    "THREADS",
]

AUDIO_FORMATS = ("wav", "mp3", "m4a", "flac", "ogg")
_BLOCK = 1 << 16  # frames encoded at a time
# Text codecs ffmpeg turns into SubRip; bitmap subtitles (DVD, PGS) cannot become cues.
_TEXT_SUBTITLES = {"mov_text", "subrip", "srt", "ass", "ssa", "webvtt", "text"}


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
    return decode_audios([path], sample_rate, mono)[0]


def decode_audios(
    paths: Sequence[PathLike], sample_rate: int | None = None, mono: bool = True
) -> list[tuple[np.ndarray, int]]:
    """:func:`decode_audio` of each file, all in one ffmpeg run (one start-up, not one per
    file). One file that cannot be decoded fails the run: decode one by one to learn which."""
    sources = [existing(path) for path in paths]
    with tempfile.TemporaryDirectory(prefix="dubkit-decode-") as tmp:
        outputs = [Path(tmp) / f"{i}.f32" for i in range(len(sources))]
        decoded = []
        for output, (rate, channels) in zip(outputs, _decode(sources, outputs, sample_rate, mono)):
            samples = np.fromfile(output, dtype="<f4")
            decoded.append((samples if mono else samples.reshape(-1, channels), rate))
    return decoded


def decode_to_file(
    path: PathLike, dest: PathLike, sample_rate: int | None = None, mono: bool = True
) -> tuple[int, int]:
    """:func:`decode_audio`, with the samples left in ``dest`` (raw float32, channels
    interleaved) rather than read into memory; returns the rate and channels written."""
    return _decode([existing(path)], [Path(dest)], sample_rate, mono)[0]


def _decode(
    sources: Sequence[str], outputs: Sequence[Path], sample_rate: int | None, mono: bool
) -> list[tuple[int, int]]:
    args = [arg for src in sources for arg in ("-i", src)]
    for i, output in enumerate(outputs):
        args += ["-map", f"{i}:a:0", "-vn", "-sn", "-dn", "-threads", "1"]
        args += ["-ac", "1"] if mono else []
        args += ["-ar", str(sample_rate)] if sample_rate else []
        args += ["-f", "f32le", "-c:a", "pcm_f32le", out(output)]
    result = run(args, check=False)
    if result.returncode != 0:
        reason = (
            "no audio track" if "matches no streams" in result.stderr else "cannot decode audio"
        )
        raise MediaError(f"{reason} in {', '.join(sources)}", result.stderr)
    # Rate and channels of what ffmpeg actually wrote, read from its output summaries.
    summaries = re.split(r"^Output #\d+", result.stderr, flags=re.M)[1:]
    written = [parse_streams(summary)["Audio"][0] for summary in summaries]
    return [(stream["rate"], stream["channels"]) for stream in written]


def encode_audio(samples: np.ndarray, sample_rate: int, fmt: str, path: PathLike) -> None:
    """Write audio as ``wav`` (16-bit), ``flac``, ``ogg`` (Vorbis), ``mp3`` or ``m4a`` (AAC).

    >>> encode_audio(np.zeros(16000, np.float32), 16000, "mp3", "quiet.mp3")  # doctest: +SKIP
    """
    encode_clips([samples], sample_rate, fmt, [path])


def encode_clips(
    clips: Sequence[np.ndarray], sample_rate: int, fmt: str, paths: Sequence[PathLike]
) -> None:
    """Write each clip to its path, as :func:`encode_audio` would one by one.

    The lossy formats go through one ffmpeg run for all of them: starting ffmpeg costs more
    than encoding a spoken line does. The encoders are the quick settings (AAC's ``fast``
    coder, LAME's ``-q 7``) at 128 kb/s: for speech the difference from their slow searches
    is not audible, and they take a third of the time.

    >>> encode_clips([hello, goodbye], 22050, "m4a", ["a.m4a", "b.m4a"])  # doctest: +SKIP
    """
    if fmt not in AUDIO_FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(AUDIO_FORMATS)}; got {fmt!r}")
    if len(clips) != len(paths):
        raise ValueError(f"{len(clips)} clips but {len(paths)} paths")
    if len(clips) <= 1 or fmt in ("wav", "flac", "ogg"):
        for clip, path in zip(clips, paths):
            encode_stream(_blocks(clip), sample_rate, _channels(clip), fmt, path)
        return
    if fmt == "m4a":
        _encode_m4a(clips, sample_rate, paths)
        return
    # One input, all clips end to end, cut back apart at their sample counts: each frame goes
    # to one output (asplit and a trim per output passed every frame through every trim).
    ends = np.cumsum([len(c) for c in clips])[:-1]
    cut = f"[0:a]asegment=samples={'|'.join(map(str, ends))}" + "".join(
        f"[s{i}]" for i in range(len(clips))
    )
    starts = ";".join(f"[s{i}]asetpts=PTS-STARTPTS[o{i}]" for i in range(len(clips)))
    outputs = [
        arg
        for i, path in enumerate(paths)
        for arg in ("-map", f"[o{i}]", "-threads", "1", *_codec(fmt), out(path))
    ]
    run(
        [*_raw_input(sample_rate, _channels(clips[0])), "-filter_complex", f"{cut};{starts}"]
        + outputs,
        input=_pcm(block for clip in clips for block in _blocks(clip)),
    )


def _encode_m4a(clips: Sequence[np.ndarray], sample_rate: int, paths: Sequence[PathLike]) -> None:
    """M4A clips from one AAC encoder: the clips as one stream, cut into files at frame
    boundaries (:mod:`dubkit.media.m4a`). An encoder per file, as mp3
    has, spent more on the encoders' set-up and flush than on a short line's audio."""
    empty = [i for i, clip in enumerate(clips) if not len(clip)]
    if empty:
        raise MediaError(f"no samples to encode in clip {empty[0]} (of {len(clips)})")
    channels = _channels(clips[0])
    placed, total = m4a.layout(clips)

    def silence(samples: int) -> np.ndarray:
        return np.zeros((samples, channels) if np.ndim(clips[0]) > 1 else samples, np.float32)

    def stream() -> Iterator[np.ndarray]:
        at = 0
        for clip, place in zip(clips, placed):
            yield silence(place.start - at)
            yield from _blocks(clip)
            at = place.start + place.length
        yield silence(total - at)

    adts = run(
        [*_raw_input(sample_rate, channels), *_AAC, "-f", "adts", "pipe:1"], input=_pcm(stream())
    ).stdout
    frames = m4a.adts_frames(adts)
    for place, path in zip(placed, paths):
        m4a.write(path, frames, place, sample_rate, channels)


def encode_stream(
    chunks: Iterable[np.ndarray], sample_rate: int, channels: int, fmt: str, path: PathLike
) -> None:
    """:func:`encode_audio` of the samples ``chunks`` make end to end, written as they come:
    a long track made a window at a time is never held whole."""
    if fmt not in AUDIO_FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(AUDIO_FORMATS)}; got {fmt!r}")
    if fmt in ("wav", "flac", "ogg"):
        subtype = "VORBIS" if fmt == "ogg" else "PCM_16"
        with sf.SoundFile(
            str(path), "w", sample_rate, channels, subtype, format=fmt.upper()
        ) as file:
            for chunk in chunks:
                file.write(_clipped(chunk))
        return
    run([*_raw_input(sample_rate, channels), *_codec(fmt), out(path)], input=_pcm(chunks))


_AAC = ["-c:a", "aac", "-aac_coder", "fast", "-b:a", "128k"]


def _codec(fmt: str) -> list[str]:
    if fmt == "mp3":
        return ["-c:a", "libmp3lame", "-b:a", "128k", "-compression_level", "7", "-f", "mp3"]
    return [*_AAC, "-f", "ipod"]  # ipod: the M4A brand


def _channels(samples: np.ndarray) -> int:
    return 1 if np.ndim(samples) == 1 else int(np.shape(samples)[1])


def _blocks(samples: np.ndarray) -> Iterator[np.ndarray]:
    return (samples[start : start + _BLOCK] for start in range(0, len(samples), _BLOCK))


def _pcm(chunks: Iterable[np.ndarray]) -> Iterator[bytes]:
    return (_clipped(chunk).astype("<f4").tobytes() for chunk in chunks)


def _clipped(samples: np.ndarray) -> np.ndarray:
    # 16-bit and lossy encoders wrap around or distort past full scale: clip first.
    return np.clip(np.asarray(samples, dtype=np.float32), -1.0, 1.0)


def time_stretch(samples: np.ndarray, sample_rate: int, factor: float) -> np.ndarray:
    """Multiply the duration by ``factor`` (0.25..4) keeping the pitch; exact output length.

    Rubber Band rather than a chain of ``atempo``: one pass over the whole range, and cleaner
    speech at strong factors. The result is cut or padded to ``round(len * factor)`` samples so a
    dub lands exactly on its segment.

    >>> slower = time_stretch(speech, 24000, 1.25)  # doctest: +SKIP
    """
    data = np.asarray(samples, dtype=np.float32)
    if _stretches(factor) and len(data):
        result = run(
            [*_raw_input(sample_rate, _channels(data)), *_rubberband(factor), "pipe:1"],
            input=data.tobytes(),
        )
        data = np.frombuffer(result.stdout, dtype="<f4").reshape(-1, *data.shape[1:])
    target = round(len(samples) * factor)
    pad = np.zeros((max(0, target - len(data)), *data.shape[1:]), dtype=np.float32)
    return np.concatenate([data[:target], pad])


def time_stretch_file(
    src: PathLike, dest: PathLike, sample_rate: int, channels: int, factor: float
) -> None:
    """:func:`time_stretch` of the raw float32 samples in ``src``, written to ``dest`` without
    holding them: the same samples, cut or padded the same way."""
    frames = Path(src).stat().st_size // (4 * channels)
    if _stretches(factor) and frames:
        run([*_raw_input(sample_rate, channels, out(src)), *_rubberband(factor), out(dest)])
    else:
        shutil.copyfile(src, dest)
    target = round(frames * factor) * 4 * channels
    with open(dest, "r+b") as file:
        file.truncate(target)  # past the end, truncate pads with zeros: silence


def _stretches(factor: float) -> bool:
    if not 0.25 <= factor <= 4:
        raise ValueError(f"factor must be within 0.25..4; got {factor}")
    return factor != 1


def _rubberband(factor: float) -> list[str]:
    return ["-af", f"rubberband=tempo={1 / factor:.6f}", "-f", "f32le"]


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
    """Cues of the first embedded text subtitle track (mov_text, SubRip, ASS, WebVTT), or ``[]``.

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


# --- helpers (the track ones are shared with :mod:`.mp4`) --------------------------------------


def _raw_input(sample_rate: int, channels: int, source: str = "pipe:0") -> list[str]:
    return ["-f", "f32le", "-ar", str(sample_rate), "-ac", str(channels), "-i", source]


def _aac(info: MediaInfo, bitrate: str) -> list[str]:
    return ["-c:a", "copy"] if info.audio_codec == "aac" else ["-c:a", "aac", "-b:a", bitrate]


def _video(path: PathLike) -> tuple[str, MediaInfo]:
    info = header(path)
    if not info.has_video:
        raise MediaError(f"no video track in {existing(path)}")
    return existing(path), info


def _text_track(info: MediaInfo) -> int | None:
    return next((i for i, c in enumerate(info.subtitle_codecs) if c in _TEXT_SUBTITLES), None)
