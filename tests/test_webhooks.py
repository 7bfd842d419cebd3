"""verify() and parse_event(): the pieces a receiver in any web framework uses, with signatures
checked against known answers from an independent tool."""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest
from _http import webhook_catcher
from _waiting import PATIENCE

import dubkit
from dubkit.schema import CloneResult, MediaTranslationResult, TranslateResult, TTSResult
from dubkit.webhooks import (
    CloneEvent,
    MediaTranslationEvent,
    TranslateEvent,
    TTSEvent,
    WebhookEvent,
    parse_event,
    sign,
    verify,
)

VECTORS = [  # (secret, X-Timestamp, raw body, X-Signature from openssl)
    (
        "whsec_test_secret",
        "1700000000000",
        b'{"code":200,"event":"openapi-tts","data":{"taskId":"t1"}}',
        "daeb9a1e9d9728a0f84835ed8b36635f05114dc17c98c65c0604441a6ba923fc",
    ),
    (
        "whsec_0123456789abcdef0123456789abcdef0123456789abcdef",
        "1732300000123",
        b'{"code":200,"version":"v1","event":"openapi-translate","pipelineKey":'
        b'"9f1c0d6a5b3e4a7c8d2e1f0a9b8c7d6e","message":"","data":{"taskId":"a1b2","items":'
        b'[{"text":"Bonjour le monde"}]}}',
        "25194d1dd60fd3158409ce3cdcffb34443f817840f9b21a39cad8b65a2300627",
    ),
    (
        "whsec_rotated",
        "0",
        b"{}",
        "f63d2eb166414a61d3ff7b51bafcd38141d5e35b692db5a034c191ceaa2ca7d9",
    ),
    (
        "whsec_ünïcode",
        "1732300000999",
        '{"data": {"items": [{"text": "Grüße, 世界"}]}, "code": 200}'.encode(),
        "eca03da3797425e82d000dd4d6d0d90e5279badd31e4c217125d485d931dddb9",
    ),
    (
        "whsec_pretty",
        "1732300001000",
        b'{\n  "code": 500,\n  "data": null\n}\n',
        "72462a7b6ea3a5c1b86087eef9bcb77734130375fe0ba0b258de06d60ed57a30",
    ),
]


SECRET = "whsec_test_" + "ab" * 16


OLD_SECRET = "whsec_old_" + "cd" * 16


def signed(body: bytes, secret: str = SECRET, *, at: float | None = None) -> tuple[str, str]:
    timestamp = str(int((time.time() if at is None else at) * 1000))
    return timestamp, sign(secret, timestamp, body)


def envelope(event: str, data: dict, **fields) -> bytes:
    return json.dumps(
        {
            "code": 200,
            "version": "v1",
            "event": event,
            "pipelineKey": "0123456789abcdef" * 2,
            "message": "",
            "data": data,
            **fields,
        }
    ).encode()


@pytest.mark.parametrize("secret, timestamp, body, expected", VECTORS)
def test_the_signer_gives_the_known_answer(secret, timestamp, body, expected):
    assert sign(secret, timestamp, body) == expected


@pytest.mark.parametrize("secret, timestamp, body, expected", VECTORS)
def test_verify_accepts_the_known_answer_and_nothing_near_it(secret, timestamp, body, expected):
    now = int(timestamp) / 1000
    verify(secret, timestamp, body, expected, now=now)
    for wrong in (expected.upper(), expected[:-1] + ("0" if expected[-1] != "0" else "1")):
        with pytest.raises(dubkit.WebhookVerificationError):
            verify(secret, timestamp, body, wrong, now=now)
    with pytest.raises(dubkit.WebhookVerificationError):
        verify(secret, timestamp, body + b" ", expected, now=now)


def test_a_live_sandbox_delivery_verifies_with_openssl(client, sandbox):
    """The sandbox's own delivery, checked by recomputing the HMAC with the openssl CLI."""
    openssl = shutil.which("openssl")
    assert openssl, "the openssl command is needed to check signatures independently"
    with webhook_catcher() as caught:
        sandbox.set_webhook(caught.url)
        client.translate.create_async(["Hello"], source="en-US", target="fr-FR")
        assert caught.arrived.wait(PATIENCE)
    headers, body = caught.deliveries[0]
    digest = (
        subprocess.run(
            [openssl, "dgst", "-sha256", "-hmac", sandbox.webhook_secret],
            input=headers["X-Timestamp"].encode() + body,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split()[-1]
    )
    assert headers["X-Signature"] == digest


def test_a_timestamp_301_seconds_in_the_future_is_refused_and_300_is_not():
    body = envelope("openapi-tts", {"taskId": "t"})
    now = time.time()
    timestamp, signature = signed(body, at=now + 301)
    with pytest.raises(dubkit.WebhookVerificationError) as info:
        verify(SECRET, timestamp, body, signature, now=now)
    assert info.value.reason == "stale"
    timestamp, signature = signed(body, at=now + 299.5)
    verify(SECRET, timestamp, body, signature, now=now)


@pytest.mark.parametrize("timestamp", ["", None])
def test_a_missing_header_names_the_headers(timestamp):
    body = envelope("openapi-tts", {"taskId": "t"})
    with pytest.raises(dubkit.WebhookVerificationError) as info:
        verify(SECRET, timestamp, body, "ab" * 32)
    assert info.value.reason == "missing-header" and "X-Timestamp" in str(info.value)
    with pytest.raises(dubkit.WebhookVerificationError) as info:
        verify(SECRET, str(int(time.time() * 1000)), body, None)
    assert info.value.reason == "missing-header"


@pytest.mark.parametrize("timestamp", ["soon", "-5", "1.7e12", " 1700000000000", "١٢٣"])
def test_a_timestamp_that_is_not_epoch_milliseconds_is_refused(timestamp):
    with pytest.raises(dubkit.WebhookVerificationError) as info:
        verify(SECRET, timestamp, b"{}", "ab" * 32)
    assert info.value.reason == "bad-timestamp"


@pytest.mark.parametrize("signature", ["zz" * 32, "ab" * 31, "ab" * 33, "é" * 64, "ab" * 32 + "\n"])
def test_a_signature_that_is_not_64_hex_characters_is_refused_without_crashing(signature):
    body = envelope("openapi-tts", {"taskId": "t"})
    timestamp, _ = signed(body)
    with pytest.raises(dubkit.WebhookVerificationError) as info:
        verify(SECRET, timestamp, body, signature)
    assert info.value.reason == "bad-signature" and "hex" in str(info.value)


def test_the_signature_is_compared_exactly_so_uppercase_hex_is_refused():
    body = envelope("openapi-tts", {"taskId": "t"})
    timestamp, signature = signed(body)
    with pytest.raises(dubkit.WebhookVerificationError):
        verify(SECRET, timestamp, body, signature.upper())


def test_the_wrong_secret_is_refused_and_the_secret_never_shows():
    body = envelope("openapi-tts", {"taskId": "t"})
    timestamp, signature = signed(body, secret="whsec_someone_else")
    with pytest.raises(dubkit.WebhookVerificationError) as info:
        verify(SECRET, timestamp, body, signature)
    assert info.value.reason == "bad-signature"
    assert SECRET not in str(info.value) and "whsec_someone_else" not in str(info.value)


def test_during_a_rotation_either_listed_secret_verifies_and_others_do_not():
    body = envelope("openapi-tts", {"taskId": "t"})
    for secret in (SECRET, OLD_SECRET):
        timestamp, signature = signed(body, secret=secret)
        verify([SECRET, OLD_SECRET], timestamp, body, signature)
    timestamp, signature = signed(body, secret="whsec_retired")
    with pytest.raises(dubkit.WebhookVerificationError):
        verify([SECRET, OLD_SECRET], timestamp, body, signature)


def test_parsed_json_instead_of_raw_bytes_is_a_programming_error():
    with pytest.raises(TypeError, match="raw request bytes"):
        verify(SECRET, "1", {"code": 200}, "ab" * 32)  # type: ignore[arg-type]


def test_each_event_parses_to_its_class_with_a_typed_result():
    tts = parse_event(
        envelope(
            "openapi-tts",
            {
                "taskId": "t1",
                "createdAt": "2024-01-01T00:00:00Z",
                "results": [{"uri": "https://x/a.m4a", "duration": 1.5}],
            },
        )
    )
    assert isinstance(tts, TTSEvent) and isinstance(tts.result, TTSResult)
    assert (tts.task_id, tts.task_type, tts.status) == ("t1", "tts", "finished")
    assert tts.result.results[0].duration == 1.5

    tr = parse_event(
        envelope(
            "openapi-translate",
            {"taskId": "t2", "items": [{"text": "Bonjour"}]},
            extraData={"dubkitIdempotencyKey": "k-1", "order": 7},
        )
    )
    assert isinstance(tr, TranslateEvent) and isinstance(tr.result, TranslateResult)
    assert tr.result.items[0].text == "Bonjour" and tr.task_type == "textTranslation"
    assert tr.idempotency_key == "k-1" and tr.extra_data["order"] == 7

    clone = parse_event(envelope("openapi-clone-voice", {"taskId": "t3", "voiceId": "cv_1"}))
    assert isinstance(clone, CloneEvent) and isinstance(clone.result, CloneResult)
    assert clone.result.voice_id == "cv_1" and clone.task_type == "cloneVoice"

    media = parse_event(
        envelope(
            "openapi-media-translation",
            {
                "taskId": "t4",
                "taskType": "vt",
                "status": "finished",
                "result": {"build": {"video": {"url": "https://x/v.mp4"}}},
            },
        )
    )
    assert isinstance(media, MediaTranslationEvent)
    assert (media.task_type, media.status) == ("vt", "finished")
    assert isinstance(media.result, MediaTranslationResult)
    assert media.result.build.video.url == "https://x/v.mp4"
    assert all(e.problem is None for e in (tts, tr, clone, media))


def test_a_failed_task_has_no_result_and_carries_the_error_as_tasks_detail_does():
    failed = parse_event(
        json.dumps(
            {
                "code": 402,
                "event": "openapi-translate",
                "pipelineKey": "p",
                "message": "Insufficient quota",
                "data": {"taskId": "t9"},
            }
        )
    )
    assert failed.status == "failed" and not failed.succeeded and failed.result is None
    assert failed.task_result() == {"errorCode": 402, "errorMessage": "Insufficient quota"}
    media = parse_event(
        envelope(
            "openapi-media-translation", {"taskId": "t5", "taskType": "at", "status": "failed"}
        )
    )
    assert media.status == "failed" and media.result is None


def test_an_unknown_event_parses_as_a_generic_event_that_says_why():
    event = parse_event(envelope("openapi-lipsync", {"taskId": "t6", "frames": 12}))
    assert type(event) is WebhookEvent and event.task_id == "t6"
    assert event.problem == "unknown event 'openapi-lipsync'"
    assert event.data["frames"] == 12


def test_data_that_does_not_fit_its_event_is_kept_with_the_field_named():
    event = parse_event(envelope("openapi-translate", {"taskId": "t7", "items": "not a list"}))
    assert type(event) is WebhookEvent and "items" in event.problem
    assert event.data["items"] == "not a list"


@pytest.mark.parametrize(
    "body, problem",
    [
        (b"not json at all", "is not JSON"),
        (b"\xff\xfe\x00garbage", "is not JSON"),
        (b"[" * 100_000, "is not JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'"a string"', "must be a JSON object"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_a_validation_error_on_body(body, problem):
    with pytest.raises(dubkit.ValidationError) as info:
        parse_event(body)
    assert info.value.field == "body" and problem in info.value.problem


def test_an_envelope_without_data_names_the_missing_field():
    with pytest.raises(dubkit.ValidationError) as info:
        parse_event(b'{"code": 200, "event": "openapi-tts"}')
    assert info.value.field == "data" and info.value.problem == "is required"


def test_data_of_another_product_under_an_event_is_parsed_with_a_problem_saying_so():
    translated = {"taskId": "t8", "items": [{"text": "Bonjour"}]}
    event = parse_event(envelope("openapi-tts", translated))
    assert event.task_id == "t8"
    assert event.problem == (
        "data has none of openapi-tts's fields, and items of openapi-translate's"
    ), event.problem
    assert parse_event(envelope("openapi-translate", translated)).problem is None
