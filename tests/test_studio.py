"""The audition studio: takes at one loudness, the shortlist handed to a dub and a TTS batch, one
voice across readings, blind A/B, and app text that fits where it is shown."""

from __future__ import annotations

import base64
import re
import subprocess
from pathlib import Path

import imageio_ffmpeg
import numpy as np
import pandas as pd
import pytest
import soundfile as sf
from _actions import use
from _waiting import PATIENCE

from dubkit import samples
from dubkit.cast import Cast
from dubkit.media import loudness
from dubkit.studio import APP_INTRO, AuditionStudio, Shortlist, running_in_voila
from dubkit.views.buttons import download_button_html

LINE = "Welcome aboard! Tonight we sail past the lighthouse."


def ffmpeg_loudness(path: Path) -> float:
    """Integrated loudness as ffmpeg reads a file by itself: its own decoder, resampled to
    48 kHz (BS.1770's reference rate), its ``ebur128`` filter's summary."""
    done = subprocess.run(
        [
            imageio_ffmpeg.get_ffmpeg_exe(),
            "-hide_banner",
            "-nostats",
            "-i",
            str(path),
            "-af",
            "aresample=48000,ebur128",
            "-f",
            "null",
            "-",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    summary = done.stderr[done.stderr.rindex("Summary:") :]
    return float(re.search(r"I:\s+(-?[\d.]+) LUFS", summary).group(1))


def wav_file(tmp_path: Path, name: str, samples_: np.ndarray, rate: int) -> Path:
    path = tmp_path / f"{name}.wav"
    sf.write(path, samples_, rate, subtype="FLOAT")
    return path


def tone(seconds: float, rate: int, peak_dbfs: float) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (10 ** (peak_dbfs / 20) * np.sin(2 * np.pi * 997 * t)).astype(np.float32)


@pytest.fixture(scope="module")
def dialogue(sandbox, tmp_path_factory):
    """A two-speaker clip for dubs (f2 then m3), uploaded under a key of its own."""
    import dubkit

    key = sandbox.create_key("studio")
    client = dubkit.Client(key, sandbox.url, sandbox=sandbox)
    clip = samples.narrated_clip(
        tmp_path_factory.mktemp("studio") / "talk.mp4",
        [("Good evening, and welcome.", "f2"), ("Thank you, it is good to be here.", "m3")],
        pause=0.6,
    )
    material = client.materials.upload(clip, progress=False)
    yield client, material
    client.close()


def test_loudness_of_reference_tones_is_what_bs1770_gives_and_what_ffmpeg_reads(tmp_path):
    # EBU Tech 3341: a 997 Hz sine at -23 dBFS peak in both channels is -23 LUFS; one channel
    # carries half the power: -26 LUFS.
    mono = tone(5, 48000, -23)
    stereo = np.stack([mono, mono], axis=1)
    assert loudness.measure(stereo, 48000) == pytest.approx(-23.0, abs=0.1)
    assert loudness.measure(mono, 48000) == pytest.approx(-26.0, abs=0.1)
    quieter = tone(5, 22050, -33)
    assert loudness.measure(quieter, 22050) == pytest.approx(
        ffmpeg_loudness(wav_file(tmp_path, "quieter", quieter, 22050)), abs=0.15
    )
    assert loudness.measure(np.zeros(22050, np.float32), 22050) == loudness.SILENCE
    assert loudness.measure(tone(0.2, 22050, -10), 22050) == loudness.SILENCE  # < 400 ms


def test_match_brings_speech_to_minus_23_and_never_past_the_peak_ceiling(client, tmp_path):
    line = client.tts.speak(LINE, client.voices.presets(locale="en-US", limit=1).ids[0])
    level = ffmpeg_loudness(line.save(tmp_path))
    matched = loudness.match(line.audio, line.sample_rate)
    assert matched.original == pytest.approx(level, abs=0.15)
    assert matched.label() == f"{matched.original:.1f} LUFS → -23"
    played = tmp_path / "played.wav"
    played.write_bytes(base64.b64decode(matched.data_uri().split(",", 1)[1]))
    assert ffmpeg_loudness(played) == pytest.approx(-23.0, abs=0.2)
    assert loudness.peak_dbfs(sf.read(played)[0]) <= loudness.PEAK_CEILING + 0.01

    # Quiet speech with one full-scale click: the gain stops at the ceiling, and says so.
    clicky = (line.audio * np.float32(0.05)).copy()
    clicky[1000] = 1.0
    held = loudness.match(clicky, line.sample_rate)
    assert held.limited and held.loudness < -23 and "(peak-limited)" in held.label()
    assert loudness.peak_dbfs(held.samples) == pytest.approx(loudness.PEAK_CEILING, abs=0.01)
    assert ffmpeg_loudness(wav_file(tmp_path, "held", held.samples, held.rate)) == pytest.approx(
        held.loudness, abs=0.2
    )
    silent = loudness.match(np.zeros(1000, np.float32), 22050)
    assert silent.gain_db == 0 and silent.silent and "played as is" in silent.label()


def test_takes_are_labelled_and_show_the_level_ffmpeg_reads_in_the_service_file(
    client, sandbox, tmp_path
):
    studio = AuditionStudio(client, locale="en-GB", gender="female", voices=3, in_app=True)
    studio.hear(LINE)
    voices = client.voices.presets(locale="en-GB", gender="female", limit=3)
    assert [t.voice.voice_id for t in studio.takes] == voices.ids
    for take, voice, card in zip(studio.takes, voices, studio.cards):
        shown = card.html("t", studio.shortlist)
        for fact in (voice.display_name, voice.locale, voice.gender, voice.provider):
            assert fact in shown
        assert f"<code style='user-select:all'>{voice.voice_id}</code>" in shown
        original = ffmpeg_loudness(take.line.save(tmp_path, voice.voice_id))
        assert take.matched.original == pytest.approx(original, abs=0.15)
        assert f"{take.matched.original:.1f} LUFS → -23" in shown
        assert take.src.startswith("data:audio/wav;base64,") and take.src in shown
        played = tmp_path / f"{voice.voice_id}-played.wav"
        played.write_bytes(base64.b64decode(take.src.split(",", 1)[1]))
        assert ffmpeg_loudness(played) == pytest.approx(-23.0, abs=0.2)
        assert "class='dubkit-download'" in shown
        assert f"download='{take.filename()}'" in shown
    assert sandbox.api_key not in studio.static_html() + repr(studio)


def test_shortlist_exports_csv_json_and_hands_its_voices_to_a_dub(dialogue, tmp_path):
    client, material = dialogue
    studio = AuditionStudio(client, locale="fr-FR", voices=3, in_app=False)
    studio.hear("Bonsoir et bienvenue.")
    first, _, third = studio.cards
    use(studio, "note", third.take.key, "chaleureuse")  # a note first, then the star
    use(studio, "star", third.take.key)
    use(studio, "star", first.take.key)
    use(studio, "note", first.take.key, "claire, un peu rapide")
    assert [e.voice_id for e in studio.shortlist] == [
        third.take.voice.voice_id,
        first.take.voice.voice_id,
    ]
    starred = first.html("t", studio.shortlist)
    assert "★ Shortlisted" in starred and "aria-pressed='true'" in starred

    frame = studio.shortlist.to_frame()
    assert list(
        frame[["name", "note", "emotion", "speed", "locale"]].itertuples(index=False, name=None)
    ) == [
        (third.take.voice.name, "chaleureuse", "neutral", 1.0, "fr-FR"),
        (first.take.voice.name, "claire, un peu rapide", "neutral", 1.0, "fr-FR"),
    ]
    csv_path, json_path = tmp_path / "shortlist.csv", tmp_path / "shortlist.json"
    studio.shortlist.to_csv(csv_path)
    studio.shortlist.to_json(json_path)
    assert pd.read_csv(csv_path, keep_default_na=False)[["voice_id", "provider", "note"]].equals(
        frame[["voice_id", "provider", "note"]]
    )
    loaded = Shortlist.load(json_path)
    assert loaded.to_records() == studio.shortlist.to_records()
    exports = studio.shortlist_view.html("t")
    assert "download='shortlist.csv'" in exports and "download='shortlist.json'" in exports

    selected = loaded.to_voices()
    assert selected == [{"voiceId": e.voice_id, "provider": e.provider} for e in studio.shortlist]
    dub = (
        client.dubbing.create(material, target="fr-FR", speaker_num=2, voices=selected)
        .wait(PATIENCE)
        .result
    )
    assert [m["voiceId"] for m in dub.voices] == [s["voiceId"] for s in selected]
    assert {(line.speaker, line.voice_id) for line in dub.script} == {
        ("Speaker 1", selected[0]["voiceId"]),
        ("Speaker 2", selected[1]["voiceId"]),
    }

    use(studio, "star", first.take.key)  # unstar: gone from the list and the table
    assert studio.shortlist.voice_ids() == [third.take.voice.voice_id]
    assert first.take.voice.name not in studio.shortlist_view.html("t")
    use(studio, "clear-shortlist")
    assert len(studio.shortlist) == 0
    assert "aria-pressed='false'" in third.html("t", studio.shortlist)


def test_one_voice_across_readings_then_a_tts_batch_from_the_shortlist(client):
    studio = AuditionStudio(client, locale="en-US", voices=2, in_app=True)
    studio.hear(LINE)
    voice = studio.takes[0].voice.voice_id
    takes = studio.readings(voice, emotions=["neutral", "sad"], speeds=[1.0, 1.25])
    assert [(t.emotion, t.speed) for t in takes] == [
        ("neutral", 1.0),
        ("neutral", 1.25),
        ("sad", 1.0),
        ("sad", 1.25),
    ]
    shown = [c.html("t", studio.shortlist) for c in studio.cards[-4:]]
    assert [card.count("dubkit-take-name") for card in shown] == [1] * 4
    assert "neutral · 1.25x" in shown[1]
    durations = [t.line.duration for t in takes]
    assert durations[1] == pytest.approx(durations[0] / 1.25, abs=0.02)
    assert durations[3] == pytest.approx(durations[2] / 1.25, abs=0.02)
    assert [t.line.extra.get("emotion") for t in takes] == [None, None, "sad x0.60", "sad x0.60"]
    assert all(t.matched is not None and not t.matched.limited for t in takes)

    use(studio, "star", studio.cards[-1].take.key)  # sad at 1.25x
    use(studio, "star", studio.cards[1].take.key)  # the second voice, neutral
    (sad,) = [e for e in studio.shortlist if e.emotion == "sad"]
    assert (sad.voice_id, sad.speed) == (voice, 1.25)
    lines = studio.shortlist.tts_lines(["One more line.", "And the last."])
    assert lines[0] == {"text": "One more line.", "voice_id": voice, "emo_prompt": "sad"}
    speech = client.tts.batch(lines, progress=False)
    assert not speech.errors
    assert [ln.voice_id for ln in speech] == [voice, voice] + [studio.takes[1].voice.voice_id] * 2
    assert [ln.extra.get("emotion") for ln in speech] == ["sad x0.60", "sad x0.60", None, None]


def test_blind_round_hides_the_voices_until_a_pick_then_reveals_and_records_it(client):
    studio = AuditionStudio(client, locale="en-US", voices=3, blind=True, seed=11, in_app=True)
    studio.hear(LINE)
    lineup = studio.blind_round.takes
    assert list(lineup) == ["A", "B", "C"] and {t.voice.voice_id for t in lineup.values()} == {
        t.voice.voice_id for t in studio.takes
    }
    for card in studio.cards:
        shown = re.sub(r"data:audio/[^']+", "", card.html("t", studio.shortlist))
        for take in studio.takes:
            assert take.voice.name not in shown and take.voice.voice_id not in shown
        assert "dubkit-star" not in shown and "dubkit-pick-button" in shown
        assert "LUFS →" not in shown  # its own level could give it away
        assert f"aria-label='Take {card.letter}'" in shown  # its player's name neither
    use(studio, "pick", "B")  # "Pick B"
    (pick,) = studio.picks
    assert (pick.letter, pick.voice_id) == ("B", lineup["B"].voice.voice_id)
    assert pick.lineup == {k: t.voice.voice_id for k, t in lineup.items()}
    shown = [card.html("t", studio.shortlist) for card in studio.cards]
    for card, page in zip(studio.cards, shown):
        assert card.take.voice.name in page and "dubkit-star" in page
        assert "dubkit-pick-button" not in page and "LUFS → -23" in page
    assert "✓ your pick" in shown[1] and "✓ your pick" not in shown[0]
    assert f"you picked <b>B</b>, {pick.name}" in studio.picks_html()
    assert studio.pick("A") == pick and len(studio.picks) == 1  # one pick a round
    assert studio.picks_frame()[["round", "letter", "voice_id"]].values.tolist() == [
        [1, "B", pick.voice_id]
    ]
    studio.hear(LINE)  # the next round is blind again
    with pytest.raises(ValueError, match="no take 'Z'"):
        studio.pick("Z")


def test_app_text_fits_where_it_is_shown(client):
    assert ":8866" not in APP_INTRO and "cell below" not in APP_INTRO.lower()
    assert not running_in_voila()  # this is a plain Python process
    in_app = AuditionStudio(client, in_app=True)
    in_notebook = AuditionStudio(client, in_app=False)
    assert "studio.shortlist" not in in_app.shortlist_view.hint
    assert "Shortlist.load(" in in_app.shortlist_view.hint
    assert "studio.shortlist.to_voices()" in in_notebook.shortlist_view.hint
    for studio in (in_app, in_notebook):
        assert ":8866" not in studio.static_html()


def test_download_button_is_an_escaped_link_drawn_as_a_button():
    button = download_button_html(
        "https://cdn.example/a'b.m4a?x=1&y=2",
        "take <1>",
        filename="Zoë's take.m4a",
        mime="audio/mp4",
    )
    assert re.match(
        r"^<a class='dubkit-download' href='https://cdn\.example/a&#x27;b\.m4a\?x=1"
        r"&amp;y=2' data-dubkit-media='[0-9a-f]{20}' download='Zoë&#x27;s take\.m4a' "
        r"style='[^']*"
        r"border:1px solid [^']*border-radius:6px",
        button,
    ), button
    assert "take &lt;1&gt;</a>" in button
    plain = download_button_html("https://cdn.example/x.srt", "subtitles .srt")
    # no filename: the URL's own name (a blob: URL from the live channel would have none)
    assert " download='x.srt' style=" in plain
    assert "role=" not in plain  # a link, which Enter follows (the live channel adds Space)


def test_takes_cast_from_a_card_and_the_shortlist_make_a_cast_heard_saved_and_reopened(
    client, tmp_path
):
    studio = AuditionStudio(client, locale="en-US", voices=2, in_app=True)
    studio.hear(LINE)
    first, second = studio.takes
    use(studio, "cast", first.key, "Narrator")  # typed in the first card's "cast as"
    assert studio.cast.voice("Narrator", "en-US").voice_id == first.voice.voice_id
    assert f"Cast {first.voice.name} as Narrator (en-US)." in studio.status
    use(studio, "star", second.key)
    use(studio, "cast-entry", second.key, "Alice")  # typed beside the shortlisted voice
    assert studio.cast.voice("Alice").voice_id == second.voice.voice_id
    page = studio.value
    assert "cast as" in page and "Cast JSON" in page and "Narrator" in page
    use(studio, "hear-cast")
    heard = studio.cast_panel.audition
    assert heard is not None and set(heard.lines) == {("Narrator", "en-US"), ("Alice", "en-US")}
    assert all(line.ok for line in heard.lines.values())
    assert "aria-label='Narrator, en-US: " in studio.value  # the cast's players are named
    path = studio.cast.save(tmp_path / "cast.json")
    reopened = AuditionStudio(client, in_app=True, cast=Cast.load(path))
    assert reopened.cast == studio.cast and "Narrator" in reopened.value
    use(studio, "cast", first.key, "Nar:rator")  # a role name the cast refuses
    assert "Error:" in studio.status and "Nar:rator" not in studio.cast


def test_every_id_in_the_studio_is_its_own_and_every_label_names_its_field(client):
    """A round, then readings of one of its voices (the default flow): a voice's take in the
    round and its neutral 1x reading share a take key, never an id (issue 47: on 99838da the
    two cards shared their note, cast and star ids, and each label pointed at the round's)."""
    studio = AuditionStudio(client, locale="en-US", voices=2, in_app=True)
    studio.hear(LINE)
    studio.readings(studio.takes[0].voice.voice_id, emotions=["neutral"], speeds=[1.0, 1.25])
    page = studio.value
    ids = re.findall(r"\bid='([^']+)'", page)
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    labelled = re.findall(r"<label for='([^']+)'", page)
    assert labelled and all(ids.count(target) == 1 for target in labelled)
    assert len(labelled) == len(set(labelled))  # one label per field
    notes = re.findall(r"<input id='([^']+)' class='dubkit-note-input'", page)
    assert len(notes) == 4 and set(notes) <= set(labelled)  # two round cards, two readings
