"""Errors that hid a possible charge: async creates under lost answers, counted against the tasks
that really exist.

Every create carries its own idempotency key (``bench-<scenario>-<n>``), which dubkit also puts
in the task's ``extraData``; after each scenario the sandbox's own records say how many tasks
exist per key. An error *warned* when it says the call may have been committed
(``maybe_committed``, or ``IdempotencyConflictError(first_attempt_accepted=True)``, the one way
older dubkit said so). An error *hid a possible charge* when its task exists and it did not warn.

1. 502s after commit: 1000 creates, 30 % of the service's successful answers replaced by a 502.
2. 502s before and after: 1000 creates, a gateway that also fails 30 % of requests before they
   reach the service (so a retry refused 409 can be followed by a gateway 502).
3. Read timeouts: 300 creates, the service answers after 200 ms, the client waits 50 ms.

Target: 0 errors hiding a possible charge, 0 keys with more than one task.
Runs against whichever dubkit is importable (``PYTHONPATH=<other checkout>`` to compare).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from pathlib import Path

import dubkit
from dubkit import start_sandbox as start

RETRY = dubkit.RetryPolicy(max_retries=3, backoff=0.01, max_backoff=0.05, max_retry_after=0.01)
SCENARIOS = [
    ("502 after commit", 1000, {"error502_after": 0.3}, dubkit.Timeout()),
    ("502 before+after", 1000, {"error502_before": 0.3, "error502_after": 0.3}, dubkit.Timeout()),
    ("read timeouts", 300, {"latency_ms": 200}, dubkit.Timeout(connect=2, read=0.05)),
]


def warned(err: dubkit.DubkitError) -> bool:
    return bool(getattr(err, "maybe_committed", False)) or (
        isinstance(err, dubkit.IdempotencyConflictError) and err.first_attempt_accepted
    )


def tasks_per_key(db: Path, api_key: str) -> Counter:
    """How many tasks the sandbox holds for each dubkit idempotency key of ``api_key``."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT extra_data FROM tasks WHERE api_key = ?", (api_key,))
        return Counter(json.loads(r[0] or "{}").get("dubkitIdempotencyKey") for r in rows)


def settle(db: Path, api_key: str) -> Counter:
    """Wait for attempts still sleeping in the sandbox to land, then count."""
    last, stable_since = None, time.monotonic()
    while time.monotonic() - stable_since < 1.0:
        time.sleep(0.1)
        now = sum(tasks_per_key(db, api_key).values())
        if now != last:
            last, stable_since = now, time.monotonic()
    return tasks_per_key(db, api_key)


def run(
    box, db: Path, index: int, name: str, n: int, faults: dict, timeout: dubkit.Timeout
) -> dict:
    api_key = box.create_key(f"bench-{index}")
    errors: list[tuple[str, dubkit.DubkitError]] = []
    box.set_faults(paths=["/task/"], seed=index, **faults)
    started = time.perf_counter()
    with dubkit.Client(api_key, box.url, retry=RETRY, timeout=timeout) as client:
        for i in range(n):
            key = f"bench-{index}-{i}"
            try:
                client.translate.create_async(
                    ["x"], source="en-US", target="fr-FR", idempotency_key=key
                )
            except dubkit.DubkitError as err:
                errors.append((key, err))
    seconds = time.perf_counter() - started
    box.set_faults()
    tasks = settle(db, api_key)
    committed = [(k, e) for k, e in errors if tasks[k] >= 1]
    return {
        "name": name,
        "calls": n,
        "seconds": seconds,
        "errors": len(errors),
        "classes": Counter(type(e).__name__ for _, e in errors),
        "warned": sum(warned(e) for _, e in errors),
        "task exists": len(committed),
        "hid": sum(not warned(e) for _, e in committed),
        "warned, no task": sum(warned(e) and tasks[k] == 0 for k, e in errors),
        "duplicates": sum(1 for c in tasks.values() if c > 1),
        "tasks": sum(tasks.values()),
    }


def main() -> None:
    print(f"dubkit {dubkit.__version__} from {Path(dubkit.__file__).parent}")
    box = start()
    try:
        db = box.data_dir / "sandbox.sqlite3"
        results = [run(box, db, i, *s) for i, s in enumerate(SCENARIOS, 1)]
    finally:
        box.stop()
    head = (
        f"{'scenario':18} {'calls':>5} {'errors':>6} {'warned':>6} {'task exists':>11} "
        f"{'HID A CHARGE':>12} {'warned,no task':>14} {'dup keys':>8} {'tasks':>5} {'s':>5}"
    )
    print(head)
    for r in results:
        print(
            f"{r['name']:18} {r['calls']:5} {r['errors']:6} {r['warned']:6} "
            f"{r['task exists']:11} {r['hid']:12} {r['warned, no task']:14} "
            f"{r['duplicates']:8} {r['tasks']:5} {r['seconds']:5.1f}"
        )
    for r in results:
        print(f"  {r['name']}: errors by class {dict(r['classes'])}")
    hid = sum(r["hid"] for r in results)
    print(
        f"errors that hid a possible charge: {hid} of "
        f"{sum(r['task exists'] for r in results)} errors whose task exists "
        f"(target 0); keys with more than one task: "
        f"{sum(r['duplicates'] for r in results)} (target 0)"
    )


if __name__ == "__main__":
    main()
