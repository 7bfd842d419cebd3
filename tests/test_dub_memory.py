"""A dub holds a window of its audio at a time, never the whole clip (issue 15, item 4); the
rest waits in a scratch folder that the run removes.

What the pipeline allocates at its peak is measured with tracemalloc, which sees numpy's
arrays; no wall-clock. A clip four times as long may add the per-frame analysis it keeps
(VAD band powers, 51 kB a second), not its samples: the old pipeline held the decoded
original, its mono mix and every dubbed line at once, which grew by several times more.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from _pipeline_fixtures import backend  # noqa: F401  (fixture)

from dubkit import samples
from dubkit.media import av
from dubkit.sandbox import pipeline
from dubkit.sandbox.pipeline import WORK_RATE
from dubkit.sandbox.products.media import KeyVoices
from dubkit.schema import DubbedSource, MediaTranslationRequest

LINES = (
    "The harbour wakes before the town does.",
    "Gulls argue over the night's last catch.",
    "A ferry sounds its horn across the water.",
    "By noon the stalls are full of oranges.",
)


def dub_peak(backend, tmp_path, lines: int, scratch: Path | None = None) -> tuple[float, int]:
    """Seconds of the clip, and the most the dub had allocated at once beyond its start."""
    script = [LINES[i % len(LINES)] for i in range(lines)]
    path = samples.narrated_clip(
        tmp_path / f"clip-{lines}.mp4", script, pause=0.6, bed_db=-34.0, width=160, height=90
    )
    request = MediaTranslationRequest.model_validate(
        {
            "taskType": "vt",
            "source": {"materialId": "mat_test"},
            "language": {"source": "en-US", "target": "fr-FR"},
            "options": {"voiceClone": {}},
        }
    )
    out = pipeline.Outputs(tmp_path / f"out-{lines}", lambda name: f"http://sandbox.test/{name}")
    job = pipeline.Job(
        f"task{lines}",
        path,
        pipeline.read_settings(request, "vt"),
        KeyVoices(backend, backend.default_key),
        out,
        DubbedSource(material_id="mat_test", url="http://sandbox.test/source.mp4"),
        scratch_dir=scratch,
    )
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        pipeline.run(job)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    return av.probe(path).duration, peak


def test_the_dubs_peak_allocation_does_not_grow_with_the_clips_length(backend, tmp_path):
    short_seconds, short_peak = dub_peak(backend, tmp_path, 8)
    long_seconds, long_peak = dub_peak(backend, tmp_path, 32)
    assert long_seconds > 3.5 * short_seconds > 3.5 * 20  # both longer than a mix window
    # What the longer clip's decoded original alone would add (mono float32 at the work rate).
    original = (long_seconds - short_seconds) * WORK_RATE * 4
    growth = long_peak - short_peak
    assert growth < 0.5 * original, (
        f"a {long_seconds:.0f} s dub peaked {growth / 1e6:.1f} MB above a "
        f"{short_seconds:.0f} s one (its decoded original is {original / 1e6:.1f} MB more)"
    )


def test_a_dub_leaves_nothing_in_its_scratch_folder_and_no_scratch_among_its_outputs(
    backend, tmp_path
):
    scratch = tmp_path / "scratch"
    dub_peak(backend, tmp_path, 2, scratch)
    assert list(scratch.iterdir()) == []
    assert not [p for p in (tmp_path / "out-2").rglob("*") if p.suffix == ".f32"]
