"""A handler slower than the receiver's lease still runs exactly once in its process."""

from __future__ import annotations

import json
import threading
import time
import uuid

from dubkit.webhooks import Receiver, sign

SECRET = "whsec_test_leases_0123456789"


def delivery(task_id: str) -> tuple[dict[str, str], bytes]:
    body = json.dumps(
        {
            "code": 200,
            "event": "openapi-translate",
            "pipelineKey": uuid.uuid4().hex,
            "data": {"taskId": task_id, "items": []},
        }
    ).encode()
    stamp = str(int(time.time() * 1000))
    return {"X-Timestamp": stamp, "X-Signature": sign(SECRET, stamp, body)}, body


def test_a_handler_outlasting_its_lease_is_not_run_twice(tmp_path):
    runs: list[str] = []
    lock = threading.Lock()
    receiver = Receiver(SECRET, store=tmp_path / "events.sqlite3", workers=2, lease=1.0)

    @receiver.on("openapi-translate")
    def slow(event):
        with lock:
            runs.append(event.task_id)
        time.sleep(3)  # three leases long: the sweeper runs several times meanwhile

    try:
        headers, body = delivery("a")  # one delivery, and a second worker left idle
        assert receiver.handle(headers, body).status == 200
        assert receiver.wait_idle(timeout=20)
    finally:
        receiver.stop()
    assert runs == ["a"]
