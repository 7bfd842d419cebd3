"""Signed webhook delivery from a persisted outbox, with retries and backoff.

When an async task ends, its envelope (interface §4.4) is written to the outbox in the same
process step that flips the status, so a restart never loses an event. A delivery thread POSTs
due rows with ``X-Timestamp`` (epoch ms) and ``X-Signature`` (:func:`dubkit.webhooks.sign`:
hex HMAC-SHA256 of timestamp + raw body, keyed by the key's webhook secret), signed anew on each
attempt. The body bytes are fixed when the row is written, so every retry of one completion
carries the same ``pipelineKey`` and the same body.

Choices where the interface is silent (each *choice*):

* *choice* Retry schedule: a non-2xx answer or no answer within ``timeout`` (5 s) is retried
  after ``baseDelay * 2**(attempt-1)`` seconds, capped at ``maxDelay``, ±``jitter`` (10 %), up
  to ``maxAttempts`` attempts. Defaults 1 s, 60 s, 20 attempts: 1, 2, 4, 8, 16, 32, then 60 s
  each, about 14 minutes in all; then the row is ``dead``. ``POST /_sandbox/delivery`` changes
  any of these (tests and notebooks shorten them).
* *choice* A receiver that was down gets every event once it is back: rows stay ``pending``
  through their retries, and the first 2xx from a URL pulls that key's other pending rows
  forward, so a backlog is flushed at once rather than on each row's own backoff.
* *choice* Events go to the URL the key has when an attempt is made (a moved receiver gets its
  backlog). A key with no URL gets nothing: its rows are marked ``skipped``, never sent later.
* *choice* Rows are attempted oldest first; one failing row never holds back the others.
* *choice* Secret rotation (``POST /_sandbox/webhook {rotateSecret, overlapSeconds}``): deliveries
  are signed with the new secret. The header has room for one signature, so during the overlap a
  401/403 answer is retried at once signed with the previous secret: a receiver still on the old
  secret keeps working until the overlap ends; one that accepts both never sees the fallback.
* Every HTTP attempt is logged (``GET /_sandbox/deliveries``); ``POST
  /_sandbox/deliveries/redeliver`` sends a delivered event again (a replay, same body).
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from typing import Any

import requests

from .. import contract
from ..webhooks.signature import sign
from .backend import EVENTS, Backend, omit_nulls

RECOVERY_INTERVAL = 5.0   # seconds between checks for ended tasks that were never enqueued
log = logging.getLogger("dubkit.sandbox")
DEFAULT_SCHEDULE = {"baseDelay": 1.0, "maxDelay": 60.0, "maxAttempts": 20, "timeout": 5.0,
                    "jitter": 0.1}


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
        "data": omit_nulls(data),
    }
    if task["extra_data"]:
        body["extraData"] = json.loads(task["extra_data"])
    return body


def schedule(backend: Backend) -> dict[str, float]:
    """The retry schedule in force: defaults overlaid with what the admin set."""
    return {**DEFAULT_SCHEDULE, **backend.setting("delivery", {})}


def delay_after(attempt: int, plan: dict[str, float]) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based), jitter included."""
    delay = min(plan["maxDelay"], plan["baseDelay"] * 2 ** (attempt - 1))
    return delay * random.uniform(1 - plan["jitter"], 1 + plan["jitter"])


def redeliver(backend: Backend, outbox_ids: list[int]) -> int:
    """Send rows again from now with a fresh attempt budget (same body: a replay)."""
    return sum(backend.store.execute(
        "UPDATE outbox SET state = 'pending', attempts = 0, next_at = ?, last_error = NULL "
        "WHERE id = ?", (time.time(), outbox_id)).rowcount for outbox_id in outbox_ids)


class Deliverer:
    """Owns the outbox: enqueues ended async tasks and delivers them in a background thread."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.session = requests.Session()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sandbox-webhooks", daemon=True)
        backend.on_release.append(self.enqueue)
        columns = {r["name"] for r in backend.store.all("PRAGMA table_info(deliveries)")}
        if "secret" not in columns:   # which secret signed an attempt: 'current' or 'previous'
            backend.store.execute("ALTER TABLE deliveries ADD COLUMN secret TEXT")

    def start(self) -> None:
        self.recover()
        self._thread.start()

    def recover(self) -> int:
        """Enqueue ended async tasks that have no outbox row.

        The status flip and the outbox insert are two statements; a crash (or a failing
        listener) between them would lose the event. Checked at start and every few seconds,
        so the event still goes out, once.
        """
        missing = self.backend.store.all(
            "SELECT * FROM tasks t WHERE t.is_async = 1 AND t.status IN ('finished', 'failed') "
            "AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.task_id = t.task_id)")
        for row in missing:
            self.enqueue(dict(row))
        return len(missing)

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=schedule(self.backend)["timeout"] + 1)

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
        last_recovery = time.monotonic()
        while not self._stopping.is_set():
            try:
                if time.monotonic() - last_recovery > RECOVERY_INTERVAL:
                    self.recover()
                    last_recovery = time.monotonic()
                self._deliver_due()
            except Exception:
                log.exception("webhook delivery loop")
            self._wake.wait(0.2)
            self._wake.clear()

    def _deliver_due(self) -> None:
        store = self.backend.store
        store.execute("UPDATE outbox SET state = 'skipped', last_error = 'no webhook URL "
                      "configured for this key' WHERE state = 'pending' AND api_key IN "
                      "(SELECT api_key FROM keys WHERE webhook_url IS NULL OR webhook_url = '')")
        due = store.all(
            "SELECT o.*, k.webhook_url, k.webhook_secret, k.previous_secret, k.rotated_at "
            "FROM outbox o JOIN keys k ON k.api_key = o.api_key WHERE o.state = 'pending' AND "
            "o.next_at <= ? ORDER BY o.id LIMIT 50", (time.time(),))
        for row in due:
            if self._stopping.is_set():
                return
            self._attempt(dict(row))

    def _attempt(self, row: dict[str, Any]) -> None:
        plan = schedule(self.backend)
        attempt = row["attempts"] + 1
        status, error = self._post(row, attempt, row["webhook_secret"], "current", plan)
        overlap = row["previous_secret"] and (row["rotated_at"] or 0) > time.time()
        if status in (401, 403) and overlap:
            status, error = self._post(row, attempt, row["previous_secret"], "previous", plan)
        store = self.backend.store
        if error is None:
            now = time.time()
            store.execute("UPDATE outbox SET state = 'delivered', attempts = ?, delivered_at = ?,"
                          " last_error = NULL WHERE id = ?", (attempt, now, row["id"]))
            # The receiver is up: its key's backlog need not wait out each row's backoff.
            store.execute("UPDATE outbox SET next_at = ? WHERE api_key = ? AND "
                          "state = 'pending' AND next_at > ?", (now, row["api_key"], now))
            return
        state = "dead" if attempt >= plan["maxAttempts"] else "pending"
        store.execute("UPDATE outbox SET attempts = ?, next_at = ?, state = ?, last_error = ? "
                      "WHERE id = ?", (attempt, time.time() + delay_after(attempt, plan), state,
                                       error, row["id"]))

    def _post(self, row: dict[str, Any], attempt: int, secret: str, which: str,
              plan: dict[str, float]) -> tuple[int | None, str | None]:
        timestamp = str(int(time.time() * 1000))
        headers = {"Content-Type": "application/json", "X-Timestamp": timestamp,
                   "X-Signature": sign(secret, timestamp, row["body"])}
        if self.backend.contract_log.strict:
            self.backend.contract_log.record(
                f"webhook.{row['event']}", "webhook",
                contract.check_webhook(row["event"], json.loads(row["body"]), headers),
                taskId=row["task_id"])
        started = time.perf_counter()
        status, error = None, None
        try:
            answer = self.session.post(row["webhook_url"], data=row["body"], headers=headers,
                                       timeout=plan["timeout"])
            status = answer.status_code
            if not 200 <= status < 300:
                error = f"receiver answered HTTP {status}"
        except requests.RequestException as exc:
            error = f"{type(exc).__name__}: {exc}"
        self.backend.store.execute(
            "INSERT INTO deliveries (outbox_id, attempt, at, url, status_code, error, "
            "duration_ms, secret) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (row["id"], attempt, time.time(), row["webhook_url"], status, error,
             (time.perf_counter() - started) * 1000, which))
        return status, error
