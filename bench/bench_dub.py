"""Translate-and-dub speed: a 60 s 720p narrated clip dubbed end to end by the sandbox.

    /work/venv/bin/python bench/bench_dub.py                 # default options, then burned subtitles
    /work/venv/bin/python bench/bench_dub.py --seconds 30 --no-burn

Prints, for each configuration, the wall time from submit to ``finished`` as the client sees it
(upload excluded: that is bench_upload's), its ratio to the 30 s target and to the clip's own
length (real-time factor), and the pipeline's own seconds per stage (``result.timings``;
``compress`` and ``publish`` overlap, so they can add up to more than ``total``).

The clip is ``dubkit.samples.narrated_clip``: a 1280x720 test card narrated line by line, with
the lines as soft subtitles (``--seconds`` long within 5 %; the printed length is the real one).
Making and uploading it is not timed.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import dubkit
from dubkit import samples
from dubkit import start_sandbox as start
from dubkit.media import av

TARGET_SECONDS = 30.0
STORY = (
    "The harbour wakes before the sun. Fishing boats slide out past the lighthouse, "
    "their engines low and steady. Gulls follow every wake, hoping for an easy meal. "
    "By seven the market stalls are open and the first crates of fish arrive on ice. "
    "Traders call out prices while the town slowly fills with voices. At noon the "
    "wind turns and the sea grows rough, so the smaller boats come home early. In the "
    "afternoon the nets are mended on the quay, knot by knot, by hands that have done "
    "it for forty years. When the light fades the lighthouse takes over again."
)


def make_clip(path: Path, seconds: float) -> tuple[Path, int]:
    """A narrated 720p clip of about ``seconds`` (within 5 %): lines of the story, cycled,
    their count corrected from the length of a first try. Returns the clip and its lines."""
    sentences = [s.strip() + "." for s in STORY.split(".") if s.strip()]
    count = max(1, round(seconds / 4))  # a first guess: ~4 s a line with its pause
    for _ in range(4):
        script = [sentences[i % len(sentences)] for i in range(count)]
        clip = samples.narrated_clip(path, script, width=1280, height=720)
        length = av.probe(clip).duration
        if abs(length - seconds) <= 0.05 * seconds:
            break
        count = max(1, round(count * seconds / length))
    return clip, count


def dub(client: dubkit.Client, material, **options) -> tuple[float, dict]:
    started = time.perf_counter()
    task = client.media.translate(material, target="fr-FR", source="en-US", **options)
    task.wait(timeout=600, poll_interval=0.1, max_interval=0.25)
    return time.perf_counter() - started, task.result.raw


def report(name: str, wall: float, raw: dict, seconds: float) -> None:
    timings = raw["timings"]
    print(
        f"\n{name}: {wall:.1f} s submit->finished for {seconds:.1f} s of 720p video "
        f"({len(raw['translatedScripts']['result'])} lines, "
        f"{raw['asrScripts']['speakerNum']} speakers)"
    )
    print(
        f"  vs target {TARGET_SECONDS:.0f} s: {wall / TARGET_SECONDS:.2f}x "
        f"({'within' if wall <= TARGET_SECONDS else 'OVER'} target); "
        f"real-time factor {wall / seconds:.2f}"
    )
    for stage, spent in timings.items():
        if stage != "total":
            print(f"  {stage:<11} {spent:6.2f} s  {spent / timings['total']:5.1%}")
    print(
        f"  {'total':<11} {timings['total']:6.2f} s  (pipeline wall time; the rest of the "
        f"{wall:.1f} s is queueing and polling)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--no-burn", action="store_true", help="skip the burned-subtitle run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dubkit-bench-dub-") as tmp:
        clip, lines = make_clip(Path(tmp) / "harbour-720p.mp4", args.seconds)
        box = start(Path(tmp) / "sandbox")
        try:
            client = dubkit.Client(box.api_key, box.url, sandbox=box)
            material = client.materials.upload(clip, progress=False)
            seconds = material.duration / 1000
            print(
                f"clip: {seconds:.1f} s, {material.resolution}, {lines} narrated "
                f"lines, {clip.stat().st_size / 1e6:.1f} MB"
            )
            runs = [("default options", {})]
            if not args.no_burn:
                runs.append(("burned subtitles", {"text": {"burn": True}}))
            for name, options in runs:
                wall, raw = dub(client, material, **options)
                report(name, wall, raw, seconds)
        finally:
            box.stop()


if __name__ == "__main__":
    main()
