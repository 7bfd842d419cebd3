"""Dubbing (the service's media translation) end to end over real HTTP: dubs of real clips,
options, voices, charges, bad requests refused before anything is spent."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import requests
from _frames import frame
from _waiting import PATIENCE
from test_pipeline import NARRATION, SCRIPT, SENTENCES

import dubkit
from dubkit import samples
from dubkit.errors import (
    BadRequestError,
    InsufficientCreditsError,
    NotFoundError,
    PayloadTooLargeError,
    TaskFailedError,
    UnprocessableError,
    ValidationError,
)
from dubkit.frontends import current, media, routes
from dubkit.media import av, subtitles
from dubkit.schema.prices import dub_quote
from dubkit.webhooks import Receiver

PATH = "/task/media-translation/create-async"


@pytest.fixture(scope="module")
def account(sandbox, tmp_path_factory):
    """A key of its own with a narrated video (two voices, soft subtitles) and its audio."""
    key = sandbox.create_key("media")
    client = dubkit.Client(key, sandbox.url, sandbox=sandbox)
    folder = tmp_path_factory.mktemp("media")
    video = folder / "talk.mp4"
    cues = av.extract_subtitles(samples.narrated_clip(video, SCRIPT, **NARRATION))
    audio = folder / "talk.m4a"
    av.extract_audio(video, audio)
    materials = {
        "video": client.materials.upload(video, progress=False),
        "audio": client.materials.upload(audio, progress=False),
    }
    yield key, client, materials, cues, folder
    client.close()


def credits(sandbox, key: str) -> float:
    return sandbox.credits(key)


def fetch(url: str, folder: Path, name: str) -> Path:
    path = folder / name
    answer = requests.get(url, timeout=60)
    answer.raise_for_status()
    path.write_bytes(answer.content)
    return path


def wire(material_id: str, **changes) -> dict:
    body = {
        "taskType": "vt",
        "source": {"materialId": material_id},
        "language": {"source": "en-US", "target": "fr-FR"},
        "options": {"voiceClone": {}},
    }
    body.update(changes)
    return body


def wait_for(check, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return value


def test_a_video_comes_back_dubbed_with_subtitles_a_script_and_a_webhook(
    sandbox, account, tmp_path
):
    key, client, materials, cues, _ = account
    secret = sandbox.set_webhook(None, api_key=key)["secret"]
    receiver = Receiver(secret, store=tmp_path / "events.sqlite3", retry_delay=0.01)
    events: list = []
    receiver.on("openapi-media-translation", events.append)
    sandbox.set_webhook(receiver.serve(), api_key=key)
    before = credits(sandbox, key)
    try:
        task = client.dubbing.create(
            materials["video"], target="fr-FR", source="en-US", translate_prompt="Keep it formal."
        )
        assert (task.task_type, task.status) == ("vt", "running")
        dub = task.wait(PATIENCE).result
        assert wait_for(lambda: events)
    finally:
        receiver.stop()
        sandbox.set_webhook(None, api_key=key)

    assert before - credits(sandbox, key) == 60  # a clip under a minute: one minute
    frame = dub.script.to_frame()
    assert list(frame.source_text) == list(SENTENCES)
    assert all(frame.translation.str.len() > 0) and not any(frame.translation == frame.source_text)
    assert list(frame.speaker) == ["Speaker 1", "Speaker 2", "Speaker 1"]  # f2, m3, f2
    for line, cue in zip(dub.script, cues):  # each dub starts where its source line started
        assert abs(line.start - cue.start) < 0.15
    assert dub.raw["translatedScripts"]["prompt"] == "Keep it formal."

    video = av.probe(fetch(dub.video.url, tmp_path, "dubbed.mp4"))
    source = av.probe(fetch(dub.original.url, tmp_path, "source.mp4"))
    assert video.has_video and video.has_audio and video.subtitle_streams == 1
    assert video.duration == pytest.approx(source.duration, abs=0.1)
    assert (dub.video.width, dub.video.height) == (640, 360)
    cues_out = subtitles.parse_srt(dub.subtitles.text("srt"))
    assert [c.text for c in cues_out] == list(frame.translation)
    assert subtitles.parse_vtt(dub.subtitles.text("vtt")) == cues_out
    for line in dub.script:  # every line's dub plays on its own, as long as it says it is
        samples, rate = line.audio()
        assert len(samples) / rate * 1000 == pytest.approx(line.duration_ms, abs=2)
    page = dub._repr_html_()
    # Each line's dub is embedded; the video is keyed for the live channel, its address never
    # written into the page (a saved copy names no machine), and routed where this front end
    # reaches it.
    assert all(
        part in page
        for part in ("original", "dubbed (fr-FR)", "subtitles .srt", "data:audio/", media.LIVE_NOTE)
    )
    assert "127.0.0.1" not in page and "/proxy/" not in page
    keyed = {media.lookup(key).url: key for key in media.keys_in(page)}
    video = media.lookup(keyed[dub.video.url])
    assert routes.route(video, current())["src"] == dub.video.url  # no server here: as it is
    assert "poster='data:image/jpeg;base64," in page

    [event] = events
    assert (event.task_id, event.status, event.task_type) == (task.task_id, "finished", "vt")
    assert event.result.build.video.url == dub.video.url
    assert event.idempotency_key == task.idempotency_key


def test_at_on_a_video_runs_as_vt_and_an_audio_material_gives_audio(account):
    _, client, materials, _, _ = account
    task = client.dubbing.create(materials["video"], target="es-ES", task_type="at")
    assert task.task_type == "vt" and client.tasks.get(task.task_id).task_type == "vt"
    dub = client.dubbing.create(materials["audio"], target="es-ES").wait(PATIENCE).result
    assert dub.video is None and dub.audio.url.endswith(".m4a")
    assert dub.audio.duration == pytest.approx(materials["audio"].duration / 1000, abs=0.15)
    assert list(dub.compressed) == ["mp3"] and len(dub.script) == len(SENTENCES)
    with pytest.raises(BadRequestError, match="taskType"):
        client.dubbing.create(materials["audio"], target="es-ES", task_type="vt")
    task.wait(PATIENCE)


def test_a_selected_preset_speaks_for_speaker_one_and_the_other_is_cloned(account):
    _, client, materials, _, _ = account
    preset = client.voices.presets(locale="de-DE", gender="female", limit=1)[0]
    dub = (
        client.dubbing.create(materials["video"], target="de-DE", voices=[preset.voice_id])
        .wait(PATIENCE)
        .result
    )
    voices = {(ln.speaker, ln.voice_id, ln.provider) for ln in dub.script}
    clone = next(v for v in voices if v[0] == "Speaker 2")
    assert ("Speaker 1", preset.voice_id, preset.provider) in voices
    assert clone[1].startswith("cv_") and clone[2] == "V5"  # non-English target: V5
    assert [m["voiceId"] for m in dub.voices] == [preset.voice_id, clone[1]]


def test_smart_matching_picks_presets_of_the_target_locale_and_the_speakers_gender(account):
    _, client, materials, _, _ = account
    dub = (
        client.dubbing.create(materials["video"], target="de-DE", timbre_method="smart")
        .wait(PATIENCE)
        .result
    )
    genders = {"Speaker 1": "female", "Speaker 2": "male"}  # f2 and m3 narrate
    for match in dub.voices:
        preset = client.voices.preset(match["voiceId"])
        assert preset.locale.startswith("de-") and preset.gender == genders[match["speaker"]]


@pytest.mark.parametrize("mode, distinct", [("sentence", 3), ("role", 2), ("mix", 2)])
def test_clone_mode_decides_how_many_voices_speak(account, mode, distinct):
    _, client, materials, _, _ = account
    dub = (
        client.dubbing.create(materials["video"], target="it-IT", clone_mode=mode)
        .wait(PATIENCE)
        .result
    )
    assert len({line.voice_id for line in dub.script}) == distinct
    assert all(line.voice_id.startswith("cv_") for line in dub.script)
    assert {t["cloneMode"] for t in dub.raw["tts"]["result"]} == {mode}


def test_a_forced_speaker_count_is_honoured(account):
    _, client, materials, _, _ = account
    dub = (
        client.dubbing.create(materials["video"], target="fr-FR", speaker_num=1)
        .wait(PATIENCE)
        .result
    )
    assert dub.raw["asrScripts"]["speakerNum"] == 1
    assert {line.speaker for line in dub.script} == {"Speaker 1"}


def test_burned_subtitles_are_drawn_into_the_picture(account, tmp_path):
    _, client, materials, _, _ = account
    plain = (
        client.dubbing.create(materials["video"], target="fr-FR", text={"soft": False})
        .wait(PATIENCE)
        .result
    )
    burned = (
        client.dubbing.create(
            materials["video"], target="fr-FR", text={"burn": True, "style": {"size": 30}}
        )
        .wait(PATIENCE)
        .result
    )
    line = burned.script[0]
    at = (line.start + line.end) / 2
    a = frame(fetch(plain.video.url, tmp_path, "plain.mp4"), at).mean(axis=2)
    b = frame(fetch(burned.video.url, tmp_path, "burned.mp4"), at).mean(axis=2)
    bottom, top = slice(270, 360), slice(0, 90)
    assert np.abs(a[bottom] - b[bottom]).mean() > 5 * np.abs(a[top] - b[top]).mean()
    assert av.probe(tmp_path / "plain.mp4").subtitle_streams == 0
    assert burned.raw["options"]["text"]["burn"] is True


def test_dynamic_length_lets_the_video_grow_instead_of_squeezing_speech(account, tmp_path):
    _, client, _, _, folder = account
    path = tmp_path / "short.mp4"  # short words, long placeholders: the dub needs more time
    samples.narrated_clip(path, ("Yes.", "No.", "Maybe."), subtitles=False)
    material = client.materials.upload(path, progress=False)
    fixed = client.dubbing.create(material, target="fr-FR").wait(PATIENCE).result
    grown = (
        client.dubbing.create(material, target="fr-FR", dynamic_video_length=True)
        .wait(PATIENCE)
        .result
    )
    source = material.duration / 1000
    assert fixed.video.duration == pytest.approx(source, abs=0.1)
    assert grown.video.duration > 1.3 * source
    assert grown.raw["alignment"]["timelineStretch"] > 1.3
    squeezed = [t["stretch"] for t in fixed.raw["tts"]["result"]]
    natural = [t["stretch"] for t in grown.raw["tts"]["result"]]
    assert min(squeezed) < 0.8 and min(natural) > min(squeezed)


def test_separation_mode_decides_what_remains_of_the_original_speech(account, tmp_path):
    _, client, materials, _, _ = account
    energy = {}
    for mode in ("remove", "keep"):
        dub = (
            client.dubbing.create(materials["video"], target="fr-FR", separation_mode=mode)
            .wait(PATIENCE)
            .result
        )
        samples, rate = av.decode_audio(fetch(dub.audio.url, tmp_path, f"{mode}.m4a"))
        inside = np.concatenate(
            [
                samples[round(ln["start"] * rate) : round(ln["end"] * rate)]
                for ln in dub.raw["asrScripts"]["asrResults"]
            ]
        )
        energy[mode] = float(np.mean(inside**2))
        assert dub.raw["audioSeparation"]["speechUrl"] and dub.raw["audioSeparation"]["mnsUrl"]
    assert energy["keep"] > 1.3 * energy["remove"]


def test_lip_sync_is_reported_unavailable_not_ignored(account):
    _, client, materials, _, _ = account
    dub = (
        client.dubbing.create(
            materials["video"], target="fr-FR", lipsync=True, text={"colour": "red"}
        )
        .wait(PATIENCE)
        .result
    )
    assert dub.raw["lipsync"] == {
        "requested": True,
        "applied": False,
        "reason": "lip sync is not available in the sandbox",
    }
    assert any("lip sync" in n for n in dub.notices)
    assert any("options.text.colour" in n for n in dub.notices)


def test_unfinished_and_deleted_materials_are_refused_by_client_and_sandbox(
    sandbox, account, tmp_path
):
    key, client, _, _, _ = account
    unfinished = client.call(
        "materials.gen_upload_url", {"fileHash": "0" * 32, "fileName": "never.mp4"}
    )["materialId"]
    with pytest.raises(ValidationError) as refused:
        client.dubbing.create(unfinished, target="fr-FR")
    assert refused.value.field == "source.materialId"
    with pytest.raises(NotFoundError, match="never completed"):
        client.call("media.create_async", wire(unfinished))

    path = tmp_path / "gone.mp4"
    samples.narrated_clip(path, ("Soon gone.",))
    gone = client.materials.upload(path, progress=False)
    client.materials.delete(gone)
    before = credits(sandbox, key)
    with pytest.raises(ValidationError, match="not a registered material"):
        client.dubbing.create(gone.material_id, target="fr-FR")
    with pytest.raises(NotFoundError, match="deleted"):
        client.call("media.create_async", wire(gone.material_id))
    assert credits(sandbox, key) == before


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"taskType": "xt"}, "taskType"),
        ({"language": {"source": "en-US"}}, "language.target"),
        ({"options": {"transcribe": {"mode": "fast"}}}, "options.voiceClone"),
        (
            {
                "options": {
                    "voiceClone": {},
                    "voiceSpeakers": {"selectedVoicesList": [{"voiceId": "sv_no_such_voice"}]},
                }
            },
            "options.voiceSpeakers.selectedVoicesList[0].voiceId",
        ),
        (
            {
                "options": {
                    "voiceClone": {},
                    "voiceSpeakers": {
                        "selectedVoicesList": [{"voiceId": "sv_s1_en_us_clear_f", "provider": "S3"}]
                    },
                }
            },
            "options.voiceSpeakers.selectedVoicesList[0].provider",
        ),
        ({"options": {"voiceClone": {}, "text": {"burn": "yes"}}}, "options.text.burn"),
        ({"language": {"target": "xx-XX"}}, "language.target"),
    ],
)
@pytest.mark.sends_invalid_requests
def test_bad_requests_are_400s_naming_the_field_and_cost_nothing(sandbox, account, changes, field):
    key, client, materials, _, _ = account
    before = credits(sandbox, key)
    tasks_before = len(client.tasks.list(task_type="vt"))
    with pytest.raises(BadRequestError, match=field.replace("[", r"\[").replace("]", r"\]")):
        client.request("POST", PATH, json=wire(materials["video"].material_id, **changes))
    assert credits(sandbox, key) == before
    assert len(client.tasks.list(task_type="vt")) == tasks_before


def test_the_client_refuses_a_bad_request_before_sending(account):
    _, client, materials, _, _ = account
    with pytest.raises(ValidationError) as missing:
        client.dubbing.create(materials["video"], target="")
    assert missing.value.field == "language.target"
    with pytest.raises(ValidationError) as bad_type:
        client.call("media.create_async", wire(materials["video"].material_id, taskType="xt"))
    assert bad_type.value.field == "taskType"
    with pytest.raises(ValidationError) as no_clone:
        client.call("media.create_async", wire(materials["video"].material_id, options={}))
    assert no_clone.value.field == "options.voiceClone"


def test_too_few_credits_is_402_before_any_task(sandbox, client_for, tmp_path):
    key = sandbox.create_key("poor", credits=3)
    poor = client_for(key)
    path = tmp_path / "long.mp4"
    samples.narrated_clip(path, SENTENCES)
    material = poor.materials.upload(path, progress=False)
    with pytest.raises(InsufficientCreditsError, match="needs"):
        poor.dubbing.create(material, target="fr-FR")
    assert credits(sandbox, key) == 3 and len(poor.tasks.list()) == 0


def test_a_task_whose_media_broke_ends_failed_with_a_message_and_a_refund(
    sandbox, account, tmp_path
):
    key, client, _, _, _ = account
    path = tmp_path / "doomed.mp4"
    samples.narrated_clip(path, ("This file will break.",))
    material = client.materials.upload(path, progress=False)
    # Storage loses the bytes after registration: the task must still end, and say why.
    stored = sandbox.data_dir / "files" / material.address_url.split("/files/", 1)[1]
    stored.write_bytes(b"not media any more")
    before = credits(sandbox, key)
    task = client.dubbing.create(material, target="fr-FR")
    with pytest.raises(TaskFailedError, match="probe failed"):
        task.wait(PATIENCE)
    assert task.status == "failed"
    assert credits(sandbox, key) == before


def test_bad_options_are_refused_before_a_local_file_is_uploaded(each_client, tmp_path):
    clip = samples.speech_recording(tmp_path / "talk.wav", "Nothing to upload yet.")
    before = len(each_client.materials.list())
    with pytest.raises(dubkit.ValidationError) as info:
        each_client.dubbing.create(clip, target="fr-FR", clone_mode="chorus")
    assert info.value.field == "options.voiceClone.mode"
    assert len(each_client.materials.list()) == before


def test_each_client_uploads_a_local_file_dubs_it_and_waits_for_the_task(each_client, tmp_path):
    clip = samples.narrated_clip(tmp_path / "talk.mp4", ["Good morning and welcome."])
    task = each_client.dubbing.create(clip, target="fr-FR", source="en-US")
    async_client = isinstance(each_client, dubkit.AsyncClient)
    assert isinstance(task, dubkit.AsyncTask if async_client else dubkit.Task)
    assert task.task_type == "vt" and task.idempotency_key
    dub = task.wait(PATIENCE).result
    assert [line.source_text for line in dub.script] == ["Good morning and welcome."]
    assert dub.video.url and dub.subtitles.srt
    assert task.task_id in [t.task_id for t in each_client.tasks.list()]


def test_the_async_client_s_budget_refuses_a_dub_before_its_file_is_uploaded(
    sandbox, new_key, event_loop_thread, tmp_path
):
    from _clients import async_client

    client = async_client(new_key, sandbox.url, event_loop_thread, sandbox=sandbox, budget=0.01)
    clip = samples.speech_recording(tmp_path / "talk.wav", "Too dear for this budget.")
    with pytest.raises(dubkit.BudgetExceededError):
        client.dubbing.create(clip, target="fr-FR")
    assert client.materials.list() == [] and client.tasks.list() == []
    event_loop_thread.run(client.unwrapped.aclose())


@pytest.mark.parametrize(
    ("locale", "script"),
    [
        ("fr-FR", ["Bonjour et bienvenue à tous.", "Aujourd'hui nous parlons des trains."]),
        ("de-DE", ["Guten Tag und herzlich willkommen.", "Heute sprechen wir über Züge."]),
    ],
)
def test_source_auto_is_detected_from_the_transcript(client, tmp_path, locale, script):
    clip = samples.narrated_clip(tmp_path / "talk.mp4", script, locale=locale)
    dub = client.dubbing.create(clip, target="en-US", source="auto").wait(PATIENCE).result
    assert dub.source_locale == locale
    assert dub.raw["asrScripts"]["language"]["source"] == locale
    assert any(f"detected {locale}" in notice for notice in dub.notices), dub.notices


def test_source_auto_without_transcript_text_says_so_and_stays_auto(client, tmp_path):
    clip = samples.narrated_clip(
        tmp_path / "talk.mp4", ["Hello and welcome."], locale="en-US", subtitles=False
    )
    dub = client.dubbing.create(clip, target="fr-FR", source="auto").wait(PATIENCE).result
    assert dub.source_locale == "auto"
    assert any("no text the sandbox can identify" in notice for notice in dub.notices)


# --------------------------------------------------------------------------- a dub from a URL


class _CountingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder and counts what it was asked (a refused URL must never be asked)."""

    asked: list[str] = []

    def do_GET(self):
        type(self).asked.append(self.path)
        super().do_GET()

    def log_message(self, *args):
        pass


@pytest.fixture
def web(tmp_path, sandbox):
    """A web server of its own on loopback, which the sandbox fetches from only while its
    fetch policy names it (``allow``); the policy and the upload limit are restored after."""
    folder = tmp_path / "web"
    folder.mkdir()
    handler = type("Handler", (_CountingHandler,), {"asked": []})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(folder))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}", handler.asked
    sandbox.admin("POST", "/fetch", schemes=["https"], allow=[])
    sandbox.admin("POST", "/limits", uploadLimit=10 * 1024**3)
    server.shutdown()


def test_a_dub_from_a_url_is_fetched_registered_and_says_where_it_came_from(
    sandbox, new_key, client_for, web, tmp_path
):
    folder, base, asked = web
    clip = samples.narrated_clip(folder / "talk.mp4", ["Good morning and welcome."])
    sandbox.admin("POST", "/fetch", schemes=["http", "https"], allow=["127.0.0.1"])
    client, before = client_for(new_key), credits(sandbox, new_key)
    quote = client.dubbing.quote(f"{base}/talk.mp4")
    assert quote.estimate and "known once the service fetched it" in quote.basis
    task = client.dubbing.create(f"{base}/talk.mp4", target="fr-FR", source="en-US")
    dub = task.wait(PATIENCE).result
    assert asked == ["/talk.mp4"]  # fetched once, by the sandbox
    assert [line.source_text for line in dub.script] == ["Good morning and welcome."]
    assert dub.raw["source"]["sourceUrl"] == f"{base}/talk.mp4"
    (material,) = client.materials.list()
    assert material.name == "talk.mp4" and material.material_id == dub.raw["source"]["materialId"]
    assert material.file_hash == hashlib.md5(clip.read_bytes()).hexdigest()
    assert before - credits(sandbox, new_key) == dub_quote(av.probe(clip).duration).credits


def test_each_url_a_dub_cannot_use_has_its_own_error_and_costs_nothing(
    sandbox, new_key, client_for, web
):
    folder, base, asked = web
    samples.narrated_clip(folder / "talk.mp4", ["A clip that is too big for the limit."])
    (folder / "notes.mp4").write_text("these are words, not media\n" * 100)
    client, before = client_for(new_key), credits(sandbox, new_key)

    def refused(url, error, words):
        with pytest.raises(error) as caught:
            client.dubbing.create(url, target="fr-FR")
        assert "source.sourceUrl" in caught.value.message and words in caught.value.message

    sandbox.admin("POST", "/fetch", schemes=["http", "https"], allow=[])
    refused(f"{base}/talk.mp4", BadRequestError, "loopback, private or other non-public")
    refused("https://10.255.255.1/talk.mp4", BadRequestError, "non-public address (10.255.255.1)")
    refused("https://[::1]:9/talk.mp4", BadRequestError, "non-public address (::1)")
    assert asked == []  # refused before any connection
    sandbox.admin("POST", "/fetch", schemes=["https"], allow=["127.0.0.1"])
    refused(f"{base}/talk.mp4", BadRequestError, "must be an https URL")
    sandbox.admin("POST", "/fetch", schemes=["http", "https"], allow=["127.0.0.1"])
    refused(f"{base}/missing.mp4", UnprocessableError, "HTTP 404")
    refused(f"{base}/notes.mp4", UnprocessableError, "not audio or video")
    sandbox.admin("POST", "/limits", uploadLimit=20_000)
    refused(f"{base}/talk.mp4", PayloadTooLargeError, "over 20000 bytes")
    with pytest.raises(ValidationError) as caught:  # the client's own check: not a web URL
        client.dubbing.create("ftp://example.com/talk.mp4", target="fr-FR")
    assert caught.value.field == "source.sourceUrl"
    assert credits(sandbox, new_key) == before
    assert client.tasks.list() == [] and client.materials.list() == []


def test_a_budget_reserves_the_longest_a_dub_from_a_url_may_be(sandbox, new_key, web):
    folder, base, _ = web
    samples.narrated_clip(folder / "talk.mp4", ["Priced before it is fetched."])
    sandbox.admin("POST", "/fetch", schemes=["http", "https"], allow=["127.0.0.1"])
    client = dubkit.Client(new_key, sandbox.url, sandbox=sandbox, budget=150)
    with pytest.raises(ValidationError) as caught:
        client.dubbing.create(f"{base}/talk.mp4", target="fr-FR")
    assert caught.value.field == "max_minutes" and client.tasks.list() == []
    with pytest.raises(dubkit.BudgetExceededError):
        client.dubbing.create(f"{base}/talk.mp4", target="fr-FR", max_minutes=3)
    task = client.dubbing.create(f"{base}/talk.mp4", target="fr-FR", max_minutes=2)
    assert client.budget.spent == 120  # two minutes reserved; the clip was charged one
    assert client.dubbing.quote(f"{base}/talk.mp4", max_minutes=2).credits == 120
    task.wait(PATIENCE)
    client.close()


# --------------------------------------------------------------------------- results to a bucket


def test_a_dub_s_results_are_delivered_to_the_bucket_and_it_says_where(
    sandbox, new_key, client_for, tmp_path
):
    clip = samples.narrated_clip(tmp_path / "talk.mp4", ["Delivered to a bucket."])
    client = client_for(new_key)
    output = {"bucket": "course-dubs", "prefix": "week1/fr", "secretAccessKey": "s3cr3t-value"}
    dub = client.dubbing.create(clip, target="fr-FR", source="en-US", output=output)
    dub = dub.wait(PATIENCE).result
    delivery = dub.delivery
    assert (delivery.bucket, delivery.prefix) == ("course-dubs", "week1/fr")
    assert delivery.location == f"bucket://course-dubs/week1/fr/{dub.task_id}/"
    assert delivery.unused_fields == ["secretAccessKey"]
    names = sorted(o["key"].rsplit("/", 1)[-1] for o in delivery.objects)
    assert names == sorted(
        [
            dub.video.url.rsplit("/", 1)[-1],
            dub.audio.url.rsplit("/", 1)[-1],
            dub.subtitles.srt.rsplit("/", 1)[-1],
            dub.subtitles.vtt.rsplit("/", 1)[-1],
        ]
    )
    for item in delivery.objects:  # the bucket's copy is the result's file, byte for byte
        assert item["key"].startswith(f"week1/fr/{dub.task_id}/")
        name = item["key"].rsplit("/", 1)[-1]
        original = next(
            u
            for u in (dub.video.url, dub.audio.url, dub.subtitles.srt, dub.subtitles.vtt)
            if u.endswith("/" + name)
        )
        assert (
            requests.get(item["url"], timeout=60).content
            == requests.get(original, timeout=60).content
        )
    # the sandbox's stand-in is a folder in its data dir, one per key
    folders = list(
        (sandbox.data_dir / "files" / "buckets").glob(f"*/course-dubs/week1/fr/{dub.task_id}")
    )
    assert len(folders) == 1 and sorted(p.name for p in folders[0].iterdir()) == names
    assert "s3cr3t-value" not in json.dumps(dub.raw) + str(delivery)
    assert "s3cr3t-value" not in repr(client.dubbing.draft(target="fr-FR", output=output))


@pytest.mark.parametrize(
    ("output", "field"),
    [
        ({"region": "eu-west-1"}, "output.bucket"),
        ({"bucket": "Not A Bucket!"}, "output.bucket"),
        ({"bucket": "fine-bucket", "prefix": "../escape"}, "output.prefix"),
    ],
)
def test_an_output_the_sandbox_cannot_deliver_to_is_refused_before_any_charge(
    sandbox, new_key, client_for, tmp_path, output, field
):
    clip = samples.narrated_clip(tmp_path / "talk.mp4", ["Nowhere to deliver."])
    client = client_for(new_key)
    material = client.materials.upload(clip, progress=False)
    before = credits(sandbox, new_key)
    with pytest.raises(BadRequestError) as caught:
        client.dubbing.create(material, target="fr-FR", output=output)
    assert field in caught.value.message and "eu-west-1" not in caught.value.message
    assert credits(sandbox, new_key) == before and client.tasks.list() == []
    with pytest.raises(ValidationError) as not_an_object:
        client.dubbing.create(material, target="fr-FR", output="s3://bucket")
    assert not_an_object.value.field == "output"
