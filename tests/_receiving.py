"""What the Receiver's tests share: a secret, an event body, a signed POST like the service's,
and the store file (``from _receiving import store`` makes it a fixture)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import requests

from dubkit.webhooks import sign

SECRET = "whsec_receiver_" + "5e" * 16


def envelope(
    task_id: str, *, event: str = "openapi-translate", key: str | None = None, code: int = 200
) -> bytes:
    return json.dumps(
        {
            "code": code,
            "version": "v1",
            "event": event,
            "pipelineKey": key or f"pk-{task_id}",
            "message": "",
            "data": {"taskId": task_id, "items": [{"text": "Bonjour"}]},
        },
        separators=(",", ":"),
    ).encode()


def post(
    url: str,
    body: bytes,
    *,
    secret: str = SECRET,
    timestamp: str | bytes | None = None,
    offset: float = 0.0,
    headers: dict | None = None,
    tamper: bool = False,
) -> requests.Response:
    """Sign ``body`` like the service (a given ``timestamp`` is sent and signed as it is;
    ``offset`` moves the clock); ``tamper`` changes one byte after signing."""
    stamp = timestamp if timestamp is not None else str(int((time.time() + offset) * 1000))
    text = stamp.decode("utf-8") if isinstance(stamp, bytes) else stamp
    sent = {
        "X-Timestamp": stamp,
        "X-Signature": sign(secret, text, body),
        "Content-Type": "application/json",
        **(headers or {}),
    }
    if tamper:
        changed = bytearray(body)
        changed[len(changed) // 2] ^= 1
        body = bytes(changed)
    return requests.post(
        url, data=body, headers={k: v for k, v in sent.items() if v is not None}, timeout=30
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "events.sqlite3"
