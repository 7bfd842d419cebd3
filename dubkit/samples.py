"""Sample media made on the spot, offline: narrated test clips, speech recordings, noise.

>>> from dubkit import samples
>>> clip = samples.narrated_clip("demo.mp4", ["Hello and welcome.", "This is a test card."])
>>> talk = samples.narrated_clip("talk.mp4", [("Shall we start?", "f2"), ("Yes, go on.", "m3")],
...                              bed_db=-34)                     # two voices over a quiet hum
>>> ref = samples.speech_recording("ref.wav", "Clone me if you can.", variant="m3",
...                                rate_wpm=125, pitch=25)
>>> big = samples.noise_wav("big.wav", 50 * 2**20)       # exactly 50 MiB

Speech comes from espeak-ng and pictures from ffmpeg's test card, both shipped in wheels:
nothing is downloaded. A narrated clip is the same file, byte for byte, for the same
arguments (its lines are spoken in a fresh process), so a recorded lesson's upload of it
matches when a student makes it again (:mod:`dubkit.cassette`). Speech recordings are not
bit-identical from one run to the next: espeak-ng carries state between utterances.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .media import av, fresh_speech, mp4, speech
from .media.subtitles import Cue

PathLike = str | os.PathLike[str]


def speech_recording(
    path: PathLike,
    text: str,
    *,
    locale: str = "en-US",
    variant: str | None = None,
    rate_wpm: int = 175,
    pitch: int = 50,
    pitch_range: int = 50,
) -> Path:
    """A recording of ``text`` by a synthetic speaker, in the format of ``path``'s suffix.

    ``variant`` (an espeak variant such as ``m3`` or ``f2``), ``rate_wpm`` (80-450), ``pitch``
    and ``pitch_range`` (0-100) make a speaker with a recognisable pitch and pace.
    """
    target = Path(path)
    fmt = target.suffix.lstrip(".").lower() or "wav"
    audio = speech.synthesize(
        text,
        speech.voice_for_locale(locale),
        variant=variant,
        prosody=speech.Prosody(rate_wpm=rate_wpm, pitch=pitch, pitch_range=pitch_range),
    )
    av.encode_audio(audio, speech.SAMPLE_RATE, fmt, target)
    return target


def narrated_clip(
    path: PathLike,
    script: Sequence[str | tuple[str, str]],
    *,
    locale: str = "en-US",
    variant: str | None = None,
    rate_wpm: int = 160,
    pause: float = 0.5,
    bed_db: float | None = None,
    subtitles: bool = True,
    width: int = 640,
    height: int = 360,
    fps: int = 25,
) -> Path:
    """An mp4 test card narrated line by line, with the lines as an embedded subtitle track.

    Each line is spoken, then ``pause`` seconds of silence; the clip starts and ends with
    ``pause`` too. A line is a string, spoken by ``variant``, or a ``(text, variant)`` pair
    for a voice of its own: ``[("Hello.", "f2"), ("Hi there.", "m3")]`` is a dialogue of two
    speakers. ``bed_db`` lays a steady 110 Hz hum that loud (peak, dBFS; -34 is quiet) under the
    whole clip, as a stand-in for music and ambience. The soft subtitle track (left out with
    ``subtitles=False``) holds one cue per line, timed to its speech.
    """
    if not script:
        raise ValueError("script: at least one line is needed")
    lines = []
    for i, line in enumerate(script):
        if isinstance(line, str):
            lines.append((line, variant))
        elif isinstance(line, tuple) and len(line) == 2:
            lines.append(line)
        else:
            raise ValueError(
                f"script[{i}]: expected a line of text or a (text, variant) pair, got {line!r}"
            )
    spoken_lines = fresh_speech.speak(lines, speech.voice_for_locale(locale), rate_wpm)
    rate = speech.SAMPLE_RATE
    gap = np.zeros(int(pause * rate), dtype=np.float32)
    audio, cues, clock = [gap], [], pause
    for (text, _), spoken in zip(lines, spoken_lines):
        length = len(spoken) / rate
        cues.append(Cue(round(clock, 3), round(clock + length, 3), text))
        audio += [spoken, gap]
        clock += length + pause
    track = np.concatenate(audio)
    if bed_db is not None:
        hum = np.sin(2 * np.pi * 110 * np.arange(len(track)) / rate).astype(np.float32)
        track += np.float32(10 ** (bed_db / 20)) * hum
    target = Path(path)
    mp4.make_test_pattern(
        target,
        round(clock, 3),
        width,
        height,
        fps,
        audio=track,
        sample_rate=rate,
        subtitles=cues if subtitles else None,
    )
    return target


def noise_wav(path: PathLike, size: int, *, sample_rate: int = 48000) -> Path:
    """A stereo 16-bit WAV of exactly ``size`` bytes of random samples, written 8 MiB at a time.

    Random bytes do not compress, so uploads of it measure transfer, not a codec.
    """
    if size < 44 + 4:
        raise ValueError("size: a WAV needs at least 48 bytes")
    data = (size - 44) // 4 * 4
    header = (
        b"RIFF"
        + struct.pack("<I", 36 + data)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, 2, sample_rate, sample_rate * 4, 4, 16)
        + b"data"
        + struct.pack("<I", data)
    )
    target = Path(path)
    with open(target, "wb") as out:
        out.write(header)
        left = size - 44
        while left:
            chunk = os.urandom(min(left, 8 * 1024 * 1024))
            out.write(chunk)
            left -= len(chunk)
    return target
