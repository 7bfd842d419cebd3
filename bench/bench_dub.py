"""Translate-and-dub speed against the bare-ffmpeg floor, and memory by clip length (issue 15).

    python bench/bench_dub.py                       # 60 s of 720p; burned run; memory at 15/60/240 s
    python bench/bench_dub.py --seconds 30 --no-burn --memory ""

For each configuration (default options, then burned subtitles) it prints the wall time from
submit to ``finished`` as the client sees it (upload excluded: that is bench_upload's), the
pipeline's own seconds per stage (``result.timings``; ``compress`` runs beside the other stages,
so they add up to more than ``total``), and **the floor**: the wall time bare ffmpeg takes, in
this run, to make the same deliverables from the same inputs (the source clip and the dub's own
mix, stems and subtitles, taken from the finished task), scheduled as well as a hand-written
script could:

* default options (twice: the sandbox process's first dub also calibrates its voices, about a
  second of CPU, so the second is the steady state): the 480p and 360p pictures encoded from the source while, beside them, the
  mix is encoded to AAC, muxed onto the copied picture with its soft subtitles, the stems are
  encoded, the 16 kHz mono track is decoded and the thumbnail cut; then the variants get their
  sound (copied). Floor = max(both branches) + that last step.
* burned subtitles: the mix encoded, then one run that burns the cues once and encodes the
  720p dub and both variants, beside the stems and mono track; then the thumbnail.

Each warm setting runs ``--repeats`` times (dub, then its floor, alternating) and the median
ratio is printed with every pair; beside it, the CPU seconds of each side (the sandbox process
with its ffmpeg runs; the floor's ffmpeg runs): both sides keep the two cores busy, so the
CPU they spend is what their wall times come from. The sandbox's figure also holds its answers
to the client's polls and its idle loops: a little, and against dubkit.
Targets: dubkit <= 1.15x its floor, <= 1.25x with burned subtitles. The sandbox is a separate
process (``dubkit sandbox``): for ``--memory`` lengths, a fresh one dubs a clip of each length
and its peak resident memory (VmHWM) is printed (target: flat in clip length).

The clip is ``dubkit.samples.narrated_clip``: a 1280x720 test card narrated line by line, with
the lines as soft subtitles (``--seconds`` long within 5 %; the printed length is the real one).
Making and uploading it is not timed. It runs whatever ``dubkit`` is importable (PYTHONPATH
picks an older checkout to compare).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import imageio_ffmpeg
from _box import Box  # bench/_box.py

import dubkit
from dubkit import samples
from dubkit.media import av, mp4

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


@dataclass
class Run:
    wall: float  # seconds
    cpu: float  # CPU seconds: the sandbox process and its ffmpeg runs, or the floor's ffmpeg runs


def dub(box: Box, material, **options) -> tuple[Run, dict, str]:
    client = dubkit.Client(box.handle.api_key, box.handle.url)
    cpu, started = box.cpu_seconds(children=True), time.perf_counter()
    task = client.dubbing.create(material, target="fr-FR", source="en-US", **options)
    task.wait(timeout=900, poll_interval=0.1, max_interval=0.25)
    wall = time.perf_counter() - started
    return Run(wall, box.cpu_seconds(children=True) - cpu), task.result.raw, task.task_id


def report(name: str, pairs: list[tuple[Run, Run, dict]], seconds: float) -> None:
    """Median over the (dubkit, floor) pairs of their ratio; the stages of the median run."""
    ratios = [made.wall / bare.wall for made, bare, _ in pairs]
    median_run, median_bare, raw = sorted(pairs, key=lambda p: p[0].wall / p[1].wall)[
        len(pairs) // 2
    ]
    wall, bare = median_run.wall, median_bare.wall
    timings = raw["timings"]
    print(
        f"\n{name}: {wall:.1f} s submit->finished for {seconds:.1f} s of 720p video "
        f"({len(raw['translatedScripts']['result'])} lines, "
        f"{raw['asrScripts']['speakerNum']} speakers); real-time factor {wall / seconds:.2f}"
    )
    print(
        f"  bare-ffmpeg floor for the same outputs: {bare:.1f} s -> dubkit "
        f"{statistics.median(ratios):.2f}x (median of {len(pairs)}: "
        + ", ".join(f"{m.wall:.1f}/{b.wall:.1f} s" for m, b, _ in pairs)
        + ")"
    )
    print(
        f"  CPU seconds, dubkit/floor: {statistics.median(m.cpu / b.cpu for m, b, _ in pairs):.2f}x"
        " (median of " + ", ".join(f"{m.cpu:.1f}/{b.cpu:.1f}" for m, b, _ in pairs) + ")"
    )
    for stage, spent in timings.items():
        if stage != "total":
            print(f"  {stage:<11} {spent:6.2f} s  {spent / timings['total']:5.1%}")
    print(f"  {'total':<11} {timings['total']:6.2f} s  (pipeline wall time)")


# --------------------------------------------------------------------------- the floor

FF = imageio_ffmpeg.get_ffmpeg_exe()
X264 = ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-threads", "2"]
AAC = ["-c:a", "aac", "-aac_coder", "fast", "-b:a", "128k"]
MP4 = ["-movflags", "+faststart", "-f", "mp4"]


def ffmpeg(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run([FF, "-v", "error", "-nostdin", "-y", *args], check=True)
    return time.perf_counter() - started


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def floor(task_dir: Path, clip: Path, work: Path, burn: bool) -> Run:
    """The bare-ffmpeg wall time for this task's deliverables (see the module docstring), and
    the CPU its ffmpeg runs took."""
    srt = next(task_dir.glob("subtitles.*.srt"))
    inputs = {}
    for name in ("dubbed.m4a", "stems/speech.m4a", "stems/background.m4a"):  # untimed
        samples_, rate = av.decode_audio(task_dir / name, mono=False)
        inputs[name] = work / (Path(name).stem + ".wav")
        av.encode_audio(samples_, rate, "wav", inputs[name])
    duration = f"{av.probe(clip).duration:.3f}"
    cpu = children_cpu()  # from here on, only the floor's own runs
    m4a, dubbed = work / "dub.m4a", work / "dubbed.mp4"
    soft = ["-map", "2:s:0", "-c:s", "mov_text", "-disposition:s:0"]

    def stems_and_mono() -> float:
        return (
            ffmpeg("-i", str(inputs["stems/speech.m4a"]), *AAC, str(work / "speech.m4a"))
            + ffmpeg("-i", str(inputs["stems/background.m4a"]), *AAC, str(work / "bg.m4a"))
            + ffmpeg("-i", str(clip), "-ac", "1", "-ar", "16000", str(work / "mono.wav"))
        )

    def thumbnail() -> float:
        return ffmpeg("-ss", "2", "-i", str(dubbed), "-frames:v", "1", str(work / "thumb.jpg"))

    def variants_graph(first: str) -> list[str]:
        return [
            "-filter_complex",
            f"[0:V:0]{first}[s0][s1];[s0]scale=-2:480[v0];[s1]scale=-2:360[v1]",
        ]

    encode_mix = ffmpeg("-i", str(inputs["dubbed.m4a"]), *AAC, str(m4a))
    if burn:
        fonts = mp4.default_fontsdir()
        burner = f"subtitles=filename={srt}:fontsdir={fonts},split=3[main]"
        with ThreadPoolExecutor(1) as pool:
            beside = pool.submit(stems_and_mono)
            one_pass = ffmpeg(
                "-i", str(clip), "-i", str(m4a), "-i", str(srt), *variants_graph(burner),
                "-map", "[main]", *X264, "-crf", "23", "-map", "1:a:0", "-c:a", "copy",
                *soft, "0", "-t", duration, *MP4, str(dubbed),
                *(arg for i, h in enumerate((480, 360)) for arg in (
                    "-map", f"[v{i}]", *X264, "-crf", "26", "-map", "1:a:0", "-c:a", "copy",
                    *soft, "0", "-t", duration, *MP4, str(work / f"v{h}.mp4"))),
            )  # fmt: skip
            rest = beside.result()
        wall = encode_mix + max(one_pass, rest) + thumbnail()
        return Run(wall, children_cpu() - cpu)

    def pictures() -> float:
        return ffmpeg(
            "-i", str(clip), *variants_graph("split=2"),
            *(arg for i, h in enumerate((480, 360))
              for arg in ("-map", f"[v{i}]", *X264, "-crf", "26", *MP4, str(work / f"p{h}.mp4"))),
        )  # fmt: skip

    with ThreadPoolExecutor(1) as pool:
        picture_branch = pool.submit(pictures)
        audio_branch = encode_mix + ffmpeg(
            "-i", str(clip), "-i", str(m4a), "-i", str(srt), "-map", "0:V:0", "-c:v", "copy",
            "-map", "1:a:0", "-c:a", "copy", *soft, "default", "-t", duration, *MP4, str(dubbed),
        )  # fmt: skip
        audio_branch += stems_and_mono() + thumbnail()
        picture_time = picture_branch.result()
    dress = sum(
        ffmpeg(
            "-i",
            str(work / f"p{h}.mp4"),
            "-i",
            str(m4a),
            "-i",
            str(srt),
            "-map",
            "0:V:0",
            "-c:v",
            "copy",
            "-map",
            "1:a:0",
            "-c:a",
            "copy",
            *soft,
            "default",
            "-t",
            duration,
            *MP4,
            str(work / f"v{h}.mp4"),
        )  # fmt: skip
        for h in (480, 360)
    )
    return Run(max(picture_time, audio_branch) + dress, children_cpu() - cpu)


# --------------------------------------------------------------------------- runs


def speed(tmp: Path, seconds: float, burn: bool, repeats: int) -> None:
    clip, lines = make_clip(tmp / "harbour-720p.mp4", seconds)
    box = Box(tmp / "box")
    try:
        material = box.start().materials.upload(clip, progress=False)
        length = material.duration / 1000
        print(
            f"clip: {length:.1f} s, {material.resolution}, {lines} narrated "
            f"lines, {clip.stat().st_size / 1e6:.1f} MB"
        )
        # The sandbox's first dub also calibrates the voices it speaks with (measuring espeak
        # over a grid of its settings, once per process): shown once, then measured warm.
        runs = [("default options, first dub of the sandbox process", {}, 1)]
        runs.append(("default options", {}, repeats))
        if burn:
            runs.append(("burned subtitles", {"text": {"burn": True}}, repeats))
        for index, (name, options, times) in enumerate(runs):
            pairs = []  # dub, then its floor, alternating: a busy spell of the machine hits both
            for attempt in range(times):
                made, raw, task_id = dub(box, material, **options)
                work = tmp / f"floor-{index}-{attempt}"
                work.mkdir()
                media = box.data_dir / "files" / "media" / task_id
                pairs.append((made, floor(media, clip, work, bool(options)), raw))
            report(name, pairs, length)
    finally:
        box.stop()


def memory(tmp: Path, lengths: list[float]) -> None:
    print("\npeak sandbox memory (VmHWM of a fresh sandbox process that dubbed one clip):")
    for seconds in lengths:
        clip, _ = make_clip(tmp / f"memory-{seconds:g}.mp4", seconds)
        box = Box(tmp / f"memory-box-{seconds:g}")
        try:
            material = box.start().materials.upload(clip, progress=False)
            idle = box.memory_kb()["VmHWM"] / 1024
            dub(box, material)
            peak = box.memory_kb()["VmHWM"] / 1024
            print(
                f"  {material.duration / 1000:6.1f} s clip: peak {peak:6.0f} MB "
                f"(before the dub {idle:.0f} MB)"
            )
        finally:
            box.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--no-burn", action="store_true", help="skip the burned-subtitle run")
    parser.add_argument("--memory", default="15,60,240", help="clip lengths for memory; '' skips")
    parser.add_argument("--no-speed", action="store_true", help="memory only")
    parser.add_argument("--repeats", type=int, default=3, help="dub/floor pairs per setting")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dubkit-bench-dub-") as tmp:
        if not args.no_speed:
            speed(Path(tmp), args.seconds, not args.no_burn, args.repeats)
        if args.memory:
            memory(Path(tmp), [float(s) for s in args.memory.split(",")])


if __name__ == "__main__":
    main()
