"""Many clips, one ffmpeg run (issue 15, item 1): what comes out is what one run per clip made.

The runs are counted by watching ``subprocess.Popen`` (it still runs): the claim is "one process
for a request's lines / a table's rows", and the bench (bench/bench_tts_formats.py) measures
what that is worth.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import numpy as np
import pytest

from dubkit.media import audio, av
from dubkit.views.players import speech_table_html

RATE = 22050


def _tone(seconds: float, hz: float) -> np.ndarray:
    t = np.arange(round(seconds * RATE)) / RATE
    return (0.4 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


@pytest.fixture
def ffmpeg_runs(monkeypatch) -> list[list[str]]:
    """Every ffmpeg process started (``subprocess.run`` starts them through ``Popen`` too)."""
    runs: list[list[str]] = []

    class Watched(subprocess.Popen):
        def __init__(self, cmd, *args, **kwargs):
            if "ffmpeg" in Path(str(cmd[0])).name and "-i" in cmd:  # not the binary's check
                runs.append(list(cmd))
            super().__init__(cmd, *args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", Watched)
    return runs


@pytest.mark.parametrize("fmt", ["m4a", "mp3"])
def test_clips_encoded_together_come_back_as_each_alone(tmp_path: Path, fmt, ffmpeg_runs):
    clips = [_tone(0.7, 220), _tone(1.3, 440), _tone(0.05, 880), _tone(2.0, 330)]
    together = [tmp_path / f"together{i}.{fmt}" for i in range(len(clips))]
    av.encode_clips(clips, RATE, fmt, together)
    assert len(ffmpeg_runs) == 1
    for i, clip in enumerate(clips):
        alone = tmp_path / f"alone{i}.{fmt}"
        av.encode_audio(clip, RATE, fmt, alone)
        (got, rate), (expected, _) = av.decode_audio(together[i]), av.decode_audio(alone)
        assert rate == RATE and len(got) == len(expected)
        assert np.abs(got - expected).max() < 0.05  # the same clip, not a neighbour's


def test_many_clips_decode_in_one_run_and_a_bad_one_fails_alone(tmp_path: Path, ffmpeg_runs):
    good = []
    for i, seconds in enumerate((0.5, 1.0, 1.5)):
        av.encode_audio(_tone(seconds, 300), RATE, "m4a", tmp_path / f"{i}.m4a")
        good.append(((tmp_path / f"{i}.m4a").read_bytes(), "m4a"))
    ffmpeg_runs.clear()
    decoded = audio.decode_many(good)
    assert len(ffmpeg_runs) == 1
    assert [round(len(s) / r, 2) for s, r in decoded] == [0.5, 1.0, 1.5]  # type: ignore[misc]

    mixed = audio.decode_many([good[0], (b"not audio at all", "m4a"), good[2]])
    assert isinstance(mixed[1], av.MediaError)
    assert [round(len(s) / r, 2) for s, r in (mixed[0], mixed[2])] == [0.5, 1.5]  # type: ignore[misc]


def test_a_request_of_new_m4a_lines_is_encoded_in_one_run(client, ffmpeg_runs):
    tag = uuid.uuid4().hex[:4]
    voice = client.voices.presets(limit=1)[0].voice_id
    lines = [f"Batch line {i}, {tag}." for i in range(6)]
    ffmpeg_runs.clear()
    speech = client.tts.create(lines, voice=voice, output_format="m4a")
    assert not speech.errors
    encodes = [run for run in ffmpeg_runs if "aac" in run]
    assert len(encodes) == 1
    assert all(line.duration and line.duration > 0.5 for line in speech.lines)
    decoded = audio.decode_many([(line.data, "m4a") for line in speech.lines])
    heard = [len(s) / r for s, r in decoded]  # type: ignore[misc]
    # each file is its own line, as long as the answer says (durations are given in ms)
    assert all(abs(h - line.duration) < 0.002 for h, line in zip(heard, speech.lines))


def test_a_speech_table_draws_its_m4a_waveforms_with_one_run(client, ffmpeg_runs):
    voice = client.voices.presets(limit=1)[0].voice_id
    speech = client.tts.create([f"Row {i}." for i in range(5)], voice=voice, output_format="m4a")
    for line in speech.lines:
        assert line.data
    ffmpeg_runs.clear()
    table = speech_table_html(speech.lines)
    assert len(ffmpeg_runs) == 1
    assert table.count("<svg class='dubkit-wave'") == 5
