"""What the contract document found, each fixed and held by a test (issue 10's known defects).

Answers and webhooks are taken raw off the wire and checked with dubkit.contract, so they fail
on a ``null`` the document does not allow even where the client would tolerate it.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
import warnings

import pytest
import requests
from _http import local_http, webhook_catcher
from _storage_fixtures import api, storage_defaults  # noqa: F401  (fixtures)

import dubkit
from dubkit import contract, samples
from dubkit.webhooks import Receiver, sign

VOICE = "sv_s1_en_us_clear_f"
LANG = {"source": "en-US", "target": "fr-FR"}


def raw(sandbox, method: str, path: str, body=None, params=None):
    headers = {"Authorization": f"Bearer {sandbox.api_key}"}
    if method == "POST":
        headers["X-Idempotency-Key"] = uuid.uuid4().hex
    answer = requests.request(
        method,
        f"{sandbox.url}/openapi/v1{path}",
        json=body,
        params=params,
        headers=headers,
        timeout=60,
    )
    return answer, answer.json()


def assert_valid(operation: str, answer: requests.Response, payload: dict) -> None:
    problems = contract.check_answer(operation, answer.status_code, payload, answer.headers)
    assert not problems, problems


# ----------------------------------------------------------------- nulls the document forbids


def test_a_running_task_detail_has_no_null_result(client, sandbox):
    sandbox.set_timing("polls", 100)
    task = client.translate.create_async(["Hello"], source="en-US", target="fr-FR")
    answer, payload = raw(sandbox, "GET", "/tasks/detail", params={"taskId": task.task_id})
    assert payload["data"]["status"] == "running" and "result" not in payload["data"]
    assert_valid("tasks.detail", answer, payload)


def test_successful_lines_carry_no_null_error_and_failed_lines_no_null_audio(client, sandbox):
    answer, payload = raw(
        sandbox,
        "POST",
        "/task/translate/create",
        {"language": LANG, "segments": [{"text": "Hello"}, {"text": "42"}]},
    )
    assert "errorMessage" not in payload["data"]["items"][0]
    assert_valid("translate.create", answer, payload)
    answer, payload = raw(
        sandbox,
        "POST",
        "/task/tts/create",
        {
            "outputFormat": "wav",
            "data": [
                {"text": "Fine.", "voiceId": VOICE},
                {"text": "Too long for it.", "voiceId": VOICE, "duration": 0.2},
            ],
        },
    )
    good, bad = payload["data"]["results"]
    assert "errorMessage" not in good and bad["errorMessage"]
    assert "uri" not in bad and "duration" not in bad
    assert_valid("tts.create", answer, payload)


def test_a_clone_without_sample_text_has_no_null_content(api, sandbox, client):
    preview = client.voices.preset(VOICE).audio
    api.clones.create(preview, provider="V1")
    answer = requests.post(
        f"{sandbox.url}/openapi/v1/assets/voice/clone/list",
        json={},
        headers={"Authorization": f"Bearer {api.transport._secret}"},
        timeout=30,
    )
    payload = answer.json()
    assert payload["data"]["records"] and "content" not in payload["data"]["records"][0]
    assert_valid("voices.clones", answer, payload)


def test_translate_and_tts_webhooks_carry_no_nulls(client, sandbox):
    with webhook_catcher() as caught:
        sandbox.set_webhook(caught.url)
        client.translate.create_async(["Hello", "42"], source="en-US", target="fr-FR")
        assert caught.arrived.wait(30)
        caught.arrived.clear()
        client.tts.create_async(
            ["Fine.", {"text": "Too long for it.", "duration": 0.2}],
            voice=VOICE,
            output_format="wav",
        )
        assert caught.arrived.wait(60)
    for headers, body in caught.deliveries:
        envelope = json.loads(body)
        assert not contract.check_webhook(envelope["event"], envelope, headers), envelope
        assert "null" not in body.decode()


# ----------------------------------------------------------------- values the interface allows


def test_the_client_sends_values_the_interface_leaves_open(client):
    """currentPage 0, a fileHash that is not 32 hex, a selected voice without voiceId: the
    client passes them to the service, whose answer (typed) decides."""
    assert isinstance(client.call("tasks.list", {"currentPage": 0, "pageSize": 1}), dict)
    answer = client.call(
        "materials.gen_upload_url", {"fileHash": "not-an-md5", "fileName": "clip.wav"}
    )
    assert answer["uploadUrl"]
    with pytest.raises(dubkit.NotFoundError):
        client.call(
            "media.create_async",
            {
                "taskType": "vt",
                "source": {"materialId": "mat_missing"},
                "language": {"target": "fr-FR"},
                "options": {"voiceClone": {}, "voiceSpeakers": {"selectedVoicesList": [{}]}},
            },
        )


def test_an_unknown_id_shaped_like_a_sandbox_preset_is_looked_up_not_guessed(client):
    with pytest.raises(dubkit.ValidationError) as err:
        client.tts.create(["hi"], voice="sv_s1_zz_nobody_f")
    assert err.value.field == "data[0].voiceId"


def test_a_string_is_one_segment_or_line(client):
    assert len(client.translate.create("Hello world", source="en-US", target="fr-FR")) == 1
    assert (
        len(client.translate.batch("Hello world", source="en-US", target="fr-FR", progress=False))
        == 1
    )
    task = client.translate.create_async("Hello world", source="en-US", target="fr-FR")
    assert len(task.wait(60).result) == 1
    assert len(client.tts.create("Hello world", voice=VOICE, output_format="wav")) == 1
    assert len(client.tts.batch("Hello world", voice=VOICE, progress=False)) == 1


# ----------------------------------------------------------------- the receiver and waiting

SECRET = "whsec_contract_" + "ab" * 16


def _post(url: str, envelope: dict) -> requests.Response:
    body = json.dumps(envelope).encode()
    stamp = str(int(time.time() * 1000))
    return requests.post(
        url,
        data=body,
        timeout=30,
        headers={
            "X-Timestamp": stamp,
            "X-Signature": sign(SECRET, stamp, body),
            "Content-Type": "application/json",
        },
    )


@pytest.mark.parametrize(
    "event, data",
    [
        ("openapi-translate", None),
        ("openapi-tts", {}),
        ("openapi-clone-voice", None),
        ("openapi-media-translation", {"taskId": "t-media", "taskType": "vt", "status": "failed"}),
        ("openapi-media-translation", None),
    ],
)
def test_a_failed_callback_is_accepted_and_handled_as_a_typed_failure(tmp_path, event, data):
    receiver = Receiver(SECRET, store=tmp_path / "events.sqlite3", retry_delay=0.01)
    seen: list = []
    handled = threading.Event()
    receiver.on(event, lambda e: (seen.append(e), handled.set()))
    url = receiver.serve()
    try:
        answer = _post(
            url,
            {
                "code": 500,
                "event": event,
                "pipelineKey": uuid.uuid4().hex,
                "message": "engine failed",
                "data": data,
            },
        )
        assert answer.status_code == 200, answer.text
        assert handled.wait(10)
    finally:
        receiver.stop()
    (got,) = seen
    assert type(got) is dubkit.webhooks.EVENT_TYPES[event] and got.problem is None
    assert got.status == "failed" and got.result is None


def _service_saying(status: str):
    """A stand-in service whose tasks/detail reports ``status`` for every task."""

    def respond(method, headers, body):
        data = {
            "taskId": "t1",
            "taskType": "textTranslation",
            "status": status,
            "result": {"items": [{"text": "Bonjour"}]},
        }
        return (
            200,
            {"Content-Type": "application/json"},
            json.dumps({"code": 200, "message": "", "data": data}).encode(),
        )

    return local_http(respond)


def test_wait_treats_complete_as_finished():
    with _service_saying("complete") as url:
        with dubkit.Client("sk_test_" + "0" * 24, url) as client:
            task = client.tasks.get("t1", fetch=False).wait(timeout=5)
    assert task.done and task.status == "finished"
    assert task.result.texts == ["Bonjour"]


def test_wait_keeps_polling_an_unknown_status_and_warns_once():
    with _service_saying("queued") as url:
        with dubkit.Client("sk_test_" + "0" * 24, url) as client:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with pytest.raises(dubkit.TaskTimeoutError, match="'queued'"):
                    client.tasks.get("t1", fetch=False).wait(timeout=1, poll_interval=0.05)
    assert not client.tasks.get("t1", fetch=False).done
    assert [str(w.message) for w in caught if "queued" in str(w.message)] == [
        "the service reported task status 'queued', which dubkit does not know; treating it "
        "as not yet final"
    ]


# ----------------------------------------------------------------- uploads


def test_a_large_upload_opens_no_session_it_does_not_use(api, sandbox, tmp_path):
    path = samples.noise_wav(tmp_path / "long.wav", 3 * 2**20)
    material = api.materials.upload(
        path, progress=False, multipart_threshold=2**20, state_dir=tmp_path / "state"
    )
    sessions = sandbox.admin("GET", f"/uploads?apiKey={api.transport._secret}")["sessions"]
    assert [(s["kind"], s["state"]) for s in sessions] == [("multipart", "completed")]
    again = api.materials.upload(
        path, progress=False, multipart_threshold=2**20, state_dir=tmp_path / "state"
    )
    assert again.material_id == material.material_id
    assert len(sandbox.admin("GET", f"/uploads?apiKey={api.transport._secret}")["sessions"]) == 1
