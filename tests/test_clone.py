"""Voice cloning end to end: a clone you can hear is closer to its reference than a default
voice; sync and async; local files, materials and any reachable URL; clear errors.
"""

from __future__ import annotations

import functools
import http.server
import threading

import numpy as np
import pytest
import requests
from _actions import use
from _html import plays_by_itself
from _storage_fixtures import api, storage_defaults  # noqa: F401  (fixtures)
from _waiting import PATIENCE

import dubkit
from dubkit import samples
from dubkit.media import audio, av
from dubkit.results import Clone
from dubkit.sandbox.engines import voiceprint
from dubkit.schema.prices import CLONE_CREDITS
from dubkit.widgets.clone import ClonePanel

TEXT = "The morning train was late again, so we walked along the river and talked about the summer."
# Two speakers far from the preset narrators: one low and slow, one high and fast.
SPEAKERS = {
    "low_slow_male": dict(variant="m3", rate_wpm=120, pitch=20),
    "high_fast_female": dict(variant="f4", rate_wpm=230, pitch=85),
}
DEFAULT_VOICE = {"low_slow_male": "sv_s1_en_us_clear_m", "high_fast_female": "sv_s1_en_us_clear_f"}


@pytest.fixture(scope="module")
def speaker_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("speakers")
    return {
        name: samples.speech_recording(folder / f"{name}.wav", TEXT, **voice)
        for name, voice in SPEAKERS.items()
    }


@pytest.fixture
def web(tmp_path_factory, sandbox):
    """A web server of its own (not the sandbox) serving a folder: refAudio from elsewhere.

    It is plain http on loopback, which the sandbox fetches only when its policy names it."""
    folder = tmp_path_factory.mktemp("web")
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sandbox.admin("POST", "/fetch", schemes=["http", "https"], allow=["127.0.0.1"])
    yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    sandbox.admin("POST", "/fetch", schemes=["https"], allow=[])
    server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def fetched(url: str) -> bytes:
    """The bytes at a sandbox file URL, as a browser would get them (no API key)."""
    answer = requests.get(url, timeout=60)
    answer.raise_for_status()
    return answer.content


def heard(url_or_path) -> voiceprint.Voiceprint:
    data = (
        fetched(url_or_path)
        if str(url_or_path).startswith("http")
        else open(url_or_path, "rb").read()
    )
    return voiceprint.measure(*audio.decode(data))


@pytest.mark.parametrize("speaker", sorted(SPEAKERS))
def test_a_clone_is_closer_in_pitch_and_pace_than_a_default_voice(api, speaker_files, speaker):
    reference = heard(speaker_files[speaker])
    clone = api.clones.create(speaker_files[speaker], name=speaker, locale="en-US", text=TEXT)
    assert isinstance(clone, Clone) and clone.voice_id.startswith("cv_")
    cloned = heard(api.tts.speak(TEXT, clone.voice_id).uri)
    default = heard(api.tts.speak(TEXT, DEFAULT_VOICE[speaker]).uri)
    for measure in ("median_pitch_hz", "speaking_rate"):
        ours = abs(getattr(cloned, measure) - getattr(reference, measure))
        theirs = abs(getattr(default, measure) - getattr(reference, measure))
        assert ours < theirs, (measure, reference, cloned, default)
    assert cloned.gender == reference.gender


def test_the_clone_record_is_complete(api, speaker_files):
    clone = api.clones.create(
        speaker_files["low_slow_male"], name="Deep", provider="V2", locale="en-GB", text=TEXT
    )
    (record,) = api.voices.clones(voice=clone.voice_id)
    assert (record.name, record.provider, record.example_language, record.content) == (
        "Deep",
        "V2",
        "en-GB",
        TEXT,
    )
    assert record.task_id == clone.task_id and record.create_time and record.update_time
    samples_, rate = audio.decode(fetched(record.audio))
    assert abs(len(samples_) / rate - av.probe(speaker_files["low_slow_male"]).duration) < 0.05
    assert clone.measured["gender"] == "male" and clone.provider == "V2"
    task = api.tasks.get(clone.task_id)
    assert task.task_type == "cloneVoice" and task.status == "finished"


def test_async_clone_from_a_material_is_a_task_with_the_clone(api, speaker_files):
    material = api.materials.upload(speaker_files["high_fast_female"], progress=False)
    task = api.clones.create_async(material, name="Bright", text=TEXT)
    assert isinstance(task, dubkit.Task) and task.task_type == "cloneVoice"
    clone = task.wait(PATIENCE).result
    assert isinstance(clone, Clone) and clone.ref_audio == material.audio_url
    assert clone.voice_id in api.voices.clones().ids
    assert clone.provider == "V3"  # English sample, no provider given


def test_each_client_clones_a_recording_and_speaks_with_the_clone(each_client, speaker_files):
    recording = speaker_files["high_fast_female"]
    clone = each_client.clones.create(recording, name="Both", locale="en-US", text=TEXT)
    assert isinstance(clone, Clone) and clone.voice_id in each_client.voices.clones().ids
    task = each_client.clones.create_async(recording, name="Later", text=TEXT)
    async_client = isinstance(each_client, dubkit.AsyncClient)
    assert isinstance(task, dubkit.AsyncTask if async_client else dubkit.Task)
    assert task.wait(PATIENCE).result.voice_id in each_client.voices.clones().ids
    line = each_client.tts.speak("Now I say anything.", clone.voice_id)
    assert heard(line.uri).gender == "female"


def test_any_reachable_url_can_be_the_reference(api, speaker_files, web):
    folder, base = web
    (folder / "ref.wav").write_bytes(speaker_files["low_slow_male"].read_bytes())
    clone = api.clones.create(f"{base}/ref.wav", locale="de-DE")
    assert clone.provider == "V5"  # non-English sample, no provider
    (record,) = api.voices.clones(voice=clone.voice_id)
    assert record.name == "Clone of ref"
    assert record.audio.startswith(api.base_url + "/files/")  # a copy the sandbox serves
    assert heard(record.audio).gender == "male"


def test_every_provider_makes_a_clone(api, speaker_files):
    material = api.materials.upload(speaker_files["low_slow_male"], progress=False)
    made = {
        p: api.clones.create(material, provider=p, text=TEXT)
        for p in ("V1", "V2", "V3", "V4", "V5")
    }
    listed = {v.voice_id: v.provider for v in api.voices.clones()}
    assert {listed[c.voice_id] for c in made.values()} == {"V1", "V2", "V3", "V4", "V5"}


def test_bad_input_is_refused_before_any_request(tmp_path):
    offline = dubkit.Client("sk_test_never_sent", "http://127.0.0.1:9")  # nothing listens
    (tmp_path / "notes.txt").write_text("not audio at all\n")
    cases = [
        (lambda: offline.clones.create("https://example.com/a.wav", provider="V9"), "provider"),
        (lambda: offline.clones.create(None), "refAudio"),
        (lambda: offline.clones.create(""), "refAudio"),
        (lambda: offline.clones.create(tmp_path / "missing.wav"), "refAudio"),
        (lambda: offline.clones.create(tmp_path / "notes.txt"), "refAudio"),
        (lambda: offline.clones.create_async(42), "refAudio"),
    ]
    for attempt, field in cases:
        with pytest.raises(dubkit.ValidationError) as caught:
            attempt()
        assert caught.value.field == field


@pytest.mark.sends_invalid_requests
def test_the_sandbox_refuses_bad_requests_with_the_field_named(api):
    with pytest.raises(dubkit.BadRequestError, match="refAudio: is required"):
        api.request("POST", "/task/clone-voice/create", json={"voiceName": "x"})
    with pytest.raises(dubkit.BadRequestError, match="provider"):
        api.request(
            "POST",
            "/task/clone-voice/create",
            json={"refAudio": "https://example.com/a.wav", "provider": "V9"},
        )
    with pytest.raises(dubkit.BadRequestError, match="refAudio: must be an https"):
        api.request("POST", "/task/clone-voice/create", json={"refAudio": "ftp://x/a.wav"})
    with pytest.raises(dubkit.BadRequestError, match="sampleLanguage"):
        api.request(
            "POST",
            "/task/clone-voice/create",
            json={"refAudio": "https://example.com/a.wav", "sampleLanguage": "xx-XX"},
        )


def test_unreachable_or_unusable_references_are_422_and_cost_nothing(
    api, sandbox, new_key, web, tmp_path
):
    folder, base = web
    (folder / "notes.txt").write_text("this is text, not audio\n")
    silence = tmp_path / "silence.wav"
    av.encode_audio(np.zeros(48000, np.float32), 16000, "wav", silence)
    quiet = api.materials.upload(silence, progress=False)
    credits = sandbox.credits(new_key)
    messages = []
    for source in ("http://127.0.0.1:9/ref.wav", f"{base}/missing.wav", f"{base}/notes.txt"):
        with pytest.raises(dubkit.UnprocessableError, match="could not get audio") as caught:
            api.clones.create(source)
        messages.append(caught.value.message)
    # A closed port, an HTTP error and a text file look alike: no map of the network.
    assert len(set(messages)) == 1 and messages[0].startswith("refAudio: ")
    with pytest.raises(dubkit.UnprocessableError, match="refAudio: .*not speech"):
        api.clones.create(quiet)
    after = sandbox.credits(new_key)
    assert after == credits and len(api.voices.clones()) == 0

    task = api.clones.create_async("http://127.0.0.1:9/ref.wav")
    with pytest.raises(dubkit.TaskFailedError, match="could not get audio"):
        task.wait(PATIENCE)


def test_a_clone_needs_credits(api, sandbox, new_key, speaker_files):
    sandbox.set_credits(CLONE_CREDITS - 1, api_key=new_key)
    with pytest.raises(dubkit.InsufficientCreditsError):
        api.clones.create("https://example.com/never-fetched.wav")
    assert len(api.voices.clones()) == 0


def test_a_local_file_works_as_timbre_reference_in_tts(api, speaker_files):
    speech = api.tts.create(
        [
            {
                "text": "Said in the timbre of a local file.",
                "timbre_ref_audio": speaker_files["high_fast_female"],
            }
        ]
    )
    assert speech[0].ok and heard(speech[0].uri).gender == "female"


def test_the_clone_panel_shows_a_b_players(api, speaker_files):
    panel = ClonePanel(api, text=TEXT).set(name="Panel voice")
    clone = panel.clone_from(speaker_files["low_slow_male"])
    shown = panel._repr_mimebundle_()["text/html"]
    assert "A: reference" in shown and "B: clone Panel voice" in shown
    assert shown.count("<audio controls preload='none'") == 2
    assert not plays_by_itself(shown)
    assert panel.result.text == TEXT and heard(panel.result.clone_uri).gender == "male"
    again = api.clones.ab(clone, "A different sentence.")
    assert "A different sentence." in again._repr_html_()


def test_the_clone_panel_says_what_is_missing(api):
    panel = ClonePanel(api)
    use(panel, "clone", clone_name="Mine")  # Clone pressed with no recording picked
    assert "Pick a recording first" in panel.status and panel.clone is None
    assert "Pick a recording first" in panel.value
