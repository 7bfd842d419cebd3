"""The sandbox's dubbing pipeline on files, without HTTP: what each stage hears, decides and
writes, and a dub that holds a window of its audio at a time, never the whole clip."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from _frames import frame
from _pipeline_fixtures import backend  # noqa: F401  (fixture)

from dubkit import samples
from dubkit.media import av, mixing, mp4, speech, subtitles
from dubkit.media.track import Track
from dubkit.sandbox import pipeline
from dubkit.sandbox.pipeline import WORK_RATE, dubbing, render, transcript
from dubkit.sandbox.products.media import KeyVoices
from dubkit.sandbox.service_error import ServiceError
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


RATE = speech.SAMPLE_RATE


SENTENCES = ("Welcome to the sandbox.", "Today we dub a short clip.", "Every step is real.")


SCRIPT = list(zip(SENTENCES, ("f2", "m3", "f2")))  # two speakers, the first back at the end


NARRATION = {"pause": 0.7, "bed_db": -34.0}


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> tuple[Path, list[subtitles.Cue]]:
    path = samples.narrated_clip(
        tmp_path_factory.mktemp("clips") / "narrated.mp4", SCRIPT, **NARRATION
    )
    return path, av.extract_subtitles(path)


def settings_for(options=None, target="fr-FR", task_type="vt"):
    request = MediaTranslationRequest.model_validate(
        {
            "taskType": task_type,
            "source": {"materialId": "mat_test"},
            "language": {"source": "en-US", "target": target},
            "options": {"voiceClone": {}, **(options or {})},
        }
    )
    return pipeline.read_settings(request, task_type)


def run(backend, path, tmp_path, options=None, **kw):
    outputs = pipeline.Outputs(tmp_path / "out", lambda name: f"http://sandbox.test/{name}")
    job = pipeline.Job(
        "task1",
        path,
        settings_for(options, **kw),
        KeyVoices(backend, backend.default_key),
        outputs,
        DubbedSource(material_id="mat_test", url="http://sandbox.test/source.mp4"),
    )
    return pipeline.run(job), outputs


def decoded(path: Path, rate: int = 16000) -> np.ndarray:
    return av.decode_audio(path, sample_rate=rate)[0]


def track(path: Path, rate: int = 16000) -> Track:
    return Track.of(decoded(path, rate), rate)


def _line(start, end):
    return transcript.Line(0, start, end, "x", False)


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


def test_lines_are_timed_by_the_signal_and_worded_by_the_subtitle_track(clip):
    path, cues = clip
    lines = transcript.find_lines(track(path), av.extract_subtitles(path), min_silence=0.35)
    assert [line.text for line in lines] == list(SENTENCES)
    for line, cue in zip(lines, cues):
        # VAD pads 50 ms and AAC shifts a little; the speech itself starts at the cue.
        assert abs(line.start - cue.start) < 0.15 and abs(line.end - cue.end) < 0.15
        assert not line.placeholder


def test_without_subtitles_each_line_carries_a_labelled_placeholder(tmp_path):
    path = samples.narrated_clip(tmp_path / "bare.mp4", SENTENCES, pause=0.7, subtitles=False)
    lines = transcript.find_lines(track(path), av.extract_subtitles(path), min_silence=0.35)
    assert len(lines) == len(SENTENCES)
    assert [line.text for line in lines] == [
        transcript.PLACEHOLDER.format(n=i + 1) for i in range(len(SENTENCES))
    ]
    assert all(line.placeholder for line in lines)


@pytest.mark.parametrize("wanted, expected", [(None, 2), (1, 1), (3, 3)])
def test_speakers_are_told_apart_by_pitch_or_forced_to_a_count(clip, wanted, expected):
    path, _ = clip
    mono = track(path)
    lines = transcript.find_lines(mono, av.extract_subtitles(path), min_silence=0.35)
    count = transcript.assign_speakers(lines, mono, wanted)
    assert count == expected
    if wanted is None:  # f2, m3, f2: the two female lines belong together
        assert [line.speaker for line in lines] == [0, 1, 0]


def test_a_long_dub_is_sped_up_a_short_one_slowed_and_an_impossible_one_cut():
    second = np.full(RATE, 0.1, np.float32)
    lines = [_line(0.0, 1.0), _line(3.0, 4.0), _line(4.05, 5.0)]
    clips = [
        np.tile(second, 2)[: round(1.2 * RATE)],  # 1.2 s into a 1 s slot, room to spare
        second[: RATE // 2],  # 0.5 s into a 1 s slot
        np.tile(second, 3),
    ]  # 3 s where only 0.9 s is free
    dubbing.fit(lines, [Track.of(c, RATE) for c in clips], total=5.0, scale=1.0, natural_pace=False)
    lengths = [line.clip.frames / RATE for line in lines]
    assert lengths[0] == pytest.approx(1.0, abs=0.01)  # 1.2 * (1/1.2)
    assert lengths[1] == pytest.approx(0.5 * dubbing.SLOWEST, abs=0.01)
    assert lines[2].truncated and lengths[2] == pytest.approx(0.95, abs=0.01)
    assert not lines[0].truncated and not lines[1].truncated


def test_dynamic_length_stretches_the_timeline_instead_of_the_speech():
    lines = [_line(0.0, 1.0), _line(1.2, 2.0)]
    clips = [np.full(round(1.5 * RATE), 0.1, np.float32), np.full(RATE // 2, 0.1, np.float32)]
    clips = [Track.of(c, RATE) for c in clips]
    scale = dubbing.timeline_stretch(lines, clips, total=2.0)
    assert scale == pytest.approx(1.5 / (1.2 - dubbing.GAP), abs=0.01)
    dubbing.fit(lines, clips, total=2.0, scale=scale, natural_pace=True)
    assert lines[0].clip.frames == clips[0].frames  # natural pace, not squeezed
    assert lines[1].at == pytest.approx(1.2 * scale, abs=0.001)


def test_resampling_keeps_the_pitch():
    tone = np.sin(2 * np.pi * 440 * np.arange(RATE) / RATE).astype(np.float32)
    up = mixing.resample(tone, RATE, 44100)
    assert len(up) == 44100
    peak = np.argmax(np.abs(np.fft.rfft(up))) * 44100 / len(up)
    assert peak == pytest.approx(440, abs=2)


@pytest.mark.parametrize("mode", ["duck", "remove", "keep"])
def test_separation_keeps_the_background_and_treats_speech_as_asked(mode):
    rate = 1000
    original = np.full(3 * rate, 0.5, np.float32)
    lines = [_line(1.0, 2.0)]
    stems = render.separate(
        Track.of(original, rate), lines, settings_for({"separation": {"mode": mode}})
    )
    inside, outside = slice(1200, 1800), slice(0, 900)
    assert np.all(stems.whole("speech")[outside] == 0) and np.allclose(
        stems.whole("speech")[inside], 0.5
    )
    assert np.all(stems.whole("background")[inside] == 0) and np.allclose(
        stems.whole("background")[outside], 0.5
    )
    expected = {"duck": 0.5 * 10 ** (render.DUCK_DB / 20), "remove": 0.0, "keep": 0.5}[mode]
    assert np.allclose(stems.whole("bed")[inside], expected, atol=1e-4)
    assert np.allclose(stems.whole("bed")[outside], 0.5)


def test_the_dub_mixed_a_window_at_a_time_equals_the_whole_mix_with_lines_across_windows():
    # 50 s at 44.1 kHz: three mix windows; lines across both window edges, one straddling the
    # 20 s edge and overlapping the next line, each resampled from speech's rate.
    rate, seconds = 44100, 50.0
    noise = np.random.default_rng(3).standard_normal(int(rate * seconds)).astype(np.float32)
    stems = render.separate(Track.of(0.2 * noise, rate), [], settings_for({}))
    lines = []
    for at, length in ((1.0, 2.0), (18.5, 3.0), (20.8, 1.5), (39.0, 2.5), (48.9, 3.0)):
        line = _line(at, at + length)
        tone = np.sin(np.arange(int(length * speech.SAMPLE_RATE)) * 0.05).astype(np.float32)
        line.clip, line.at = Track.of(0.6 * tone, speech.SAMPLE_RATE), at
        lines.append(line)
    windowed = np.concatenate(list(render.dub_mix(stems, lines, rate)))
    laid = mixing.lay_lines(
        [(line.at, line.clip.read(), line.clip.rate) for line in lines], rate, seconds, 1
    )
    assert np.array_equal(windowed, mixing.mix(stems.whole("bed"), laid))


def test_a_run_writes_every_deliverable(backend, clip, tmp_path):
    path, cues = clip
    result, out = run(backend, path, tmp_path, {"text": {"soft": True}})
    video = av.probe(out.path("dubbed.mp4"))
    source = av.probe(path)
    assert video.has_video and video.has_audio and video.subtitle_streams == 1
    assert video.duration == pytest.approx(source.duration, abs=0.1)
    srt = subtitles.parse_srt(out.path("subtitles.fr-FR.srt").read_text())
    assert [c.text for c in srt] == [ln["text"] for ln in result["translatedScripts"]["result"]]
    assert subtitles.parse_vtt(out.path("subtitles.fr-FR.vtt").read_text()) == srt
    assert set(result["compress"]) == {"360p"}  # a 360p source is not upscaled
    assert av.probe(out.path("dubbed-360p.mp4")).height == 360
    for name in (
        "original-mono.wav",
        "stems/speech.m4a",
        "stems/background.m4a",
        "thumbnail.jpg",
        "lines/line-001.wav",
    ):
        assert out.path(name).stat().st_size > 0
    assert set(result["timings"]) >= {
        "probe",
        "transcribe",
        "speakers",
        "translate",
        "voices",
        "synthesize",
        "fit",
        "mix",
        "mux",
        "compress",
        "total",
    }
    # The dub speaks where the source spoke: most of its loudness sits inside the lines.
    dub = decoded(out.path("dubbed.m4a"))
    inside = np.zeros(len(dub), bool)
    for line in result["translatedScripts"]["result"]:
        inside[round(line["start"] * 16000) : round(line["end"] * 16000)] = True
    assert np.mean(dub[inside] ** 2) > 20 * np.mean(dub[~inside] ** 2)


@pytest.mark.parametrize(
    "text", [{"soft": True}, {"soft": False}, {"burn": True, "soft": True}], ids=str
)
def test_variants_carry_the_dubs_picture_sound_and_subtitles(backend, clip, tmp_path, text):
    """Variants made early from the source, or in the burning mux, are the dub made smaller."""
    path, _ = clip
    result, out = run(backend, path, tmp_path, {"text": text})
    dubbed, variant = out.path("dubbed.mp4"), out.path("dubbed-360p.mp4")
    info = av.probe(variant)
    assert info.has_video and info.height == 360
    assert info.duration == pytest.approx(av.probe(dubbed).duration, abs=0.1)
    assert result["compress"]["360p"]["size"] == variant.stat().st_size
    assert av.extract_subtitles(variant) == av.extract_subtitles(dubbed)
    assert info.subtitle_streams == int(text["soft"])
    heard, expected = decoded(variant), decoded(out.path("dubbed.m4a"))
    n = min(len(heard), len(expected))
    assert np.corrcoef(heard[:n], expected[:n])[0, 1] > 0.99  # the dub's sound, not the source's
    for at in (0.5, 1.5, 2.5):  # the dub's picture (burned cues included), re-encoded
        assert np.abs(frame(variant, at) - frame(dubbed, at)).mean() < 6


def test_a_file_that_is_not_media_fails_naming_the_stage(backend, tmp_path):
    path = tmp_path / "broken.mp4"
    path.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 64)
    with pytest.raises(ServiceError) as failure:
        run(backend, path, tmp_path)
    assert failure.value.code == 422 and failure.value.message.startswith("probe failed")


def test_a_video_without_sound_has_nothing_to_dub(backend, clip, tmp_path):
    silent_picture = tmp_path / "mute.mp4"
    mp4.stretch_video(clip[0], silent_picture, 1.0)  # picture only
    with pytest.raises(ServiceError, match="no audio track") as failure:
        run(backend, silent_picture, tmp_path)
    assert failure.value.code == 422


def test_silence_has_no_speech_to_dub(backend, tmp_path):
    path = tmp_path / "quiet.mp4"
    mp4.make_test_pattern(
        path, 3, width=320, height=180, audio=np.zeros(3 * RATE), sample_rate=RATE
    )
    with pytest.raises(ServiceError, match="no speech found") as failure:
        run(backend, path, tmp_path)
    assert failure.value.code == 422
