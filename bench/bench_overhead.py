"""The client's overhead per call against raw ``requests.Session`` on the same sandbox endpoint.

Both sides make the same HTTP call to the same sandbox over keep-alive connections; dubkit adds
validation, an idempotency key (POST), envelope unwrapping and typed errors. Calls alternate
between the two so drift in the machine's load hits both equally. Target: median ratio <= 1.10.
"""

from __future__ import annotations

import statistics
import time
import uuid

import requests

import dubkit
from dubkit import start_sandbox as start

ROUNDS = 2000


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    box = start()
    try:
        client = dubkit.Client(box.api_key, box.url)
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {box.api_key}"
        task_id = (
            client.translate.create_async(["bench"], source="en-US", target="fr-FR")
            .wait(10)
            .task_id
        )
        detail_url = f"{box.url}/openapi/v1/tasks/detail"
        create_url = f"{box.url}/openapi/v1/task/translate/create"
        body = {"language": {"source": "en-US", "target": "fr-FR"}, "segments": [{"text": "hi"}]}

        def raw_get() -> None:
            answer = session.get(detail_url, params={"taskId": task_id}).json()
            assert answer["code"] == 200

        def raw_post() -> None:
            answer = session.post(
                create_url, json=body, headers={"X-Idempotency-Key": uuid.uuid4().hex}
            ).json()
            assert answer["code"] == 200

        cases = {
            "GET tasks/detail": (raw_get, lambda: client.call("tasks.detail", {"taskId": task_id})),
            "POST translate/create": (
                raw_post,
                lambda: client.translate.create(["hi"], source="en-US", target="fr-FR"),
            ),
        }
        print(f"{'endpoint':24} {'raw ms':>8} {'dubkit ms':>10} {'ratio':>7}")
        for name, (raw, ours) in cases.items():
            for _ in range(50):  # warm both connection pools
                raw(), ours()
            raw_times, our_times = [], []
            for _ in range(ROUNDS):
                raw_times.append(timed(raw))
                our_times.append(timed(ours))
            raw_ms = statistics.median(raw_times) * 1000
            our_ms = statistics.median(our_times) * 1000
            print(
                f"{name:24} {raw_ms:8.3f} {our_ms:10.3f} {our_ms / raw_ms:7.3f}  "
                f"(median of {ROUNDS}; target <= 1.10)"
            )
    finally:
        box.stop()


if __name__ == "__main__":
    main()
