"""Signed webhook delivery from a persisted outbox, with retries and backoff.

When an async task ends, its envelope (interface §4.4) is written to the outbox in the same
process step that flips the status, so a restart never loses an event. A delivery thread POSTs
due rows with ``X-Timestamp`` (epoch ms) and ``X-Signature`` (hex HMAC-SHA256 of timestamp +
raw body, keyed by the key's webhook secret, signed anew on each attempt).

Retry schedule (*choice*; the service does not publish its own): a non-2xx answer or a timeout
(5 s) is retried after ``baseDelay * 2**(attempt-1)`` seconds, capped at ``maxDelay``, with ±10 %
jitter, for up to ``maxAttempts`` attempts (defaults 1 s, 60 s, 20: about 17 minutes in all);
then the row is marked ``dead``. A receiver that is down for a while gets every event once it
is back. Every attempt is logged (``GET /_sandbox/deliveries``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import random
import threading
import time
from typing import Any

import requests

from .backend import EVENTS, Backend

log = logging.getLogger("dubkit.sandbox")
DEFAULT_SCHEDULE = {"baseDelay": 1.0, "maxDelay": 60.0, "maxAttempts": 20}
RECEIVER_TIMEOUT = 5.0


def signature(secret: str, timestamp: str, body: bytes) -> str:
    return hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).hexdigest()


def envelope_for(task: dict[str, Any]) -> dict[str, Any]:
    """The webhook body for a task that just ended."""
    result = json.loads(task["result"]) if task["result"] else None
    failed = task["status"] == "failed"
    if task["task_type"] in ("vt", "at"):
        data = {"taskId": task["task_id"], "taskType": task["task_type"],
                "status": task["status"], "result": result}
    else:
        data = result if result is not None else {"taskId": task["task_id"],
                                                  "createdAt": task["created_at"]}
    body: dict[str, Any] = {
        "code": task["error_code"] or 500 if failed else 200,
        "version": "v1",
        "event": EVENTS[task["task_type"]],
        "pipelineKey": task["pipeline_key"],
        "message": task["message"] or "" if failed else "",
        "data": data,
    }
    if task["extra_data"]:
        body["extraData"] = json.loads(task["extra_data"])
    return body


class Deliverer:
    """Owns the outbox: enqueues ended async tasks and delivers them in a background thread."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.session = requests.Session()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sandbox-webhooks", daemon=True)
        backend.on_release.append(self.enqueue)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=RECEIVER_TIMEOUT + 1)

    def enqueue(self, task: dict[str, Any]) -> None:
        if not task["is_async"]:
            return
        body = json.dumps(envelope_for(task), separators=(",", ":")).encode()
        self.backend.store.execute(
            "INSERT INTO outbox (api_key, task_id, event, pipeline_key, body, next_at, state, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)",
            (task["api_key"], task["task_id"], EVENTS[task["task_type"]], task["pipeline_key"],
             body, time.time(), time.time()))
        self._wake.set()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                self._deliver_due()
            except Exception:
                log.exception("webhook delivery loop")
            self._wake.wait(0.2)
            self._wake.clear()

    def _deliver_due(self) -> None:
        due = self.backend.store.all(
            "SELECT o.*, k.webhook_url, k.webhook_secret FROM outbox o JOIN keys k "
            "ON k.api_key = o.api_key WHERE o.state = 'pending' AND o.next_at <= ? "
            "ORDER BY o.id LIMIT 50", (time.time(),))
        for row in due:
            if self._stopping.is_set():
                return
            if not row["webhook_url"]:
                continue   # held until the key gets a URL; nothing is lost
            self._attempt(dict(row))

    def _attempt(self, row: dict[str, Any]) -> None:
        schedule = self.backend.setting("delivery", DEFAULT_SCHEDULE)
        attempt = row["attempts"] + 1
        timestamp = str(int(time.time() * 1000))
        headers = {"Content-Type": "application/json", "X-Timestamp": timestamp,
                   "X-Signature": signature(row["webhook_secret"], timestamp, row["body"])}
        started = time.perf_counter()
        status, error = None, None
        try:
            answer = self.session.post(row["webhook_url"], data=row["body"], headers=headers,
                                       timeout=RECEIVER_TIMEOUT)
            status = answer.status_code
            if not 200 <= status < 300:
                error = f"receiver answered HTTP {status}"
        except requests.RequestException as exc:
            error = f"{type(exc).__name__}: {exc}"
        elapsed_ms = (time.perf_counter() - started) * 1000
        store = self.backend.store
        store.execute("INSERT INTO deliveries (outbox_id, attempt, at, url, status_code, error, "
                      "duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
                      (row["id"], attempt, time.time(), row["webhook_url"], status, error,
                       elapsed_ms))
        if error is None:
            store.execute("UPDATE outbox SET state = 'delivered', attempts = ?, delivered_at = ?,"
                          " last_error = NULL WHERE id = ?", (attempt, time.time(), row["id"]))
            return
        delay = min(schedule["maxDelay"], schedule["baseDelay"] * 2 ** (attempt - 1))
        delay *= random.uniform(0.9, 1.1)
        state = "dead" if attempt >= schedule["maxAttempts"] else "pending"
        store.execute("UPDATE outbox SET attempts = ?, next_at = ?, state = ?, last_error = ? "
                      "WHERE id = ?", (attempt, time.time() + delay, state, error, row["id"]))
