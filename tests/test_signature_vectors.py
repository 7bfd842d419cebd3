"""Known answers for X-Signature, computed by an independent tool, not by dubkit.

Each vector was made with OpenSSL 3.0 on the command line:

    printf '%s' "<X-Timestamp><raw body>" | openssl dgst -sha256 -hmac "<secret>"

(the fifth body has real newlines, written with ``printf '...\\n'``). They hold the signer the
sandbox signs its deliveries with and dubkit.webhooks.verify to the interface's recipe (§4.3):
HMAC-SHA256 keyed by the secret's UTF-8 bytes over the timestamp's bytes followed by the raw
body, lowercase hex. A live delivery from the sandbox is checked with openssl too.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from _http import webhook_catcher

import dubkit
from dubkit.webhooks import sign, verify

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
        assert caught.arrived.wait(30)
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
