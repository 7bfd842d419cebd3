"""A cast: its file (round trip, errors naming the line), scripts and dubs spoken by roles,
a cast moved to another key (missing clones, their quote, restoring them), the sound check,
and the ``dubkit cast`` / ``--cast`` command line. All against the session's sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dubkit
from dubkit import samples
from dubkit.cast import Cast

EN_F, EN_F2, EN_M = "sv_s3_en_us_story_f", "sv_s4_en_us_news_f", "sv_s3_en_us_story_m"
FR_F, FR_M = "sv_s3_fr_fr_story_f", "sv_s3_fr_fr_story_m"


def two_roles() -> Cast:
    cast = Cast("The harbour", default_locale="en-US")
    cast.add_role("Narrator", note="warm, unhurried")
    cast.assign("Narrator", EN_F, emotion="calm", weight=0.5)
    cast.assign("Narrator", FR_F, locale="fr-FR")
    cast.assign("Alice", EN_M)
    cast.assign("Alice", FR_M, locale="fr-FR")
    return cast


# --------------------------------------------------------------------------- the file


def test_a_cast_file_round_trips_and_unchanged_is_the_same_bytes(tmp_path):
    path = two_roles().save(tmp_path / "cast.json")
    loaded = Cast.load(path)
    assert loaded == two_roles() and loaded.voice("Narrator").emotion == "calm"
    hand_laid = tmp_path / "by-hand.json"  # another layout, the same cast
    hand_laid.write_text(json.dumps(json.loads(path.read_text()), indent=4), encoding="utf-8")
    before = hand_laid.read_bytes()
    Cast.load(hand_laid).save()
    assert hand_laid.read_bytes() == before  # loaded and saved unchanged: not rewritten
    edited = Cast.load(hand_laid)
    edited.with_voice("Alice", "en-US", emotion="happy")
    edited.save()
    assert (
        Cast.load(hand_laid).voice("Alice").emotion == "happy" != two_roles().voice("Alice").emotion
    )


@pytest.mark.parametrize(
    "edit, where, said",
    [
        (
            lambda t: t.replace('"emotion"', '"emotoin"', 1),
            '"emotoin"',
            "'emotoin' is not a setting",
        ),
        (
            lambda t: t.replace('"preset"', '"presett"', 1),
            '"presett"',
            'kind is "preset" or "clone"',
        ),
        (lambda t: t.replace('"warm, unhurried"', '"warm",,', 1), '"warm",,', "not JSON"),
        (
            lambda t: t.replace('"Alice"', '"Narrator"', 1),
            None,
            "the role 'Narrator' is named twice",
        ),
    ],
)
def test_a_hand_edited_cast_file_with_a_typo_names_the_file_and_line(tmp_path, edit, where, said):
    path = two_roles().save(tmp_path / "cast.json")
    text = edit(path.read_text())
    path.write_text(text, encoding="utf-8")
    with pytest.raises(dubkit.ValidationError) as caught:
        Cast.load(path)
    lines = text.splitlines()
    line = next(i for i, ln in enumerate(lines, 1) if (where or '"Narrator"') in ln)
    if where is None:  # the second "Narrator": the one that repeats
        line = [i for i, ln in enumerate(lines, 1) if '"Narrator"' in ln][1]
    assert caught.value.field == f"{path}, line {line}" and said in caught.value.problem


def test_a_role_without_a_voice_in_a_locale_falls_back_to_the_default():
    cast = two_roles()
    cast.fallbacks = ["fr-FR"]
    assert cast.voice("Narrator", "de-DE").voice_id == FR_F  # the fall-back first
    cast.fallbacks = []
    assert cast.voice("Narrator", "de-DE").voice_id == EN_F  # then the default locale


# --------------------------------------------------------------------------- at work


def test_a_script_that_names_roles_speaks_with_their_voices(client):
    cast = two_roles()
    script = ["NARRATOR: The harbour wakes.", {"role": "Alice", "text": "Morning!"}, "alice: Hi."]
    speech = client.tts.create(script, cast=cast, locale="fr-FR", output_format="wav")
    assert [line.voice_id for line in speech] == [FR_F, FR_M, FR_M] and not speech.errors
    assert [line.text for line in speech] == ["The harbour wakes.", "Morning!", "Hi."]
    quote = client.tts.quote(script, cast=cast)
    assert quote.credits == 2 and "29 characters" in quote.basis  # the roles are not billed


@pytest.mark.parametrize(
    "script, field, said",
    [
        (["NARRATR: Hello."], "data[0].role", "'NARRATR' is not a role of the cast"),
        (["Hello, no role."], "data[0]", "names no role"),
        ([{"role": "Bob", "text": "Hi"}], "data[0].role", "'Bob' is not a role"),
        ([{"text": "Hi"}], "data[0].role", "is required"),
    ],
)
def test_an_unknown_role_in_a_script_is_refused_before_anything_is_sent(
    sandbox, new_key, client_for, script, field, said
):
    c = client_for(new_key)
    before = (sandbox.credits(new_key), len(c.tasks.list()))
    with pytest.raises(dubkit.ValidationError) as caught:
        c.tts.create(script, cast=two_roles())
    assert caught.value.field == field and said in caught.value.problem
    assert (sandbox.credits(new_key), len(c.tasks.list())) == before


@pytest.fixture(scope="module")
def episodes(tmp_path_factory):
    """Two short two-speaker episodes: a woman's lines then a man's, then her again."""
    folder = tmp_path_factory.mktemp("episodes")
    return [
        samples.narrated_clip(
            folder / f"ep{n}.mp4",
            [
                (f"Episode {n}. The harbour wakes.", "f2"),
                ("The boats are late.", "m3"),
                ("Then we wait.", "f2"),
            ],
        )  # fmt: skip
        for n in (1, 2)
    ]


def test_two_episodes_are_dubbed_by_the_same_voices_per_role(client, episodes):
    cast = two_roles()
    speakers = {1: "Narrator", 2: "Alice"}
    heard = {}
    for n, episode in enumerate(episodes, 1):
        task = client.dubbing.create(episode, target="fr-FR", cast=cast, speakers=speakers)
        dub = task.wait(600).result
        heard[n] = {line.speaker: line.voice_id for line in dub.script}
    assert heard[1] == heard[2] and set(heard[1].values()) == {FR_F, FR_M}


def test_a_speaker_mapped_to_no_role_is_refused_before_the_upload(
    sandbox, new_key, client_for, episodes
):
    c = client_for(new_key)
    before = (sandbox.credits(new_key), len(c.materials.list()))
    for speakers, field in [({1: "Narrator", 3: "Alice"}, "speakers"), ({1: "Bob"}, "speakers[1]")]:
        with pytest.raises(dubkit.ValidationError) as caught:
            c.dubbing.create(episodes[0], target="fr-FR", cast=two_roles(), speakers=speakers)
        assert caught.value.field == field
    assert (sandbox.credits(new_key), len(c.materials.list())) == before


# --------------------------------------------------------------------------- keys and drift


def test_the_sound_check_says_same_then_changed_when_a_voice_is_replaced(client):
    cast = Cast(default_locale="en-US")
    cast.assign("Narrator", EN_F)
    assert cast.fingerprint(client) == 1
    first = cast.check(client)
    assert [v.status for v in first] == ["same"] and first[0].similarity >= 0.98
    cast.with_voice("Narrator", "en-US", voice_id=EN_F2)  # same locale and gender, kept print
    second = cast.check(client)
    assert [v.status for v in second] == ["changed"] and second[0].similarity < 0.98


def test_a_cast_on_a_fresh_key_names_its_missing_clones_quotes_and_restores_them(
    client, client_for, new_key, sandbox, tmp_path
):
    reference = samples.speech_recording(
        tmp_path / "alice.wav", "I am Alice, and this is my voice."
    )
    made = client.clones.create(reference, name="Alice", text="I am Alice, and this is my voice.")
    cast = Cast(default_locale="en-US")
    cast.assign("Alice", made, reference="alice.wav")
    cast.assign("Narrator", EN_F)
    cast.fingerprint(client)
    cast.save(tmp_path / "cast.json")  # the reference sits beside the cast file

    fresh = client_for(new_key)
    moved = Cast.load(tmp_path / "cast.json")
    before = sandbox.credits(new_key)
    gaps = moved.missing(fresh)
    assert [(role, v.voice_id) for role, _, v in gaps.clones] == [("Alice", made.voice_id)]
    assert gaps.quote.credits == 10 and not gaps.presets
    assert [v.status for v in moved.check(fresh)] == ["missing", "same"]
    assert sandbox.credits(new_key) == before - 2  # only the narrator's line was re-spoken

    restored = moved.restore(fresh)
    assert sandbox.credits(new_key) == before - 2 - 10
    new_id = restored[made.voice_id]
    assert new_id != made.voice_id and moved.voice("Alice").voice_id == new_id
    assert not moved.missing(fresh)


def test_a_preset_that_vanished_gets_the_nearest_offered_never_swapped(client):
    cast = Cast(default_locale="en-US")
    cast.assign("Narrator", "sv_s3_en_us_gone_f", gender="female", provider="S3", name="Story")
    gaps = cast.missing(client)
    offered = gaps.nearest["sv_s3_en_us_gone_f"]
    assert offered and all("_en_us_" in v and v.endswith("_f") for v in offered)
    assert offered[0].startswith("sv_s3_")  # the same tier first
    assert cast.voice("Narrator").voice_id == "sv_s3_en_us_gone_f"  # nothing swapped


# --------------------------------------------------------------------------- the command line


def test_the_cast_commands_show_check_and_speak_a_script(sandbox, new_key, tmp_path):
    env = {**os.environ, "DUBKIT_API_KEY": new_key, "DUBKIT_BASE_URL": sandbox.url}
    path = two_roles().save(tmp_path / "cast.json")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "dubkit", *args], env=env, capture_output=True, text=True,
            timeout=300, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    shown = run("cast", "show", str(path), "--json")
    assert shown.returncode == 0, shown.stderr
    assert {(r["role"], r["locale"], r["voice"]) for r in json.loads(shown.stdout)} >= {
        ("Narrator", "fr-FR", FR_F), ("Alice", "en-US", EN_M)
    }  # fmt: skip
    checked = run("cast", "check", str(path), "--json")
    assert checked.returncode == 1  # no fingerprints yet: not "same"
    assert {r["verdict"] for r in json.loads(checked.stdout)} == {"unprinted"}
    script = tmp_path / "script.txt"
    script.write_text("NARRATOR: The harbour wakes.\nALICE: Morning!\n", encoding="utf-8")
    spoken = run("tts", "--file", str(script), "--cast", str(path), "--locale", "fr-FR",
                 "--out-dir", str(tmp_path / "out"), "--format", "wav", "--json")  # fmt: skip
    assert spoken.returncode == 0, spoken.stderr
    assert [r["voiceId"] for r in json.loads(spoken.stdout)] == [FR_F, FR_M]
    script.write_text("NARRATOR: Fine.\nBOB: Who am I?\n", encoding="utf-8")
    refused = run("tts", "--file", str(script), "--cast", str(path), "--format", "wav")
    assert refused.returncode == 2 and "'BOB' is not a role" in refused.stderr
    assert Path(path).exists()
