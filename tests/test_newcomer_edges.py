"""Rough edges a newcomer met (issue 12, item 5): unknown voices, the command line, tables.

Real HTTP to the session's sandbox; the command runs as a subprocess, as a user types it.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

import dubkit
from dubkit import samples
from dubkit.results import DubbingResult

REST_PATHS = ("/openapi/v1", "assets/voice")
HINT = "client.voices.presets()"
SHAPES = ["sv_s1_nowhere", "cv_" + "0" * 32, "cv_123", "nonsense", "sv bad/../id"]


# ------------------------------------------------------------------ unknown voice ids


@pytest.fixture(scope="module")
def dub_account(sandbox, tmp_path_factory):
    """A key of its own and a short registered video, for the media entry points."""
    key = sandbox.create_key("newcomer")
    client = dubkit.Client(key, sandbox.url, sandbox=sandbox)
    clip = samples.narrated_clip(
        tmp_path_factory.mktemp("clip") / "clip.mp4", ["Hello there.", "Goodbye now."]
    )
    yield client, client.materials.upload(clip, progress=False), clip, key
    client.close()


def assert_unknown_voice(error: dubkit.ValidationError, field: str, voice_id: str) -> None:
    assert type(error) is dubkit.ValidationError
    assert error.field == field
    assert repr(voice_id) in error.problem and HINT in error.problem
    assert not any(path in str(error) for path in REST_PATHS), str(error)


@pytest.mark.parametrize("voice_id", SHAPES)
def test_an_unknown_voice_is_the_same_error_in_every_entry_point(client, dub_account, voice_id):
    mine, material, _, _ = dub_account
    tasks_before = len(mine.tasks.list())
    calls = [
        ("data[0].voiceId", lambda: client.tts.speak("Hi.", voice_id)),
        ("voices[1]", lambda: client.tts.audition("Hi.", ["sv_s1_en_us_clear_f", voice_id])),
        (
            "voices[1]",
            lambda: mine.dubbing.create(
                material, target="fr-FR", voices=["sv_s4_fr_fr_news_f", voice_id]
            ),
        ),
        (
            "options.voiceSpeakers.selectedVoicesList[0].voiceId",
            lambda: mine.dubbing.create(
                material,
                target="fr-FR",
                options={"voiceSpeakers": {"selectedVoicesList": [{"voiceId": voice_id}]}},
            ),
        ),
    ]
    for field, call in calls:
        with pytest.raises(dubkit.ValidationError) as info:
            call()
        assert_unknown_voice(info.value, field, voice_id)
    with pytest.raises(dubkit.ValidationError) as info:
        client.voices.preset(voice_id)
    assert type(info.value) is dubkit.ValidationError and info.value.field == "voice"
    assert repr(voice_id) in info.value.problem and HINT in info.value.problem
    assert len(mine.tasks.list()) == tasks_before  # nothing was sent for any of them


def test_preset_lookup_names_the_argument_and_points_clone_ids_to_clones(client):
    assert client.voices.preset("sv_s4_en_gb_news_f").provider == "S4"
    with pytest.raises(dubkit.ValidationError) as info:
        client.voices.preset("cv_" + "1" * 32)
    assert "client.voices.clones(" in info.value.problem
    with pytest.raises(dubkit.ValidationError) as info:
        client.voices.preset("")  # not "the first preset of the catalogue"
    assert info.value.field == "voice"


def test_a_dub_with_unknown_voices_costs_no_upload(dub_account, tmp_path):
    mine, _, clip, _ = dub_account
    copy = tmp_path / "again.mp4"
    copy.write_bytes(clip.read_bytes() + b"\0")  # other bytes: an upload would be new
    before = len(mine.materials.list())
    with pytest.raises(dubkit.ValidationError) as info:
        mine.dubbing.create(copy, target="de-DE", voices=["sv_s1_nowhere"])
    assert info.value.field == "voices[0]"
    assert len(mine.materials.list()) == before


def test_known_voices_pass_and_a_wrong_provider_is_named(dub_account, client_for):
    mine, material, _, key = dub_account
    clone = mine.clones.create(
        mine.voices.preset("sv_s1_en_us_clear_f").audio,
        name="Tester",
        provider="V2",
        locale="en-US",
    )
    fresh = client_for(key)  # a client that has seen no voice yet: it must look them up
    task = fresh.dubbing.create(
        material, target="fr-FR", voices=["sv_s4_fr_fr_news_f", clone.voice_id]
    )
    assert task.task_id
    with pytest.raises(dubkit.ValidationError) as info:
        fresh.dubbing.create(
            material, target="fr-FR", voices=[{"voiceId": "sv_s4_fr_fr_news_f", "provider": "S1"}]
        )
    assert info.value.field == "voices[0].provider" and "'S4'" in info.value.problem


# ------------------------------------------------------------------ the command line


def run(*args: str, module: str = "dubkit") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("module", ["dubkit", "dubkit.cli"])
def test_sandbox_on_a_busy_port_is_one_line_and_exit_1(module, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = run("sandbox", "--port", str(port), "--data-dir", str(tmp_path), module=module)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr + out.stdout
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert f"port {port} is already in use" in lines[0] and "--port" in lines[0]


def test_python_m_dubkit_help_and_version():
    assert run("--version").stdout.strip() == f"dubkit {dubkit.__version__}"
    bare = run()
    assert bare.returncode == 0 and "sandbox" in bare.stdout and "studio" in bare.stdout
    for args in (["--help"], ["sandbox", "--help"], ["studio", "--help"]):
        shown = run(*args)
        assert shown.returncode == 0, shown.stderr
        assert "``" not in shown.stdout and "usage: dubkit" in shown.stdout
    assert "port to listen on" in run("sandbox", "--help").stdout


# ------------------------------------------------------------------ tables and reprs


def test_reprs_count_in_words(client):
    one = client.translate.create(["Hello"], source="en-US", target="fr-FR")
    assert repr(one).startswith("Translation(1 segment, 0 failed")
    two = client.translate.create(["Hello", "Bye"], source="en-US", target="fr-FR")
    assert repr(two).startswith("Translation(2 segments, ")
    assert repr(client.tts.create(["Hi."], voice="sv_s1_en_us_clear_f")).startswith(
        "Speech(1 line, "
    )
    assert repr(client.voices.presets(voice="sv_s1_en_us_clear_f")) == "VoiceList(1 voice of 1)"
    result = DubbingResult(
        client.transport,
        {
            "translatedScripts": {"result": [{"id": "1", "text": "Salut"}]},
            "voiceMatch": [{"voiceId": "sv_s4_fr_fr_news_f"}],
        },
    )
    assert repr(result).endswith(", 1 line, 1 voice)")


def no_error_is_none(frame, failed: set[int]) -> None:
    """Every row's ``error`` is None (what a person reads as "no error"), never NaN."""
    assert frame["error"].dtype == object
    for index, value in frame["error"].items():
        if index in failed:
            assert isinstance(value, str) and value
        else:
            assert value is None, (index, value)


def test_error_columns_say_none_whether_or_not_another_row_failed(client):
    # "2024" has no words to translate: the sandbox fails that segment, as the service would.
    mixed = client.translate.create(["Hello", "2024"], source="en-US", target="fr-FR")
    assert set(mixed.errors) == {1}
    no_error_is_none(mixed.to_frame(), {1})
    no_error_is_none(
        client.translate.create(["Hello"], source="en-US", target="fr-FR").to_frame(), set()
    )
    batch = client.translate.batch(
        ["Hi"] * 51 + ["2024"], source="en-US", target="de-DE", progress=False
    )
    no_error_is_none(batch.to_frame(), {51})
    lines = [{"text": "One."}, {"text": "Two.", "duration": 0.1}]  # too short: that line fails
    speech = client.tts.batch(lines, voice="sv_s1_en_us_clear_f", progress=False)
    assert set(speech.errors) == {1}
    no_error_is_none(speech.to_frame(), {1})
    no_error_is_none(client.tts.create(["One."], voice="sv_s1_en_us_clear_f").to_frame(), set())


def test_notebook_06_explains_vt_before_showing_it_and_knows_its_clip_has_two_speakers():
    import re

    import nbformat

    notebook = nbformat.read(
        Path(__file__).parent.parent / "notebooks" / "06_translate_and_dub.ipynb", as_version=4
    )
    text = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert "dub a clip with two speakers" not in text and "a clone of the\n  narrator" not in text
    shows_vt = re.compile(r"[>\s']vt[<\s,')]")  # a table cell, a repr, printed text
    first_vt = next(
        i
        for i, c in enumerate(notebook.cells)
        if c.cell_type == "code"
        and any(shows_vt.search(str(o.get("text", "")) + str(o.get("data", {}))) for o in c.outputs)
    )
    explained = [c.source for c in notebook.cells[:first_vt] if c.cell_type == "markdown"]
    assert any("`vt`" in source and "video translation" in source for source in explained)
