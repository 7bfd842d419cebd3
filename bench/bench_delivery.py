"""Webhook delivery from the sandbox's outbox: duplicates under concurrent polls, and one key's
hanging receiver against another key's webhook.

    python bench/bench_delivery.py                          # this tree, N = 1,000 and 20,000
    python bench/bench_delivery.py --old /tmp/old-tree      # the same, old code beside new
    python bench/bench_delivery.py --sizes 1000 --old DIR

1. Duplicates: one key, one receiver (answers 200, counts pipelineKeys). N translate
   ``create_async`` from 4 threads while 3 threads poll ``tasks/detail`` for the newest tasks
   (each poll also releases every ready task, racing the ticker; recovery runs every 5 s). Once
   every row is delivered and one more recovery interval has passed: tasks with more than one
   outbox row, and pipelineKeys the receiver got more than once.
2. Hanging receiver: key A's receiver accepts each request and never answers; A has 20 tasks
   queued; then key B (a receiver that answers at once) gets one task. Default schedule
   (timeout 5 s). Figure: B's ``deliveredAt - createdAt`` of its outbox row.

Each code tree runs in its own process (PYTHONPATH=tree); nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent


def receiver(respond) -> tuple[str, ThreadingHTTPServer]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            respond(body)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}", server


def duplicates(n: int) -> dict:
    import dubkit
    from dubkit import start_sandbox as start
    from dubkit.sandbox.delivery import RECOVERY_INTERVAL

    got: Counter[str] = Counter()
    lock = threading.Lock()

    def count(body: bytes) -> None:
        with lock:
            got[json.loads(body)["pipelineKey"]] += 1

    url, server = receiver(count)
    box = start()
    try:
        key = box.create_key("bench")
        box.set_webhook(url, api_key=key)
        box.set_delivery(timeout=30)
        created: list[str] = []
        done = threading.Event()
        started = time.perf_counter()

        def poll() -> None:
            with dubkit.Client(key, box.url) as client:
                while not done.is_set():
                    for task_id in created[-30:]:
                        client.call("tasks.detail", {"taskId": task_id})

        def create(share: int) -> None:
            with dubkit.Client(key, box.url) as client:
                for i in range(share):
                    task = client.translate.create_async(
                        [f"line {i}"], source="en-US", target="fr-FR"
                    )
                    created.append(task.task_id)

        pollers = [threading.Thread(target=poll, daemon=True) for _ in range(3)]
        for thread in pollers:
            thread.start()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(create, [n // 4 + (i < n % 4) for i in range(4)]))
        created_in = time.perf_counter() - started
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            with lock:
                distinct = len(got)
            pending = box.deliveries(api_key=key, state="pending")["deliveries"]
            if distinct >= n and not pending:
                break
            time.sleep(0.5)
        done.set()
        time.sleep(RECOVERY_INTERVAL + 1)  # a late recovery pass would add rows now
        while box.deliveries(api_key=key, state="pending")["deliveries"]:
            time.sleep(0.5)
        rows = box.deliveries(api_key=key)["deliveries"]
        per_task = Counter(r["taskId"] for r in rows)
        with lock:
            received = dict(got)
        return {
            "n": n,
            "created_in_s": round(created_in, 1),
            "total_s": round(time.perf_counter() - started, 1),
            "tasks": len(per_task),
            "outbox_rows": len(rows),
            "tasks_with_extra_rows": sum(c > 1 for c in per_task.values()),
            "posts": sum(received.values()),
            "distinct_pipeline_keys": len(received),
            "pipeline_keys_received_twice_or_more": sum(c > 1 for c in received.values()),
        }
    finally:
        box.stop()
        server.shutdown()


def hanging(queued: int = 20) -> dict:
    import dubkit
    from dubkit import start_sandbox as start

    held = threading.Event()
    release = threading.Event()
    arrived = threading.Event()

    def hang(body: bytes) -> None:
        held.set()
        release.wait(600)

    url_a, server_a = receiver(hang)
    url_b, server_b = receiver(lambda body: arrived.set())
    box = start()
    try:
        key_a, key_b = box.create_key("a"), box.create_key("b")
        box.set_webhook(url_a, api_key=key_a)
        box.set_webhook(url_b, api_key=key_b)
        with dubkit.Client(key_a, box.url) as a, dubkit.Client(key_b, box.url) as b:
            for i in range(queued):
                a.translate.create_async([f"a {i}"], source="en-US", target="fr-FR")
            held.wait(60)
            task = b.translate.create_async(["b"], source="en-US", target="fr-FR")
        arrived.wait(900)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            [row] = box.deliveries(task_id=task.task_id)["deliveries"]
            if row["state"] == "delivered":
                break
            time.sleep(0.05)
        a_finished = sum(len(r["log"]) for r in box.deliveries(api_key=key_a)["deliveries"])
        return {
            "a_queued": queued,
            "timeout_s": box.admin("GET", "/delivery")["timeout"],
            "b_waited_s": round(row["deliveredAt"] - row["createdAt"], 3),
            "a_attempts_finished_before_b": a_finished,
        }
    finally:
        release.set()
        box.set_webhook(None, api_key=key_a)
        box.stop()
        server_a.shutdown()
        server_b.shutdown()


def run_in(tree: Path, part: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, __file__, "--part", part, *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=tree,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", type=Path, help="a checkout of the code before the change")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 20000])
    parser.add_argument("--part", help=argparse.SUPPRESS)
    parser.add_argument("arg", nargs="*", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.part:
        result = duplicates(int(options.arg[0])) if options.part == "duplicates" else hanging()
        print(json.dumps(result))
        return
    trees = [("new", HERE.parent)] + ([("old", options.old)] if options.old else [])
    for n in options.sizes:
        for name, tree in trees:
            print(
                f"duplicates  {name}: {json.dumps(run_in(tree, 'duplicates', str(n)))}", flush=True
            )
    for name, tree in trees:
        print(f"hanging     {name}: {json.dumps(run_in(tree, 'hanging'))}", flush=True)


if __name__ == "__main__":
    main()
