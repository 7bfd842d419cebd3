"""Strict contract mode, and the document served by the sandbox."""

from __future__ import annotations

import json

import pytest
import requests

import dubkit
from dubkit import contract
from dubkit import start_sandbox as start


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
