"""Sandbox TTS speed by output format, and the client's waveforms (issue 15, item 1).

    python bench/bench_tts_formats.py [--lines 1000,5000]

1. Lines per second the sandbox speaks in m4a (the service's default format), mp3 and wav, for
   1,000 and 5,000 new lines each (``client.tts.batch``: 50 lines a request, 4 in flight, no
   injected latency; a fresh sandbox and texts new to it, so nothing comes from its cache). The
   baseline is wav in the same run; the target is m4a and mp3 at >= 50% of wav's lines per
   second, and per-line time at 5,000 lines within a few percent of 1,000 (linear). Every
   format speaks the same texts (the sandbox caches a line per format, so none is a cache hit).
   Beside each lossy format, **its floor**, measured in the same run at the first line count:
   wav's own work (wall time, and CPU seconds of this process, the sandbox's included) plus
   bare ffmpeg encoding the same audio, taken from the wav lines, as one stream with the
   sandbox's encoder settings; on this machine's cores the floor takes
   max(wav's wall, (wav's CPU + the encode's CPU) / cores). It is a little generous (wav's work
   includes writing 16-bit files and bigger downloads, which a lossy format does not need), but
   it leaves out what every file costs its own encoder (set-up, priming, flush): batching lines
   into ffmpeg runs cannot beat it by much without a cheaper encoder setting.
2. The client drawing a 20-row speech table (``Speech._repr_html_``: waveform and player per
   row) from m4a and from wav lines it already holds, median of 5; the baseline is wav.

It talks to whatever ``dubkit`` is importable (PYTHONPATH picks an older checkout to compare).
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import statistics
import subprocess
import time

import imageio_ffmpeg
import numpy as np
import soundfile as sf

import dubkit
from dubkit import start_sandbox

VOICE = "sv_s1_en_us_clear_f"
FORMATS = ("wav", "m4a", "mp3")
# The sandbox's encoder settings (dubkit.media.av), spelled out as a hand-written script would.
CODECS = {
    "m4a": ["-c:a", "aac", "-aac_coder", "fast", "-b:a", "128k", "-f", "ipod"],
    "mp3": ["-c:a", "libmp3lame", "-b:a", "128k", "-compression_level", "7", "-f", "mp3"],
}


def cpu_seconds() -> float:
    """This process's CPU (the in-process sandbox's included) and its finished children's."""
    own, kids = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def encode_cpu(audio: np.ndarray, rate: int, fmt: str) -> float:
    """CPU seconds bare ffmpeg takes to encode ``audio`` (frames, or frames x channels) as one
    stream in ``fmt``."""
    channels = 1 if audio.ndim == 1 else audio.shape[1]
    cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-nostdin", "-y", "-f", "f32le"]
    cmd += ["-ar", str(rate), "-ac", str(channels), "-i", "pipe:0", *CODECS[fmt], os.devnull]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, input=audio.astype("<f4").tobytes(), check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def report_floor(fmt: str, count: int, speed: float, wav_work: tuple) -> None:
    wall, cpu, speech = wav_work
    clips = [sf.read(io.BytesIO(line.data), dtype="float32") for line in speech.lines]  # untimed
    rate = clips[0][1]
    encode = encode_cpu(np.concatenate([samples for samples, _ in clips]), rate, fmt)
    cores = len(os.sched_getaffinity(0))  # the cores this process may use
    floor = count / max(wall, (cpu + encode) / cores)
    print(
        f"      its floor: {floor:6.1f} lines/s ({floor / (count / wall):.0%} of wav): wav's "
        f"{cpu / count * 1000:.1f} ms CPU a line + bare ffmpeg's {encode / count * 1000:.1f} ms "
        f"on {cores} cores; dubkit at {speed / floor:.0%} of its floor",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", default="1000,5000")
    counts = [int(n) for n in parser.parse_args().lines.split(",")]
    box = start_sandbox()
    try:
        client = dubkit.Client(box.api_key, box.url)
        for fmt in FORMATS:  # warm: the engine's first start is not a per-line cost
            client.tts.speak(f"Warming up {fmt}.", VOICE, output_format=fmt)
        speed: dict[tuple[str, int], float] = {}
        wav_work: tuple[float, float, object] | None = None  # wall, CPU, lines at counts[0]
        for count in counts:
            texts = [f"Line {i} of {count}." for i in range(count)]
            for fmt in FORMATS:
                cpu, started = cpu_seconds(), time.perf_counter()
                speech = client.tts.batch(
                    texts, voice=VOICE, output_format=fmt, concurrency=4, progress=False
                )
                took, cpu = time.perf_counter() - started, cpu_seconds() - cpu
                if fmt == "wav" and wav_work is None:
                    wav_work = (took, cpu, speech)
                assert not speech.errors, speech.errors[:3]
                speed[fmt, count] = count / took
                print(
                    f"{count:>5} lines {fmt}: {took:6.1f} s, {count / took:6.1f} lines/s, "
                    f"{cpu / count * 1000:4.1f} ms CPU a line"
                    + (
                        f" ({speed[fmt, count] / speed['wav', count]:.0%} of wav)"
                        if fmt != "wav"
                        else ""
                    ),
                    flush=True,
                )
                if fmt != "wav" and count == counts[0] and wav_work is not None:
                    report_floor(fmt, count, speed[fmt, count], wav_work)
        if len(counts) > 1:
            small, large = counts[0], counts[-1]
            for fmt in FORMATS:
                ratio = speed[fmt, small] / speed[fmt, large]
                print(f"{fmt}: time per line at {large} lines is {ratio:.2f}x that at {small}")
        tables = {}
        for fmt in ("wav", "m4a"):
            speech = client.tts.batch(
                [f"Row {i} of a table." for i in range(20)],
                voice=VOICE,
                output_format=fmt,
                progress=False,
            )
            for line in speech.lines:
                assert line.data  # fetched once, as a notebook that plays the lines has them
            times = []
            for _ in range(5):
                started = time.perf_counter()
                speech._repr_html_()
                times.append(time.perf_counter() - started)
            tables[fmt] = statistics.median(times)
        print(
            f"20-row speech table drawn: m4a {tables['m4a'] * 1000:.0f} ms, "
            f"wav {tables['wav'] * 1000:.0f} ms ({tables['m4a'] / tables['wav']:.2f}x)"
        )
    finally:
        box.stop()


if __name__ == "__main__":
    main()
