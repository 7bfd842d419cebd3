"""Sandbox TTS speed by output format, and the client's waveforms (issue 15, item 1).

    python bench/bench_tts_formats.py [--lines 1000,5000]

1. Lines per second the sandbox speaks in m4a (the service's default format), mp3 and wav, for
   1,000 and 5,000 new lines each (``client.tts.batch``: 50 lines a request, 4 in flight, no
   injected latency; a fresh sandbox and texts new to it, so nothing comes from its cache). The
   baseline is wav in the same run; the target is m4a and mp3 at >= 50% of wav's lines per
   second, and per-line time at 5,000 lines within a few percent of 1,000 (linear).
2. The client drawing a 20-row speech table (``Speech._repr_html_``: waveform and player per
   row) from m4a and from wav lines it already holds, median of 5; the baseline is wav.

It talks to whatever ``dubkit`` is importable (PYTHONPATH picks an older checkout to compare).
"""

from __future__ import annotations

import argparse
import statistics
import time

import dubkit
from dubkit import start_sandbox

VOICE = "sv_s1_en_us_clear_f"
FORMATS = ("wav", "m4a", "mp3")


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
        for count in counts:
            for fmt in FORMATS:
                texts = [f"Line {i} of {count} for {fmt}." for i in range(count)]
                started = time.perf_counter()
                speech = client.tts.batch(
                    texts, voice=VOICE, output_format=fmt, concurrency=4, progress=False
                )
                took = time.perf_counter() - started
                assert not speech.errors, speech.errors[:3]
                speed[fmt, count] = count / took
                print(
                    f"{count:>5} lines {fmt}: {took:6.1f} s, {count / took:6.1f} lines/s"
                    + (
                        f" ({speed[fmt, count] / speed['wav', count]:.0%} of wav)"
                        if fmt != "wav"
                        else ""
                    ),
                    flush=True,
                )
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
