"""dubkit.media on real files made here (ffmpeg does the work, nothing is mocked): probing,
decoding and encoding, many clips in one run, tracks read a stretch at a time, time stretch,
muxing, mixing, subtitles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile
from _frames import frame

from dubkit.media import audio, av, m4a, mixing, mp4
from dubkit.media.av import MediaError
from dubkit.media.subtitles import Cue, ass_style, parse_srt, parse_vtt, to_srt, to_vtt
from dubkit.media.track import Track
from dubkit.sandbox.engines import vad

TONE_RATE = 22050


def _tone(seconds: float, hz: float) -> np.ndarray:
    t = np.arange(round(seconds * TONE_RATE)) / TONE_RATE
    return (0.4 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


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


SR = 44100


CUES = [Cue(0.5, 1.8, "Hello there"), Cue(2.0, 3.5, "Second line\nand more")]


def tone(freq: float, seconds: float, sr: int = SR, level: float = 0.3) -> np.ndarray:
    t = np.arange(round(seconds * sr)) / sr
    return (level * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def dominant_hz(samples: np.ndarray, sr: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.argmax(spectrum) * sr / len(samples))


def rms_db(samples: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(np.square(samples, dtype=np.float64)) + 1e-20))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="module")
def clip(workdir: Path) -> Path:
    path = workdir / "card.mp4"
    mp4.make_test_pattern(
        path,
        4.0,
        width=320,
        height=240,
        fps=25,
        audio=tone(440, 4.0),
        sample_rate=SR,
        subtitles=CUES,
    )
    return path


@pytest.fixture(scope="module")
def dub_wav(workdir: Path) -> Path:
    path = workdir / "dub.wav"
    av.encode_audio(tone(660, 3.0), SR, "wav", path)  # shorter than the video on purpose
    return path


@pytest.mark.parametrize("fmt", ["m4a", "mp3"])
def test_clips_encoded_together_come_back_as_each_alone(tmp_path: Path, fmt, ffmpeg_runs):
    clips = [_tone(0.7, 220), _tone(1.3, 440), _tone(0.05, 880), _tone(2.0, 330)]
    together = [tmp_path / f"together{i}.{fmt}" for i in range(len(clips))]
    av.encode_clips(clips, TONE_RATE, fmt, together)
    assert len(ffmpeg_runs) == 1
    for i, clip in enumerate(clips):
        alone = tmp_path / f"alone{i}.{fmt}"
        av.encode_audio(clip, TONE_RATE, fmt, alone)
        (got, rate), (expected, _) = av.decode_audio(together[i]), av.decode_audio(alone)
        assert rate == TONE_RATE and len(got) == len(expected)
        assert np.abs(got - expected).max() < 0.05  # the same clip, not a neighbour's


def test_m4a_clips_cut_from_one_stream_hear_silence_outside_the_clip(tmp_path: Path):
    """Each file starts a frame early and ends up to a frame late (its edit list cuts that
    off); a player that ignores the edit list hears silence there, not the next line."""
    clips = [_tone(0.7, 220), _tone(0.4, 440), np.stack([_tone(0.3, 880)] * 2, axis=1)[:, 0]]
    paths = [tmp_path / f"{i}.m4a" for i in range(len(clips))]
    av.encode_clips(clips, TONE_RATE, "m4a", paths)
    placed, _ = m4a.layout(clips)
    for clip, path, place in zip(clips, paths, placed):
        run = av.run(
            ["-ignore_editlist", "1", "-i", str(path), "-f", "f32le", "-ac", "1", "pipe:1"]
        )
        raw = np.frombuffer(run.stdout, "<f4")
        lead = 1024 + place.start % 1024  # the priming, then where the cut fell in its frame
        assert np.abs(raw[lead : lead + len(clip)] - clip).max() < 0.05
        outside = np.concatenate([raw[: lead - 64], raw[lead + len(clip) + 64 :]])
        assert np.abs(outside).max() < 0.01, "a neighbour's sound outside the clip"


def test_m4a_layout_uses_the_clips_own_silence_and_inserts_only_what_is_missing():
    quiet = np.concatenate([np.zeros(3000), np.ones(5000), np.zeros(3000)]).astype(np.float32)
    placed, total = m4a.layout([quiet, quiet, quiet])
    assert [p.start for p in placed] == [0, 11000, 22000] and total == 33000
    loud = np.ones(5000, np.float32)
    placed, total = m4a.layout([loud, loud])
    assert placed[1].start == 5000 + 2048 and total == 12048
    stereo = np.ones((5000, 2), np.float32)
    stereo[-100:] = 0
    placed, _ = m4a.layout([stereo, stereo])
    assert placed[1].start == 5000 + 2048 - 100


def test_many_clips_decode_in_one_run_and_a_bad_one_fails_alone(tmp_path: Path, ffmpeg_runs):
    good = []
    for i, seconds in enumerate((0.5, 1.0, 1.5)):
        av.encode_audio(_tone(seconds, 300), TONE_RATE, "m4a", tmp_path / f"{i}.m4a")
        good.append(((tmp_path / f"{i}.m4a").read_bytes(), "m4a"))
    ffmpeg_runs.clear()
    decoded = audio.decode_many(good)
    assert len(ffmpeg_runs) == 1
    assert [round(len(s) / r, 2) for s, r in decoded] == [0.5, 1.0, 1.5]  # type: ignore[misc]

    mixed = audio.decode_many([good[0], (b"not audio at all", "m4a"), good[2]])
    assert isinstance(mixed[1], av.MediaError)
    assert [round(len(s) / r, 2) for s, r in (mixed[0], mixed[2])] == [0.5, 1.5]  # type: ignore[misc]


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


def test_probe_reports_what_the_card_contains(clip: Path) -> None:
    info = av.probe(clip)
    assert info.duration == pytest.approx(4.0, abs=0.05)
    assert (info.has_video, info.has_audio) == (True, True)
    assert (info.width, info.height, info.fps) == (320, 240, 25.0)
    assert (info.audio_rate, info.audio_channels) == (SR, 1)
    assert info.subtitle_streams == 1
    assert (info.category, info.mime_type) == ("video", "video/mp4")


def test_extract_subtitles_returns_the_embedded_cues(clip: Path) -> None:
    assert av.extract_subtitles(clip) == CUES


def test_extract_subtitles_is_empty_without_a_track(workdir: Path) -> None:
    path = workdir / "plain.mp3"
    av.encode_audio(tone(440, 1.0), SR, "mp3", path)
    assert av.extract_subtitles(path) == []


def test_extract_audio_gives_an_m4a_of_the_same_length(clip: Path, workdir: Path) -> None:
    out = workdir / "card.m4a"
    av.extract_audio(clip, out)
    info = av.probe(out)
    assert (info.category, info.mime_type, info.has_video) == ("audio", "audio/mp4", False)
    assert info.duration == pytest.approx(4.0, abs=0.05)
    samples, rate = av.decode_audio(out)
    assert dominant_hz(samples, rate) == pytest.approx(440, rel=0.01)


def test_thumbnail_is_a_jpeg_frame(clip: Path, workdir: Path) -> None:
    out = workdir / "thumb.jpg"
    av.thumbnail(clip, out)
    assert out.read_bytes()[:3] == b"\xff\xd8\xff"
    with pytest.raises(MediaError, match="not audio or video"):
        av.probe(out)  # a material must be audio or video, not a still image


def test_decode_audio_resamples_and_keeps_channels(clip: Path) -> None:
    mono, rate = av.decode_audio(clip, sample_rate=16000)
    assert rate == 16000 and mono.dtype == np.float32 and mono.ndim == 1
    assert len(mono) / rate == pytest.approx(4.0, abs=0.05)
    stereo_path = clip.with_name("stereo.flac")
    av.encode_audio(np.stack([tone(440, 1.0), tone(880, 1.0)], axis=1), SR, "flac", stereo_path)
    both, _ = av.decode_audio(stereo_path, mono=False)
    assert both.shape == (SR, 2)
    assert dominant_hz(both[:, 1], SR) == pytest.approx(880, rel=0.01)


@pytest.mark.parametrize(
    "fmt, mime",
    [
        ("wav", "audio/wav"),
        ("mp3", "audio/mpeg"),
        ("m4a", "audio/mp4"),
        ("flac", "audio/flac"),
        ("ogg", "audio/ogg"),
    ],
)
def test_encode_decode_round_trip(fmt: str, mime: str, workdir: Path) -> None:
    original = tone(440, 2.0, sr=24000)
    path = workdir / f"round.{fmt}"
    av.encode_audio(original, 24000, fmt, path)
    info = av.probe(path)
    assert (info.category, info.mime_type, info.audio_rate) == ("audio", mime, 24000)
    decoded, rate = av.decode_audio(path)
    assert rate == 24000
    assert len(decoded) / rate == pytest.approx(2.0, rel=0.02)
    assert dominant_hz(decoded, rate) == pytest.approx(440, rel=0.01)
    assert rms_db(decoded) == pytest.approx(rms_db(original), abs=0.5)
    if fmt in ("wav", "flac"):  # lossless: the samples themselves come back (16-bit steps)
        np.testing.assert_allclose(decoded, original, atol=1e-4)


def test_encode_audio_rejects_unknown_formats(workdir: Path) -> None:
    with pytest.raises(ValueError, match="wav, mp3, m4a, flac, ogg"):
        av.encode_audio(tone(440, 0.1), SR, "aiff", workdir / "x.aiff")


def test_text_file_is_not_media(workdir: Path) -> None:
    path = workdir / "notes.mp4"
    path.write_text("this is not a video\n" * 50)
    with pytest.raises(MediaError, match="not readable as audio or video") as caught:
        av.probe(path)
    assert "ffmpeg said" in str(caught.value) and "Invalid data" in str(caught.value)


def test_truncated_upload_is_detected(clip: Path, workdir: Path) -> None:
    data = clip.read_bytes()
    head_only = workdir / "head.mp4"
    head_only.write_bytes(data[:3000])
    with pytest.raises(MediaError):
        av.probe(head_only)
    cut = workdir / "cut.mp4"
    cut.write_bytes(data[: len(data) // 3])  # header intact, most of the data missing
    with pytest.raises(MediaError, match="cut short"):
        av.probe(cut)


def test_random_bytes_are_not_media(workdir: Path) -> None:
    path = workdir / "noise.mp3"
    path.write_bytes(np.random.default_rng(1).integers(0, 256, 40000, dtype=np.uint8).tobytes())
    with pytest.raises(MediaError):
        av.probe(path)


def test_missing_file(workdir: Path) -> None:
    with pytest.raises(FileNotFoundError):
        av.probe(workdir / "nowhere.mp4")


def test_video_steps_refuse_audio_only_input(workdir: Path) -> None:
    path = workdir / "voice.wav"
    av.encode_audio(tone(300, 1.0), SR, "wav", path)
    with pytest.raises(MediaError, match="no video track"):
        av.thumbnail(path, workdir / "t.jpg")


@pytest.mark.parametrize("factor", [0.5, 0.8, 1.25, 2.0])
def test_time_stretch_changes_length_not_pitch(factor: float) -> None:
    original = tone(300, 2.0, sr=24000)
    stretched = av.time_stretch(original, 24000, factor)
    assert len(stretched) / 24000 == pytest.approx(2.0 * factor, rel=0.02)
    middle = stretched[len(stretched) // 4 : 3 * len(stretched) // 4]
    assert dominant_hz(middle, 24000) == pytest.approx(300, rel=0.03)


def test_time_stretch_keeps_events_in_place() -> None:
    sr = 16000
    x = np.zeros(3 * sr, np.float32)
    x[sr : sr + sr // 5] = tone(300, 0.2, sr=sr, level=0.5)  # a beep at 1.0 s
    y = av.time_stretch(x, sr, 1.5)
    loud = np.flatnonzero(np.abs(y) > 0.05)
    assert loud[0] / sr == pytest.approx(1.5, abs=0.06)


def test_time_stretch_range() -> None:
    with pytest.raises(ValueError, match="0.25..4"):
        av.time_stretch(tone(300, 0.5), SR, 5)


def test_stretch_video_changes_the_picture_length(clip: Path, workdir: Path) -> None:
    out = workdir / "slow.mp4"
    mp4.stretch_video(clip, out, 1.5)
    info = av.probe(out)
    assert info.duration == pytest.approx(6.0, abs=0.1)
    assert (info.has_video, info.has_audio, info.fps) == (True, False, 25.0)


def test_mux_with_burned_subtitles(clip: Path, dub_wav: Path, workdir: Path) -> None:
    srt = workdir / "dub.srt"
    srt.write_text(to_srt([Cue(0.5, 1.8, "Bonjour"), Cue(2.0, 3.5, "Au revoir")]), encoding="utf-8")
    out = workdir / "burned.mp4"
    mp4.mux(
        clip, dub_wav, out, subtitles_path=srt, burn=True, style={"size": 28, "color": "#FFFF00"}
    )
    info = av.probe(out)
    assert (info.has_video, info.has_audio, info.mime_type) == (True, True, "video/mp4")
    assert info.duration == pytest.approx(4.0, abs=0.1)  # as long as the picture, not the dub
    assert [c.text for c in av.extract_subtitles(out)] == ["Bonjour", "Au revoir"]
    heard, rate = av.decode_audio(out)
    assert dominant_hz(heard[: 2 * rate], rate) == pytest.approx(
        660, rel=0.01
    )  # the dub, not the tone
    # The lower part of the picture changes while a cue is on screen, and only then.
    assert mp4.default_fontsdir() is not None  # the font comes from a dependency, not the system
    bottom = slice(int(info.height * 0.7), info.height)

    def changed(at: float) -> float:  # share of pixels in the bottom band that clearly differ
        return float(
            (np.abs(frame(out, at)[bottom] - frame(clip, at)[bottom]).max(axis=2) > 60).mean()
        )

    during, between = changed(1.0), changed(1.9)
    print(f"\nburned pixels: during a cue {during:.3f}, between cues {between:.3f}")
    assert during > 0.01 and during > 10 * between


def test_mux_soft_subtitles_copies_the_video(clip: Path, dub_wav: Path, workdir: Path) -> None:
    vtt = workdir / "dub.vtt"
    vtt.write_text(to_vtt([Cue(1.0, 2.0, "Hola")]), encoding="utf-8")
    out = workdir / "soft.mp4"
    mp4.mux(clip, dub_wav, out, subtitles_path=vtt)
    assert av.extract_subtitles(out) == [Cue(1.0, 2.0, "Hola")]
    assert np.abs(frame(out, 1.5) - frame(clip, 1.5)).max() == 0  # copied, not re-encoded


def test_compress_writes_every_height_in_one_run_and_never_upscales(
    clip: Path, workdir: Path
) -> None:
    variants = {120: workdir / "120p.mp4", 180: workdir / "180p.mp4", 480: workdir / "480p.mp4"}
    mp4.compress(clip, variants)
    sizes = {h: (av.probe(p).width, av.probe(p).height) for h, p in variants.items()}
    assert sizes == {120: (160, 120), 180: (240, 180), 480: (320, 240)}
    for path in variants.values():
        info = av.probe(path)
        assert info.has_audio and info.subtitle_streams == 1
        assert info.duration == pytest.approx(4.0, abs=0.1)
        assert av.extract_subtitles(path) == av.extract_subtitles(clip)
    # Each output is the source picture scaled, not a mix-up of the split branches.
    assert np.abs(frame(variants[480], 1.5) - frame(clip, 1.5)).mean() < 8


def test_compress_preset_trades_size_for_speed_and_bad_arguments_are_named(
    clip: Path, workdir: Path
) -> None:
    small, quick = workdir / "veryfast.mp4", workdir / "ultrafast.mp4"
    mp4.compress(clip, {240: small})
    mp4.compress(clip, {240: quick}, preset="ultrafast")
    assert quick.stat().st_size > small.stat().st_size
    with pytest.raises(ValueError, match="preset must be one of"):
        mp4.compress(clip, {240: quick}, preset="warp")
    with pytest.raises(ValueError, match="outputs"):
        mp4.compress(clip, {})


def test_duck_lowers_speech_spans_by_the_gain() -> None:
    sr = 16000
    original = tone(200, 6.0, sr=sr)
    ducked = mixing.duck(original, sr, [(1.0, 2.0), (4.0, 5.0)], gain_db=-18)
    for a, b in [(1.0, 2.0), (4.0, 5.0)]:
        span = slice(int(a * sr), int(b * sr))
        assert rms_db(ducked[span]) - rms_db(original[span]) == pytest.approx(-18, abs=0.5)
    untouched = slice(int(2.2 * sr), int(3.8 * sr))
    np.testing.assert_array_equal(ducked[untouched], original[untouched])
    removed = mixing.duck(original, sr, [(1.0, 2.0)], remove=True)
    assert np.abs(removed[int(1.0 * sr) : int(2.0 * sr)]).max() == 0
    # Fades, not steps: no jump larger than the tone's own slope around the span edges.
    assert np.abs(np.diff(ducked)).max() <= np.abs(np.diff(original)).max() * 1.05


def test_place_and_mix() -> None:
    sr = 1000
    track = mixing.place(
        [
            (0.5, np.full(200, 0.25, np.float32)),
            (0.6, np.full(100, 0.25, np.float32)),
            (1.9, np.full(300, 0.25, np.float32)),
        ],
        sr,
        total=2.0,
    )
    assert len(track) == 2000
    assert track[450] == 0 and track[550] == 0.25 and track[650] == 0.5 and track[1950] == 0.25
    quiet = mixing.mix(track, np.full(1500, 0.1, np.float32))
    assert len(quiet) == 2000 and quiet[650] == pytest.approx(0.6)  # under the ceiling: a plain sum
    loud = mixing.mix(tone(100, 1.0, sr=8000, level=0.9), tone(100, 1.0, sr=8000, level=0.9))
    assert np.abs(loud).max() <= mixing.CEILING
    assert np.abs(loud).max() > 0.8  # limited, not normalised into quietness


def test_trim_silence() -> None:
    sr = 16000
    x = np.concatenate([np.zeros(sr, np.float32), tone(300, 0.5, sr=sr), np.zeros(sr, np.float32)])
    trimmed = mixing.trim_silence(x, sr)
    assert len(trimmed) / sr == pytest.approx(0.5, abs=0.05)
    assert mixing.trim_silence(np.zeros(sr, np.float32), sr).size == 0


def test_srt_and_vtt_text() -> None:
    cues = [Cue(1.5, 3.25, "Hello\nworld"), Cue(3661.001, 3662.0, "A < B & C")]
    assert to_srt(cues) == (
        "1\n00:00:01,500 --> 00:00:03,250\nHello\nworld\n\n"
        "2\n01:01:01,001 --> 01:01:02,000\nA < B & C\n"
    )
    assert to_vtt(cues) == (
        "WEBVTT\n\n00:00:01.500 --> 00:00:03.250\nHello\nworld\n\n"
        "01:01:01.001 --> 01:01:02.000\nA &lt; B &amp; C\n"
    )
    assert parse_srt(to_srt(cues)) == cues
    assert parse_vtt(to_vtt(cues)) == cues


def test_parsers_accept_real_world_variations() -> None:
    srt = (
        "\ufeff1\r\n00:00:01.5 --> 00:00:02,000 X1:10 X2:20\r\nOne\r\n\r\n\r\n"
        "00:00:03,000 --> 00:00:04,000\r\nTwo\r\n"
    )
    assert parse_srt(srt) == [Cue(1.5, 2.0, "One"), Cue(3.0, 4.0, "Two")]
    vtt = (
        "WEBVTT - made by hand\nKind: captions\n\nNOTE a comment\nspanning lines\n\n"
        "intro\n00:01.000 --> 00:02.500 align:start line:0\nFirst\n\nSTYLE\n::cue { color: red }\n\n"
        "01:00:00.000 --> 01:00:01.000\nLast &gt; first\n"
    )
    assert parse_vtt(vtt) == [Cue(1.0, 2.5, "First"), Cue(3600.0, 3601.0, "Last > first")]


def test_parsers_name_the_bad_line() -> None:
    with pytest.raises(ValueError, match="line 6: expected a timing line"):
        parse_srt("1\n00:00:01,000 --> 00:00:02,000\nok\n\n2\n00:00:03 -> 00:00:04\ntext\n")
    with pytest.raises(ValueError, match="WEBVTT"):
        parse_vtt("00:00:01.000 --> 00:00:02.000\nno header\n")


def test_ass_style_shorthands() -> None:
    style = {"font": "Noto Sans", "size": 24, "color": "#FFFF0080", "position": "top", "Bold": True}
    assert (
        ass_style(style)
        == "FontName=Noto Sans,FontSize=24,PrimaryColour=&H7F00FFFF,Alignment=8,Bold=-1"
    )
    with pytest.raises(ValueError):
        ass_style({"font": "A,B"})


def test_windowed_duck_place_and_mix_join_into_the_whole_track() -> None:
    """The dub is mixed a window at a time (flat memory); the windows must join into exactly
    what ducking, placing and mixing the whole track makes, limiter and fades included."""
    rng = np.random.default_rng(7)
    sr, length = 44100, 44100 * 13 + 123
    original = (rng.standard_normal((length, 2)) * 0.3).astype(np.float32)
    spans = [(0.0, 0.4), (1.01, 2.5), (2.49, 3.0), (6.0, 6.0001), (9.99, 13.5)]
    clips = [(0.2, rng.uniform(-1, 1, 30000).astype(np.float32)), (9.0, np.ones(99999, np.float32))]
    clips_stereo = [(at, np.repeat(c[:, None], 2, axis=1)) for at, c in clips]
    whole = mixing.mix(
        mixing.duck(original, sr, spans, gain_db=-18), mixing.place(clips_stereo, sr, length / sr)
    )
    assert np.abs(whole).max() <= mixing.CEILING and np.abs(whole).max() > 0.8  # it limited

    def window(a: int, b: int) -> list[np.ndarray]:
        gain = mixing.envelope(length, sr, spans, -18, start=a, stop=b)
        track = mixing.place(clips_stereo, sr, length / sr, start=a, stop=b)
        return [original[a:b] * gain[:, None], track]

    joined = np.concatenate(list(mixing.mixed_windows(length, window, blocks=7)))
    assert joined.shape == whole.shape and np.array_equal(joined, whole)


def test_a_narrated_clip_is_the_same_file_for_the_same_script(tmp_path):
    """What lets a replayed lesson's upload match its recording: espeak-ng alone gives
    slightly different samples for the same line spoken twice in one process."""
    from dubkit import samples
    from dubkit.media import speech

    script = [("The harbour wakes before the sun.", "f2"), ("By seven the market is open.", "m3")]
    first = samples.narrated_clip(tmp_path / "a.mp4", script).read_bytes()
    speech.synthesize("Something else in between.", "en-us")
    again = samples.narrated_clip(tmp_path / "b.mp4", script).read_bytes()
    assert first == again
