"""Translate-and-dub speed: a 60 s 720p narrated clip dubbed end to end by the sandbox.

    /work/venv/bin/python bench/bench_dub.py                 # default options, then burned subtitles
    /work/venv/bin/python bench/bench_dub.py --seconds 30 --no-burn

Prints, for each configuration, the wall time from submit to ``finished`` as the client sees it
(upload excluded: that is bench_upload's), its ratio to the 30 s target and to the clip's own
length (real-time factor), and the pipeline's own seconds per stage (``result.timings``;
``compress`` and ``publish`` overlap, so they can add up to more than ``total``).

The clip is a 1280x720 test card narrated by two alternating espeak voices with soft subtitles,
made here by the sandbox's own engines; making it is not timed.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import dubkit
from dubkit.sandbox import start
from dubkit.sandbox.engines import media, speech
from dubkit.sandbox.engines.subtitles import Cue

TARGET_SECONDS = 30.0
STORY = ("The harbour wakes before the sun. Fishing boats slide out past the lighthouse, "
         "their engines low and steady. Gulls follow every wake, hoping for an easy meal. "
         "By seven the market stalls are open and the first crates of fish arrive on ice. "
         "Traders call out prices while the town slowly fills with voices. At noon the "
         "wind turns and the sea grows rough, so the smaller boats come home early. In the "
         "afternoon the nets are mended on the quay, knot by knot, by hands that have done "
         "it for forty years. When the light fades the lighthouse takes over again.")


def narrated_clip(path: Path, seconds: float) -> int:
    """A 720p card narrated sentence by sentence until ``seconds``; returns the line count."""
    rate = speech.SAMPLE_RATE
    sentences = [s.strip() + "." for s in STORY.split(".") if s.strip()]
    parts, cues, at, i = [np.zeros(rate // 2, np.float32)], [], 0.5, 0
    while True:
        said = speech.synthesize(sentences[i % len(sentences)], "en-us",
                                 variant=("f2", "m3")[i % 2])
        if at + len(said) / rate > seconds - 0.5:
            break
        cues.append(Cue(round(at, 3), round(at + len(said) / rate, 3),
                        sentences[i % len(sentences)]))
        parts += [said, np.zeros(round(0.6 * rate), np.float32)]
        at += len(said) / rate + 0.6
        i += 1
    media.make_test_pattern(path, seconds, width=1280, height=720, audio=np.concatenate(parts),
                            sample_rate=rate, subtitles=cues)
    return len(cues)


def dub(client: dubkit.Client, material, **options) -> tuple[float, dict]:
    started = time.perf_counter()
    task = client.media.translate(material, target="fr-FR", source="en-US", **options)
    task.wait(timeout=600, poll_interval=0.1, max_interval=0.25)
    return time.perf_counter() - started, task.result.raw


def report(name: str, wall: float, raw: dict, seconds: float) -> None:
    timings = raw["timings"]
    print(f"\n{name}: {wall:.1f} s submit->finished for {seconds:.0f} s of 720p video "
          f"({len(raw['translatedScripts']['result'])} lines, "
          f"{raw['asrScripts']['speakerNum']} speakers)")
    print(f"  vs target {TARGET_SECONDS:.0f} s: {wall / TARGET_SECONDS:.2f}x "
          f"({'within' if wall <= TARGET_SECONDS else 'OVER'} target); "
          f"real-time factor {wall / seconds:.2f}")
    for stage, spent in timings.items():
        if stage != "total":
            print(f"  {stage:<11} {spent:6.2f} s  {spent / timings['total']:5.1%}")
    print(f"  {'total':<11} {timings['total']:6.2f} s  (pipeline wall time; the rest of the "
          f"{wall:.1f} s is queueing and polling)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--no-burn", action="store_true", help="skip the burned-subtitle run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dubkit-bench-dub-") as tmp:
        clip = Path(tmp) / "harbour-720p.mp4"
        lines = narrated_clip(clip, args.seconds)
        print(f"clip: {args.seconds:.0f} s, 1280x720, {lines} narrated lines, "
              f"{clip.stat().st_size / 1e6:.1f} MB")
        box = start(Path(tmp) / "sandbox")
        try:
            client = dubkit.Client(box.api_key, box.url, sandbox=box)
            material = client.materials.upload(clip, progress=False)
            runs = [("default options", {})]
            if not args.no_burn:
                runs.append(("burned subtitles", {"text": {"burn": True}}))
            for name, options in runs:
                wall, raw = dub(client, material, **options)
                report(name, wall, raw, args.seconds)
        finally:
            box.stop()


if __name__ == "__main__":
    main()
