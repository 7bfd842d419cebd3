"""Track: decoded audio kept in a file and read a stretch at a time gives exactly the samples
the whole decode gives, so the dub's analyses and stems are the same, made without holding it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile

from dubkit.media import av
from dubkit.media.track import Track
from dubkit.sandbox.engines import vad

RATE = 44100


@pytest.fixture(scope="module")
def stereo(tmp_path_factory) -> Path:
    """Twelve seconds of bursts on the left and a tone on the right, as an m4a (long enough
    for the speech finder to read it in several blocks)."""
    t = np.arange(12 * RATE) / RATE
    left = 0.4 * np.sin(2 * np.pi * 180 * t) * ((t % 1.2) < 0.5)
    right = 0.05 * np.sin(2 * np.pi * 950 * t)
    path = tmp_path_factory.mktemp("track") / "stereo.m4a"
    av.encode_audio(np.stack([left, right], axis=1).astype(np.float32), RATE, "m4a", path)
    return path


def test_a_decoded_track_reads_what_the_whole_decode_holds(stereo, tmp_path):
    whole, rate = av.decode_audio(stereo, sample_rate=RATE, mono=False)
    track = Track.decode(stereo, tmp_path / "stereo.f32", RATE)
    assert (track.rate, track.channels, track.frames) == (rate, 2, len(whole))
    assert np.array_equal(track.read(), whole)
    assert np.array_equal(np.concatenate(list(track.windows(10_000))), whole)
    assert np.array_equal(track.read(5_000, 17_000, mono=True), whole[5_000:17_000].mean(axis=1))
    assert np.array_equal(track.seconds(0.5, 1.25), whole.mean(axis=1)[22050:55125])
    # each end is clipped to the track first (a negative start is 0, not counted from the end)
    assert track.read(-10, 5).shape == (5, 2) and track.read(len(whole) - 3, 10**9).shape == (3, 2)


def test_a_source_of_more_than_two_channels_reads_as_their_mean(tmp_path):
    six = np.random.default_rng(1).uniform(-0.5, 0.5, (RATE, 6)).astype(np.float32)
    source = tmp_path / "six.wav"
    soundfile.write(source, six, RATE, subtype="FLOAT")
    track = Track.decode(source, tmp_path / "six.f32", RATE)
    assert track.channels == 1 and track.frames == RATE
    assert np.array_equal(track.read(), six.mean(axis=1))
    # folded before anything else: a stretch works on the mean, as a stretch of it in memory
    stretched = track.stretched(1.3, tmp_path / "six-stretched.f32")
    assert np.array_equal(stretched.read(), av.time_stretch(six.mean(axis=1), RATE, 1.3))
    assert np.array_equal(Track.of(six, RATE).read(), six.mean(axis=1))


def test_written_tracks_and_stretched_files_match_their_in_memory_forms(stereo, tmp_path):
    whole, _ = av.decode_audio(stereo, sample_rate=RATE, mono=False)
    kept = Track.write(whole, RATE, tmp_path / "kept.f32")
    assert np.array_equal(kept.read(), whole)
    for factor in (1.0, 1.37, 0.8):
        on_disk = kept.stretched(factor, tmp_path / f"stretched-{factor}.f32")
        in_memory = Track.of(whole, RATE).stretched(factor, tmp_path / "unused.f32")
        assert np.array_equal(on_disk.read(), in_memory.read())
        assert on_disk.frames == round(len(whole) * factor)


def test_speech_found_in_a_track_is_what_is_found_in_its_samples(stereo, tmp_path):
    mono, _ = av.decode_audio(stereo, sample_rate=RATE, mono=False)
    mono = mono.mean(axis=1)
    track = Track.decode(stereo, tmp_path / "vad.f32", RATE)
    level, hop = vad.activity(mono, RATE)
    track_level, track_hop = vad.activity(track, RATE)
    assert hop == track_hop and np.array_equal(level, track_level)
    found = vad.segment_speech(track, RATE, pad=0)
    assert found == vad.segment_speech(mono, RATE, pad=0)
    assert [(round(s.start, 1), round(s.end, 1)) for s in found][:2] == [(0.0, 0.5), (1.2, 1.7)]
