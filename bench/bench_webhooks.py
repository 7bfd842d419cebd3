"""The webhook Receiver under load: time to 2xx at 200 deliveries/s, and duplicates under storms.

The receiver runs in its own process (as it would behind a tunnel or gunicorn), serving with
``receiver.serve()`` and a real SQLite store; this process plays the service.

1. Open loop at 200 deliveries/s for 10 s, every delivery distinct and freshly signed. Time to
   2xx is measured per request from the moment it is sent until its answer is read (a new TCP
   connection each time: the stdlib server speaks HTTP/1.0). Inside the receiver, the time of
   ``Receiver.handle`` (verify + parse + dedupe insert + enqueue) is measured too.
   Target: p99 time to 2xx <= 20 ms.
2. 300 deliveries, each sent 10 times at once (3000 requests, 24 in flight): every request must
   get 2xx and each event's handler must run exactly once. Target: 0 duplicate side effects.
"""

from __future__ import annotations

import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

from dubkit.webhooks import Receiver, sign

SECRET = "whsec_bench_" + "42" * 16
RATE, SECONDS = 200, 10
STORM_EVENTS, COPIES = 300, 10


def serve(store: str) -> None:
    """The receiver process: serve, count handler runs, report on request."""
    handle_times: list[float] = []

    class TimedReceiver(Receiver):
        def handle(self, headers, body):  # type: ignore[override]
            started = time.perf_counter()
            answer = super().handle(headers, body)
            handle_times.append(time.perf_counter() - started)
            return answer

    runs: Counter[str] = Counter()
    lock = threading.Lock()

    def side_effect(event) -> None:
        with lock:
            runs[event.pipeline_key] += 1

    receiver = TimedReceiver(SECRET, store=store)
    receiver.on("openapi-translate", side_effect)
    print(receiver.serve(), flush=True)
    for line in sys.stdin:
        receiver.wait_idle(60)
        if line.strip() == "report":
            print(json.dumps({"handle": handle_times, "runs": dict(runs)}), flush=True)
            handle_times.clear()
            runs.clear()
    receiver.stop()


def body_for(key: str) -> bytes:
    return json.dumps(
        {
            "code": 200,
            "version": "v1",
            "event": "openapi-translate",
            "pipelineKey": key,
            "message": "",
            "data": {"taskId": key, "items": [{"text": "bonjour"}]},
        },
        separators=(",", ":"),
    ).encode()


def deliver(host: str, port: int, body: bytes) -> tuple[int, float]:
    """POST one signed delivery; (status, seconds from send to answer read)."""
    timestamp = str(int(time.time() * 1000))
    headers = {
        "Content-Type": "application/json",
        "X-Timestamp": timestamp,
        "X-Signature": sign(SECRET, timestamp, body),
    }
    started = time.perf_counter()
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        connection.request("POST", "/", body=body, headers=headers)
        answer = connection.getresponse()
        answer.read()
        return answer.status, time.perf_counter() - started
    finally:
        connection.close()


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=1000, method="inclusive")[int(q * 10) - 1]


def main() -> None:
    tmp = tempfile.TemporaryDirectory(prefix="dubkit-bench-webhooks-")
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(Path(tmp.name) / "events.sqlite3")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = urlsplit(child.stdout.readline().strip())
        host, port = url.hostname, url.port

        def report() -> dict:
            child.stdin.write("report\n")
            child.stdin.flush()
            return json.loads(child.stdout.readline())

        with ThreadPoolExecutor(max_workers=32) as pool:
            list(pool.map(lambda i: deliver(host, port, body_for(f"warm-{i}")), range(200)))
            report()

            # 1. open loop at RATE deliveries per second
            start = time.perf_counter() + 0.2

            def paced(i: int) -> tuple[int, float]:
                time.sleep(max(0.0, start + i / RATE - time.perf_counter()))
                return deliver(host, port, body_for(f"rate-{i}"))

            results = list(pool.map(paced, range(RATE * SECONDS)))
            took = time.perf_counter() - start
            inside = report()["handle"]
            latencies = [seconds * 1000 for _, seconds in results]
            statuses = Counter(status for status, _ in results)
            print(
                f"{RATE * SECONDS} deliveries in {took:.1f} s "
                f"({RATE * SECONDS / took:.0f}/s offered {RATE}/s); answers {dict(statuses)}"
            )
            print(
                f"time to 2xx      p50 {pct(latencies, 50):6.2f} ms   p99 "
                f"{pct(latencies, 99):6.2f} ms   max {max(latencies):6.2f} ms   "
                f"(target p99 <= 20 ms)"
            )
            inside_ms = [s * 1000 for s in inside]
            print(
                f"inside handle()  p50 {pct(inside_ms, 50):6.2f} ms   p99 "
                f"{pct(inside_ms, 99):6.2f} ms   (verify + parse + dedupe insert + enqueue)"
            )

        # 2. every delivery COPIES times at once
        with ThreadPoolExecutor(max_workers=24) as pool:
            jobs = [f"storm-{i}" for i in range(STORM_EVENTS) for _ in range(COPIES)]
            statuses = Counter(
                s for s, _ in pool.map(lambda key: deliver(host, port, body_for(key)), jobs)
            )
        runs = report()["runs"]
        duplicates = sum(n - 1 for n in runs.values() if n > 1)
        missing = STORM_EVENTS - len(runs)
        print(
            f"{STORM_EVENTS} deliveries x {COPIES} concurrent copies: answers "
            f"{dict(statuses)}; handler runs {sum(runs.values())}; duplicate side effects "
            f"{duplicates}; events never handled {missing}   (target 0 and 0)"
        )
    finally:
        child.stdin.close()
        child.wait(timeout=60)
        tmp.cleanup()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2])
    else:
        main()
