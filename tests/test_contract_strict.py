"""Strict contract mode: the sandbox checks every answer and webhook it sends against the
contract document, and what it sends has no ``null`` the document forbids.

Answers and webhooks are taken raw off the wire and checked with dubkit.contract, so they fail
on a ``null`` the document does not allow even where the client would tolerate it."""

from __future__ import annotations

import json
import uuid

import pytest
import requests
from _http import webhook_catcher
from _storage_fixtures import api, storage_defaults  # noqa: F401  (fixtures)
from _waiting import PATIENCE

import dubkit
from dubkit import contract
from dubkit import start_sandbox as start

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
        assert caught.arrived.wait(PATIENCE)
        caught.arrived.clear()
        client.tts.create_async(
            ["Fine.", {"text": "Too long for it.", "duration": 0.2}],
            voice=VOICE,
            output_format="wav",
        )
        assert caught.arrived.wait(PATIENCE)
    for headers, body in caught.deliveries:
        envelope = json.loads(body)
        assert not contract.check_webhook(envelope["event"], envelope, headers), envelope
        assert "null" not in body.decode()


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


def test_the_sandbox_serves_the_contract_document(sandbox):
    served = requests.get(f"{sandbox.url}/_sandbox/openapi.json", timeout=10).json()
    assert served["openapi"] == "3.1.0" and served["servers"] == [{"url": sandbox.url}]
    assert served["paths"] == contract.document()["paths"]
    assert served["webhooks"] == contract.document()["webhooks"]


@pytest.mark.parametrize("strict", [True, False])
def test_a_request_the_document_forbids_is_refused_and_in_strict_mode_recorded(
    tmp_path, monkeypatch, strict
):
    log = tmp_path / "mismatches.jsonl"
    monkeypatch.setenv("DUBKIT_CONTRACT_LOG", str(log))
    box = start(strict=strict)
    try:
        with dubkit.Client(box.api_key, box.url) as client:
            with pytest.raises(
                dubkit.BadRequestError, match=r"data\[0\]\.text: expected string, got integer"
            ):
                client.request(
                    "POST",
                    "/task/tts/create",
                    json={"data": [{"text": 5, "voiceId": "sv_s1_en_us_clear_f"}]},
                )
        recorded = box.contract_mismatches()
    finally:
        box.stop()
    if not strict:
        assert recorded == [] and not log.exists()
        return
    (entry,) = recorded
    assert (entry["operation"], entry["direction"], entry["path"]) == (
        "tts.create",
        "request",
        "data[0].text",
    )
    assert [json.loads(line) for line in log.read_text().splitlines()] == [entry]
