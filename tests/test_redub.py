"""Edit a dub's script and re-dub it on this machine, measured: outside the edited line the new
mix is the service's, inside it the new speech sits in the line's slot; every bad edit is
refused before anything is synthesized (no credits spent)."""

from __future__ import annotations

import numpy as np
import pytest
import requests
from _actions import use
from _waiting import PATIENCE

import dubkit
from dubkit import samples
from dubkit.cast import Cast
from dubkit.media import audio, av, mixing
from dubkit.results import DubbingResult

SCRIPT = [
    "Hello and welcome to the show.",
    "Today we talk about trains.",
    "Thank you for listening.",
]


@pytest.fixture(scope="module")
def made(sandbox, tmp_path_factory):
    """One dub made by the sandbox (separation "remove": the bed is the no-speech stem), as
    a client and the raw result each test builds a fresh DubbingResult from."""
    key = sandbox.create_key("redub")
    client = dubkit.Client(key, sandbox.url, sandbox=sandbox)
    clip = samples.narrated_clip(tmp_path_factory.mktemp("redub") / "talk.mp4", SCRIPT)
    dub = (
        client.dubbing.create(clip, target="fr-FR", source="en-US", separation_mode="remove")
        .wait(PATIENCE)
        .result
    )
    yield key, client, dub.raw
    client.close()


def fresh(made) -> tuple[dubkit.Client, DubbingResult]:
    _, client, raw = made
    return client, DubbingResult(client.transport, raw)


def decoded(url_or_bytes) -> tuple[np.ndarray, int]:
    data = url_or_bytes if isinstance(url_or_bytes, bytes) else requests.get(url_or_bytes).content
    return audio.decode(data)


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


def test_only_the_edited_line_changes_and_its_new_speech_sits_in_its_slot(made, tmp_path):
    client, dub = fresh(made)
    old, rate = decoded(dub.audio.url)
    bed, bed_rate = audio.decode(requests.get(dub.no_speech_url).content, "m4a")
    other = client.voices.presets(locale="fr-FR", gender="female", limit=1)[0]
    line = dub.edit("2", translation="Parlons des trains à vapeur.", voice=other.voice_id)
    assert line.provider != other.provider  # (the cloned voice's engine, until re-dubbed)

    again = client.dubbing.redub(dub, tmp_path, audio_format="wav", progress=False)

    assert again.redubbed == ["2"] and again.script[1].provider == other.provider
    new, new_rate = audio.decode(again.files["audio"].read_bytes())
    assert new_rate == rate == bed_rate and len(new) == len(old)
    inside = np.zeros(len(new), bool)
    inside[round(line.start * rate) : round(line.end * rate)] = True
    # Outside the edited line the mix is the service's (the two differ by AAC's rounding).
    assert rms((new - old)[~inside]) < 0.05 * rms(old[~inside])
    # Inside it the old speech is gone and the new line is there, in its slot.
    assert rms((new - old)[inside]) > 0.5 * rms(old[inside])
    said, said_rate = audio.decode(again.held(again.script[1].audio_url))
    heard = (new - bed[: len(new)])[inside]
    expected = mixing.resample(said, said_rate, rate)[: inside.sum()]
    assert np.corrcoef(heard[: len(expected)], expected)[0, 1] > 0.99
    # Untouched lines are the service's audio, sample for sample (16-bit WAV apart).
    first = dub.script[0]
    span = slice(round(first.start * rate), round(first.end * rate))
    service_line, line_rate = first.audio()
    placed = mixing.lay_lines([(first.start, service_line, line_rate)], rate, len(new) / rate, 1)
    assert np.max(np.abs((new - bed[: len(new)])[span] - placed[span])) < 1e-3


def test_the_redub_plays_saves_and_compares_like_a_dub(made, tmp_path):
    client, dub = fresh(made)
    dub.edit("3", translation="Merci beaucoup et à bientôt.")
    again = client.dubbing.redub(dub, tmp_path / "work", progress=False)
    assert av.probe(again.files["video"]).has_video
    assert av.probe(again.files["video"]).duration == pytest.approx(dub.video.duration, abs=0.1)
    assert "Merci beaucoup et à bientôt." in again.subtitles.text("srt")
    view = again._repr_html_()
    assert "<video" in view and "Merci beaucoup" in view and "spoken anew" in view
    saved = again.save(tmp_path / "kept", "talk")
    assert sorted(p.name for p in saved.values()) == [
        "talk.fr-FR.m4a",
        "talk.fr-FR.mp4",
        "talk.fr-FR.srt",
        "talk.fr-FR.vtt",
    ]
    side_by_side = dubkit.compare(dub, again)._repr_mimebundle_()["text/html"]
    assert side_by_side.count("<video") == 3  # the original, the service's dub, the re-dub


@pytest.mark.parametrize(
    ("edit", "field", "says"),
    [
        (lambda d: d.edit("9", translation="x"), "line_id", "no line '9'"),
        (lambda d: d.edit("2", voice="sv_nope"), "script[1].voice_id", "sv_nope"),
        (lambda d: d.edit("2", start=3.0, end=2.0), "script[1].end", "after its start"),
        (lambda d: d.edit("2", end=d.line("2").start + 0.1), "script[1].end", "syllable"),
        (lambda d: d.edit("2", translation="  "), "script[1].translation", "text to speak"),
    ],
)
def test_a_bad_edit_is_refused_before_anything_is_spoken(made, sandbox, edit, field, says):
    key, _, _ = made
    client, dub = fresh(made)
    before = sandbox.credits(key)
    with pytest.raises(dubkit.ValidationError) as info:
        edit(dub)
        client.dubbing.redub(dub, progress=False)
    assert info.value.field == field and says in str(info.value)
    assert sandbox.credits(key) == before


def test_a_result_without_the_no_speech_stem_says_what_is_missing(made):
    client, dub = fresh(made)
    raw = {**dub.raw, "audioSeparation": {"mnsUrl": ""}}
    lacking = DubbingResult(client.transport, raw)
    lacking.edit("1", translation="Bonjour.")
    with pytest.raises(dubkit.DubkitError, match=r"audioSeparation\.mnsUrl"):
        client.dubbing.redub(lacking, progress=False)


def test_a_dubs_own_voice_speaks_again_for_its_key_and_no_other(made, sandbox):
    """The interface resends a line's voiceId and provider when lines are edited: the dub's
    task clone (not in the clone library) speaks for the key that made the dub, only."""
    client, dub = fresh(made)
    line = dub.script[0]
    assert line.voice_id.startswith("cv_")
    assert line.voice_id not in client.voices.clones().ids  # a task's, not the library's
    body = {"data": [{"text": "Encore une fois.", "voice_id": line.voice_id}]}
    said = client.call("tts.create", body)["results"][0]
    assert said.get("uri") and not said.get("errorMessage"), said
    with dubkit.Client(sandbox.create_key("stranger"), sandbox.url) as stranger:
        with pytest.raises(dubkit.BadRequestError, match="not found"):
            stranger.call("tts.create", body)


def test_the_script_editor_re_dubs_what_was_changed_in_its_grid(made):
    client, dub = fresh(made)
    editor = dubkit.ScriptEditor(client, dub)
    assert [row.line.id for row in editor.rows] == ["1", "2", "3"]
    assert editor.redub_changes() is None and "Nothing changed" in editor.status
    presets = [v for label, v in editor.rows[1].options if v.startswith("sv_")]
    # the button pressed with a line retyped and another re-voiced, as the page sends them
    use(editor, "redub", translation_3="Merci et au revoir.", voice_2=presets[0])
    assert editor.redub is not None and editor.redub.redubbed == ["2", "3"]
    assert "spoken anew" in editor.status
    assert "aria-label='translation of line 3'" in editor.value  # each field says which
    shown = editor._repr_mimebundle_()["text/html"]
    assert "Merci et au revoir." in shown and "re-dubbed here" in shown
    assert "127.0.0.1" not in editor._repr_mimebundle_()["text/html"].split("<video")[0]


def test_a_bad_edit_in_the_grid_is_said_in_its_status_line(made, sandbox):
    key, _, _ = made
    client, dub = fresh(made)
    editor = dubkit.ScriptEditor(client, dub)
    editor.rows[0].translation = "   "
    before = sandbox.credits(key)
    assert editor.redub_changes() is None
    assert "script[0].translation" in editor.status and sandbox.credits(key) == before


def test_a_line_is_re_voiced_by_its_role_in_code_and_in_the_editor(made):
    client, dub = fresh(made)
    cast = Cast(default_locale="en-US")
    cast.assign("Alice", "sv_s3_en_us_story_f")
    cast.assign("Alice", "sv_s3_fr_fr_story_f", locale="fr-FR")
    line = dub.edit("2", role="Alice", cast=cast)
    assert line.voice_id == "sv_s3_fr_fr_story_f"  # the role's voice in the dub's locale
    with pytest.raises(dubkit.ValidationError) as caught:
        dub.edit("3", role="Bob", cast=cast)
    assert caught.value.field == "role" and "'Bob' is not in the cast" in caught.value.problem
    with pytest.raises(dubkit.ValidationError, match="needs cast="):
        dub.edit("3", role="Alice")
    client, dub = fresh(made)
    editor = dubkit.ScriptEditor(client, dub, cast=cast)
    assert editor.rows[0].options[0] == (
        "Alice (role) · sv_s3_fr_fr_story_f",
        "sv_s3_fr_fr_story_f",
    )
    use(editor, "redub", voice_2="sv_s3_fr_fr_story_f")  # "Alice (role)" chosen for line 2
    assert editor.redub is not None and editor.redub.redubbed == ["2"]
