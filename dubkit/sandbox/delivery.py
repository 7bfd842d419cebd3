"""Signed webhook delivery from a persisted outbox, with retries and backoff.

When an async task ends, its envelope (interface §4.4) is written to the outbox in the same
process step that flips the status, so a restart never loses an event. Delivery workers POST
due rows with ``X-Timestamp`` (epoch ms) and ``X-Signature`` (:func:`dubkit.webhooks.sign`:
hex HMAC-SHA256 of timestamp + raw body, keyed by the key's webhook secret), signed anew on each
attempt. The body bytes are fixed when the row is written, so every retry of one completion
carries the same ``pipelineKey`` and the same body.

The outbox holds at most one row per task (a unique index on ``task_id``; inserts that find one
do nothing), so the ticker, a poll and the recovery pass may all release or re-find one task and
it is still sent once. A database from before the index keeps its lowest row per task (the
others' attempt logs move to it). A redelivery reuses the row.

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
* *choice* Concurrency and fairness: ``WORKERS`` (6) delivery threads, at most ``PER_KEY`` (1)
  attempt of one key in flight, keys served in turn (the key served longest ago next), each
  key's rows oldest first (:mod:`dubkit.sandbox.delivery_pool`). A key whose receiver hangs
  holds one worker for up to ``timeout`` per attempt; other keys' events go out meanwhile. A
  failed row waits out its backoff without holding back its key's other rows.
* *choice* ``timeout`` bounds the whole attempt: connect, send, and the answer's status line
  and headers (each socket operation gets only the time left, so a receiver that trickles bytes
  cannot stretch it); at most 64 KiB of the answer body is read, then the connection is closed.
  Redirects are not followed: a 3xx is a failed attempt.
* *choice* Secret rotation (``POST /_sandbox/webhook {rotateSecret, overlapSeconds}``): deliveries
  are signed with the new secret. The header has room for one signature, so during the overlap a
  401/403 answer is retried at once signed with the previous secret: a receiver still on the old
  secret keeps working until the overlap ends; one that accepts both never sees the fallback.
* Every HTTP attempt is logged (``GET /_sandbox/deliveries``; a timeout's error starts with
  ``Timeout:``, a refused or broken connection's with ``ConnectionError:``); ``POST
  /_sandbox/deliveries/redeliver`` sends a delivered event again (a replay, same body).
"""

from __future__ import annotations

import http.client
import json
import logging
import random
import threading
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from .. import contract
from .._util.signing import sign
from ..schema import Product, WebhookEnvelope, Wire, product_of_task_type
from ..schema.sandbox_admin import DeliverySchedule
from . import extras
from .backend import Backend, now_iso
from .delivery_pool import Aborted, AttemptTimeout, FairPool, post
from .envelope import omit_nulls

RECOVERY_INTERVAL = 5.0  # seconds between checks for ended tasks that were never enqueued
REFILL_INTERVAL = 0.1  # seconds a key's queued rows may keep other keys' new rows unread
BATCH_PER_KEY = 64  # due rows of one key read into its queue at a time
log = logging.getLogger("dubkit.sandbox")


@dataclass(frozen=True)
class Schedule:
    """How deliveries are retried: seconds, attempts, and a jitter share (0..1)."""

    base_delay: float = 1.0
    max_delay: float = 60.0
    max_attempts: int = 20
    timeout: float = 5.0  # seconds an attempt may take
    jitter: float = 0.1

    def answer(self) -> dict[str, Any]:
        """As the admin API shows it."""
        return DeliverySchedule(**asdict(self)).model_dump(by_alias=True)


DEFAULT_SCHEDULE = Schedule()
# One row per task. Rows a race left behind (before this index) go first: the lowest id stays,
# and the attempts logged against the others move to it (they did reach the receiver).
ONE_ROW_PER_TASK = """
BEGIN IMMEDIATE;
DROP TABLE IF EXISTS temp.outbox_keep;
CREATE TEMP TABLE outbox_keep AS SELECT id, keep FROM (SELECT o.id AS id,
    (SELECT MIN(k.id) FROM outbox k WHERE k.task_id = o.task_id) AS keep FROM outbox o)
    WHERE id > keep;
UPDATE deliveries SET outbox_id = (SELECT keep FROM outbox_keep WHERE id = outbox_id)
    WHERE outbox_id IN (SELECT id FROM outbox_keep);
DELETE FROM outbox WHERE id IN (SELECT id FROM outbox_keep);
DROP TABLE outbox_keep;
CREATE UNIQUE INDEX IF NOT EXISTS outbox_one_per_task ON outbox (task_id);
COMMIT;
"""


def envelope_for(task: dict[str, Any]) -> dict[str, Any]:
    """The webhook body for a task that just ended."""
    result = json.loads(task["result"]) if task["result"] else None
    failed = task["status"] == "failed"
    product = _product(task)
    if product.event_data is not None:  # the data wraps the result with the task's own status
        data = _as_sent(
            product.event_data.model_validate(
                {"task_id": task["task_id"], "task_type": task["task_type"]}
                | {"status": task["status"]}
                | ({"result": result} if result is not None else {})
            )
        )
    elif result is not None:
        data = result
    else:  # a failed task: only its id and when it was made
        data = _as_sent(product.result(task_id=task["task_id"], created_at=task["created_at"]))
    return WebhookEnvelope(
        code=task["error_code"] or 500 if failed else 200,
        version="v1",
        event=product.event,
        pipeline_key=task["pipeline_key"],
        message=task["message"] or "" if failed else "",
        extra_data=json.loads(task["extra_data"]) if task["extra_data"] else None,
        data=omit_nulls(data),
    ).to_wire()


def _as_sent(model: Wire) -> dict[str, Any]:
    """Only what was given: a result passes through as it was stored, no defaults added."""
    return model.model_dump(by_alias=True, exclude_unset=True, exclude_none=True, mode="json")


def _product(task: dict[str, Any]) -> Product:
    product = product_of_task_type(task["task_type"])
    if product is None:  # the table makes every task type the sandbox stores
        raise RuntimeError(f"task {task['task_id']} has an unknown type {task['task_type']!r}")
    return product


def schedule(backend: Backend) -> Schedule:
    """The retry schedule in force: defaults overlaid with what the admin set."""
    return updated(DEFAULT_SCHEDULE, backend.setting("delivery", {}))


def updated(plan: Schedule, changes: dict[str, Any] | DeliverySchedule) -> Schedule:
    """``plan`` with the fields ``changes`` sets (an admin body, or the stored setting)."""
    given = DeliverySchedule.model_validate(changes).model_dump(exclude_none=True)
    return replace(plan, **given)


def delay_after(attempt: int, plan: Schedule) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based), jitter included."""
    delay = min(plan.max_delay, plan.base_delay * 2 ** (attempt - 1))
    return delay * random.uniform(1 - plan.jitter, 1 + plan.jitter)


def redeliver(backend: Backend, outbox_ids: list[int]) -> int:
    """Send rows again from now with a fresh attempt budget (same body: a replay)."""
    return sum(
        backend.db.execute(
            "UPDATE outbox SET state = 'pending', attempts = 0, next_at = ?, last_error = NULL "
            "WHERE id = ?",
            (time.time(), outbox_id),
        ).rowcount
        for outbox_id in outbox_ids
    )


class Deliverer:
    """Owns the outbox: enqueues ended async tasks; a scheduler thread hands due rows to a
    :class:`~dubkit.sandbox.delivery_pool.FairPool` of delivery workers."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sandbox-webhooks", daemon=True)
        self.pool = FairPool(self._attempt_row, self._wake.set)
        columns = {r["name"] for r in backend.db.all("PRAGMA table_info(deliveries)")}
        if "secret" not in columns:  # which secret signed an attempt: 'current' or 'previous'
            backend.db.execute("ALTER TABLE deliveries ADD COLUMN secret TEXT")
        backend.db.ensure(ONE_ROW_PER_TASK)
        backend.on_release.append(self.enqueue)

    def start(self) -> None:
        self.recover()
        self._thread.start()

    def recover(self, since: str = "") -> int:
        """Enqueue ended async tasks (updated at ``since`` or later) that have no outbox row.

        The status flip and the outbox insert are two statements; a crash (or a failing
        listener) between them would lose the event. Checked over every task at start, then
        every few seconds over the tasks that changed since the pass before the last one (an
        index on ``updated_at`` keeps that cost flat however many tasks are stored), so the
        event still goes out, once.
        """
        missing = self.backend.db.all(
            "SELECT * FROM tasks t WHERE t.is_async = 1 AND t.updated_at >= ? "
            "AND t.status IN ('finished', 'failed') "
            "AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.task_id = t.task_id)",
            (since,),
        )
        for row in missing:
            self.enqueue(dict(row))
        return len(missing)

    def stop(self) -> None:
        """Stop scheduling; attempts in flight are cut short and their rows stay as they were."""
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.pool.stop()

    def enqueue(self, task: dict[str, Any]) -> None:
        if not task["is_async"]:
            return
        event = _product(task).event
        body = json.dumps(extras.webhook(event, envelope_for(task)), separators=(",", ":"))
        added = self.backend.db.execute(
            "INSERT INTO outbox (api_key, task_id, event, pipeline_key, body, next_at, state, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?) "
            "ON CONFLICT (task_id) DO NOTHING",  # released twice, or found by recover(): once
            (
                task["api_key"],
                task["task_id"],
                event,
                task["pipeline_key"],
                body.encode(),
                time.time(),
                time.time(),
            ),
        ).rowcount
        if added:
            self._wake.set()

    def _loop(self) -> None:
        """Schedule: recover now and then, read due rows into the pool's queues, dispatch.

        Woken by each new row and each finished attempt. The outbox is read again when no
        queued row can start, or every ``REFILL_INTERVAL`` while a key's backlog is queued.
        """
        last_recovery = last_refill = time.monotonic()
        # a flip stamped just before one pass may commit just after its read: each pass
        # looks back to the start of the pass before the last one
        checked_from = previous_pass = now_iso()
        while not self._stopping.is_set():
            try:
                if time.monotonic() - last_recovery > RECOVERY_INTERVAL:
                    this_pass = now_iso()
                    self.recover(since=checked_from)
                    checked_from, previous_pass = previous_pass, this_pass
                    last_recovery = time.monotonic()
                if self.pool.free() and (
                    not self.pool.has_ready() or time.monotonic() - last_refill > REFILL_INTERVAL
                ):
                    self._refill()
                    last_refill = time.monotonic()
                self.pool.dispatch()
            except Exception:
                log.exception("webhook delivery loop")
            self._wake.wait(0.2)
            self._wake.clear()

    def _refill(self) -> None:
        store = self.backend.db
        store.execute(
            "UPDATE outbox SET state = 'skipped', last_error = 'no webhook URL "
            "configured for this key' WHERE state = 'pending' AND api_key IN "
            "(SELECT api_key FROM keys WHERE webhook_url IS NULL OR webhook_url = '')"
        )
        # A removed key's rows (dubkit class remove) have nowhere to go: never attempted.
        store.execute(
            "UPDATE outbox SET state = 'skipped', last_error = 'the key was removed' "
            "WHERE state = 'pending' AND api_key NOT IN (SELECT api_key FROM keys)"
        )
        running = self.pool.running()  # before reading: their rows may be read stale
        due = store.all(
            "SELECT id, api_key FROM (SELECT id, api_key, ROW_NUMBER() OVER (PARTITION BY "
            "api_key ORDER BY id) AS n FROM outbox WHERE state = 'pending' AND next_at <= ?) "
            "WHERE n <= ? ORDER BY id",
            (time.time(), BATCH_PER_KEY + self.pool.per_key),
        )
        self.pool.refill(((r["id"], r["api_key"]) for r in due), running)

    def _attempt_row(self, outbox_id: int) -> None:
        """A worker's job: the row as it is now (URL, secrets, state), then one attempt."""
        row = self.backend.db.one(
            "SELECT o.*, k.webhook_url, k.webhook_secret, k.previous_secret, k.rotated_at "
            "FROM outbox o JOIN keys k ON k.api_key = o.api_key WHERE o.id = ? AND "
            "o.state = 'pending'",
            (outbox_id,),
        )
        if row is None or self._stopping.is_set():
            return
        if not row["webhook_url"]:
            self.backend.db.execute(
                "UPDATE outbox SET state = 'skipped', last_error = 'no webhook URL configured "
                "for this key' WHERE id = ? AND state = 'pending'",
                (outbox_id,),
            )
            return
        try:
            self._attempt(dict(row))
        except Aborted:  # stopping: the row stays pending, attempted again after a restart
            pass

    def _attempt(self, row: dict[str, Any]) -> None:
        plan = schedule(self.backend)
        attempt = row["attempts"] + 1
        status, error = self._post(row, attempt, row["webhook_secret"], "current", plan)
        overlap = row["previous_secret"] and (row["rotated_at"] or 0) > time.time()
        if status in (401, 403) and overlap:
            status, error = self._post(row, attempt, row["previous_secret"], "previous", plan)
        store = self.backend.db
        if error is None:
            now = time.time()
            store.execute(
                "UPDATE outbox SET state = 'delivered', attempts = ?, delivered_at = ?,"
                " last_error = NULL WHERE id = ?",
                (attempt, now, row["id"]),
            )
            # The receiver is up: its key's backlog need not wait out each row's backoff.
            store.execute(
                "UPDATE outbox SET next_at = ? WHERE api_key = ? AND "
                "state = 'pending' AND next_at > ?",
                (now, row["api_key"], now),
            )
            return
        state = "dead" if attempt >= plan.max_attempts else "pending"
        store.execute(
            "UPDATE outbox SET attempts = ?, next_at = ?, state = ?, last_error = ? WHERE id = ?",
            (attempt, time.time() + delay_after(attempt, plan), state, error, row["id"]),
        )

    def _post(
        self, row: dict[str, Any], attempt: int, secret: str, which: str, plan: Schedule
    ) -> tuple[int | None, str | None]:
        timestamp = str(int(time.time() * 1000))
        headers = {
            "Content-Type": "application/json",
            "X-Timestamp": timestamp,
            "X-Signature": sign(secret, timestamp, row["body"]),
        }
        if self.backend.contract_log.strict:
            self.backend.contract_log.record(
                f"webhook.{row['event']}",
                "webhook",
                contract.check_webhook(row["event"], json.loads(row["body"]), headers),
                taskId=row["task_id"],
            )
        headers["User-Agent"] = "dubkit-sandbox-webhooks"
        started = time.perf_counter()
        status, error = None, None
        try:
            status = post(row["webhook_url"], row["body"], headers, plan.timeout, self.pool.live)
            if not 200 <= status < 300:
                error = f"receiver answered HTTP {status}"
        except Aborted:
            raise
        except AttemptTimeout as exc:
            error = f"Timeout: {exc}"
        except (OSError, http.client.HTTPException) as exc:
            error = f"ConnectionError: {type(exc).__name__}: {exc}"
        except Exception as exc:  # a URL the stdlib refuses (scheme, port, host name)
            error = f"{type(exc).__name__}: {exc}"
        self.backend.db.execute(
            "INSERT INTO deliveries (outbox_id, attempt, at, url, status_code, error, "
            "duration_ms, secret) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row["id"],
                attempt,
                time.time(),
                row["webhook_url"],
                status,
                error,
                (time.perf_counter() - started) * 1000,
                which,
            ),
        )
        return status, error
