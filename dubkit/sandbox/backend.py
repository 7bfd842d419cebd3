"""The sandbox's state and the rules every product shares: keys, credits, idempotency, tasks.

Choices made where the interface is silent (each marked *choice*):

* *choice* Each API key is its own account: own credits, tasks, materials, clones, webhook URL
  and secret. Another key's task is 404, exactly like an unknown one.
* *choice* Business errors use the same HTTP status as their code (400, 402, 404, ...); success is
  HTTP 200 with ``code: 200``.
* *choice* An idempotency key is recorded only once a request commits. A request refused for bad
  input or missing credits leaves the key unused, so the caller can fix it and send again; a
  second request with a key that is in flight or committed gets 409 + ``Retry-After: 2``
  (no replay, as the interface says). The window is 24 h (admin-configurable).
* *choice* Sync creates also make task records (status ``finished``) and appear in tasks/list.
* *choice* Task statuses are ``running``, ``finished`` and ``failed`` for every task type.
* *choice* Webhooks go out for async creates only, for success and failure alike; a failure's
  envelope carries the error's code and message, with ``data.taskId``.
* Timing (admin): results become visible immediately, after N seconds, or on the N-th
  tasks/detail poll; real work always runs first, so timing only ever delays.

Credits: a key is charged before work starts (402 when it cannot pay) and refunded after. A
crash must not cost the caller: each request keeps a ledger of its charges, the tasks it made
and the async work it holds back, so :meth:`Backend.undo_on_crash` can take all of it back.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import random
import secrets
import shutil
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .admin_token import admin_token
from .contract_log import ContractLog
from .database import Database
from .service_error import ServiceError
from .throttle import Throttle
from .work_pool import FairWorkPool

log = logging.getLogger("dubkit.sandbox")

IDEMPOTENCY_WINDOW = 24 * 3600.0
DEFAULT_CREDITS = 1_000_000.0


@dataclass
class RequestLedger:
    charges: list[tuple[str, float]] = field(default_factory=list)  # (api_key, amount)
    tasks: list[str] = field(default_factory=list)  # task ids it made
    starts: list[Callable[[], object]] = field(default_factory=list)  # async work, held back


# What the request this thread is serving has done so far (see Backend.undo_on_crash).
_request: ContextVar[RequestLedger | None] = ContextVar("sandbox_request", default=None)
RESTARTED = "the sandbox restarted while this task was running; its credits were refunded"
INTERRUPTED = (
    "interrupted: the Python process running the sandbox ended while this task was running; "
    "its credits were refunded"
)
# The task whose work this thread is doing: its refunds are counted on it (see refund).
_working_on: ContextVar[str | None] = ContextVar("sandbox_task", default=None)


def request_ledger() -> RequestLedger | None:
    """The ledger of the request this thread is serving; None outside one (a worker thread)."""
    return _request.get()


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex}"


class Backend:
    """Everything the sandbox knows, behind methods the HTTP layer and products call."""

    def __init__(
        self, data_dir: Path, *, workers: int = 2, contract_log: ContractLog | None = None
    ) -> None:
        self.data_dir = Path(data_dir)
        self.contract_log = contract_log or ContractLog(strict=False)
        _private_dir(self.data_dir)
        self.files_dir = self.data_dir / "files"
        self.files_dir.mkdir(mode=0o700, exist_ok=True)
        self.db = Database(self.data_dir / "sandbox.sqlite3")
        self.admin_token = admin_token(self.data_dir)
        self.base_url = ""  # set by the server once it has a port
        # ``workers`` jobs of one key at once, and one worker more for another key's (work_pool)
        self._pool = FairWorkPool(workers + 1, per_key=workers)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._interrupted = threading.Event()  # its process is ending (end_with_interpreter)
        self._ticker = threading.Thread(
            target=self._tick_forever, name="sandbox-ticker", daemon=True
        )
        self.on_release: list[Callable[[dict[str, Any]], None]] = []
        self.fault_rng = random.Random()  # admin /faults may seed it for repeatable runs
        self.default_key = self._ensure_default_key()
        self.throttle = Throttle.from_settings(self.setting("throttle", {}))

    def start(self) -> None:
        self._ticker.start()
        self._end_lost_work(RESTARTED)

    def end_with_interpreter(self) -> None:
        """The Python process that runs this sandbox in a thread is ending: the work it runs
        ends with it, so each running task is recorded as interrupted now, its credits given
        back, as the next start would find it after a crash; the work that is still running
        then ends quietly (its failure is expected, not a sandbox bug to print)."""
        if self._stopping.is_set() or self._interrupted.is_set():
            return  # stopped already
        self._interrupted.set()
        self._end_lost_work(INTERRUPTED)

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        self._pool.shutdown()
        if self._ticker.is_alive():
            self._ticker.join(timeout=2)
        self.db.close()

    # ------------------------------------------------------------------ keys

    def _ensure_default_key(self) -> str:
        key = self.db.setting("default_key")
        if key is None:
            key = self.create_key("default")
            self.db.set_setting("default_key", key)
        return key

    def create_key(
        self, name: str, credits: float = DEFAULT_CREDITS, *, api_key: str | None = None
    ) -> str:
        """A new account; ``api_key`` chooses its key (a test harness that must know it early)."""
        key = api_key or "sk_sandbox_" + secrets.token_hex(16)
        self.db.execute(
            "INSERT INTO keys (api_key, name, credits, created_at, webhook_secret) "
            "VALUES (?, ?, ?, ?, ?)",
            (key, name, credits, now_iso(), new_secret()),
        )
        return key

    def key(self, api_key: str) -> dict[str, Any] | None:
        row = self.db.one("SELECT * FROM keys WHERE api_key = ?", (api_key,))
        return dict(row) if row else None

    def keys(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.all("SELECT * FROM keys ORDER BY created_at")]

    # ------------------------------------------------------------------ credits

    def set_credits(self, api_key: str, credits: float) -> None:
        self.db.execute("UPDATE keys SET credits = ? WHERE api_key = ?", (credits, api_key))

    def charge(self, api_key: str, amount: float, what: str) -> None:
        """Take ``amount`` credits or refuse with 402 before any work starts."""
        cursor = self.db.execute(
            "UPDATE keys SET credits = credits - ? WHERE api_key = ? AND credits >= ?",
            (amount, api_key, amount),
        )
        if cursor.rowcount == 0:
            key = self.key(api_key) or {"credits": 0}
            raise ServiceError(
                402,
                f"Insufficient quota: {what} needs {amount:g} credits, this key has "
                f"{key['credits']:g} ({self.spent(api_key):g} spent); "
                + who_can_raise(key, "topup {name} CREDITS"),
            )
        ledger = _request.get()
        if ledger is not None:
            ledger.charges.append((api_key, amount))

    def spent(self, api_key: str) -> float:
        """Credits the key's tasks took and kept (charged less refunded), over the tasks it
        still has: a reset key starts again from nothing spent."""
        row = self.db.one(
            "SELECT COALESCE(SUM(charged - refunded), 0) AS n FROM tasks "
            "WHERE api_key = ? AND deleted = 0",
            (api_key,),
        )
        return float(row["n"]) if row else 0.0

    @contextmanager
    def undo_on_crash(self) -> Iterator[None]:
        """Undo what this request did if it ends in an unexpected exception (a sandbox bug):
        give back its charges, remove the tasks it made and never start their async work.

        Business refusals (ServiceError) are the products' to settle; a crash must not leave
        the caller paying for nothing, nor paying twice when the client retries the 500, nor
        holding a task it was never told about. Async work made by the request starts only
        once it has ended without crashing, so there is never any to stop.
        """
        ledger = RequestLedger()
        token = _request.set(ledger)
        crashed = False
        try:
            yield
        except ServiceError:
            raise
        except Exception:
            crashed = True
            for api_key, amount in ledger.charges:
                self.refund(api_key, amount)
            self.db.store_many(
                "DELETE FROM tasks WHERE task_id = ?", [(task_id,) for task_id in ledger.tasks]
            )
            raise
        finally:
            _request.reset(token)
            for start in [] if crashed else ledger.starts:
                start()

    def refund(self, api_key: str, amount: float) -> None:
        task_id = _working_on.get()
        with self.db.transaction() as db:
            if task_id is not None:  # a task gives back at most what it holds (an interrupted
                # one gave back all of it, before its work failed and refunded again)
                held = db.execute(
                    "SELECT charged - refunded FROM tasks WHERE task_id = ?", (task_id,)
                ).fetchone()
                if held is not None:
                    amount = min(amount, max(held[0], 0))
            # Work a reset forgot gives nothing back: the key started again with its grant.
            db.execute(
                "UPDATE keys SET credits = credits + ? WHERE api_key = ? AND NOT EXISTS ("
                "SELECT 1 FROM tasks t WHERE t.task_id = ? AND t.deleted = 1 "
                "AND t.created_at < COALESCE(keys.reset_at, ''))",
                (amount, api_key, task_id),
            )
            if task_id is not None:
                db.execute(
                    "UPDATE tasks SET refunded = refunded + ? WHERE task_id = ?", (amount, task_id)
                )

    @contextmanager
    def working_on(self, task_id: str) -> Iterator[None]:
        """Count the refunds made by this thread's work on ``task_id``, so a restart that ends
        the task gives back exactly what it still holds."""
        token = _working_on.set(task_id)
        try:
            yield
        finally:
            _working_on.reset(token)

    # ------------------------------------------------------------------ idempotency

    def reserve_idempotency_key(self, api_key: str, path: str, key: str) -> None:
        window = float(self.db.setting("idempotency_window", IDEMPOTENCY_WINDOW))
        with self.db.transaction() as db:
            db.execute(
                "DELETE FROM idempotency WHERE api_key = ? AND path = ? AND key = ? "
                "AND created_at < ?",
                (api_key, path, key, time.time() - window),
            )
            try:
                db.execute(
                    "INSERT INTO idempotency (api_key, path, key, state, created_at) "
                    "VALUES (?, ?, ?, 'pending', ?)",
                    (api_key, path, key, time.time()),
                )
                return
            except sqlite3.IntegrityError:
                held = db.execute(
                    "SELECT state FROM idempotency WHERE api_key = ? AND path = ? AND key = ?",
                    (api_key, path, key),
                ).fetchone()
        detail = (
            "a request with this key is still in progress"
            if held["state"] == "pending"
            else f"it was used for this path within the last {window / 3600:g} h; use "
            f"a new key for a new request"
        )
        raise ServiceError(409, f"Idempotency key already used: {detail}", {"Retry-After": "2"})

    def commit_idempotency_key(self, api_key: str, path: str, key: str) -> None:
        self.db.execute(
            "UPDATE idempotency SET state = 'committed' WHERE api_key = ? AND path = ? AND key = ?",
            (api_key, path, key),
        )

    def release_idempotency_key(self, api_key: str, path: str, key: str) -> None:
        self.db.execute(
            "DELETE FROM idempotency WHERE api_key = ? AND path = ? AND key = ? "
            "AND state = 'pending'",
            (api_key, path, key),
        )

    # ------------------------------------------------------------------ tasks

    def create_task(
        self,
        api_key: str,
        task_type: str,
        *,
        is_async: bool,
        request: Any,
        extra_data: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        timing = self.db.setting("timing", {"mode": "immediate"})
        release_at = time.time() + float(timing["value"]) if timing["mode"] == "seconds" else None
        release_polls = int(timing["value"]) if timing["mode"] == "polls" else None
        stamp = now_iso()
        task_id = new_id("")
        ledger = request_ledger()
        charged = sum(amount for key, amount in ledger.charges if key == api_key) if ledger else 0
        with self.db.transaction() as db:
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM tasks").fetchone()[0]
            db.execute(
                "INSERT INTO tasks (task_id, api_key, task_type, status, is_async, request, "
                "extra_data, pipeline_key, release_at, release_polls, created_at, updated_at, seq,"
                " charged) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    task_id,
                    api_key,
                    task_type,
                    int(is_async),
                    json.dumps(request),
                    json.dumps(extra_data) if extra_data is not None else None,
                    uuid.uuid4().hex,
                    release_at,
                    release_polls,
                    stamp,
                    stamp,
                    seq,
                    charged,
                ),
            )
        if ledger is not None:
            ledger.tasks.append(task_id)
        return self.task_row(task_id)

    def task_row(self, task_id: str) -> dict[str, Any]:
        row = self.db.one("SELECT * FROM tasks WHERE task_id = ?", (task_id,))
        if row is None:
            raise KeyError(task_id)
        return dict(row)

    def task_is_live(self, task_id: str) -> bool:
        return (
            self.db.one("SELECT 1 FROM tasks WHERE task_id = ? AND deleted = 0", (task_id,))
            is not None
        )

    def find_task(self, api_key: str, task_id: str) -> dict[str, Any]:
        row = self.db.one(
            "SELECT * FROM tasks WHERE task_id = ? AND api_key = ? AND deleted = 0",
            (task_id, api_key),
        )
        if row is None:
            raise ServiceError(404, f"task not found: {task_id}")
        return dict(row)

    def finish_sync(self, task_id: str, result: dict[str, Any]) -> None:
        """Sync creates finish at once, whatever the timing setting says."""
        self.db.execute(
            "UPDATE tasks SET status = 'finished', ready = 1, result = ?, "
            "updated_at = ? WHERE task_id = ?",
            (json.dumps(result), now_iso(), task_id),
        )

    def run_async(self, task_id: str, api_key: str, work: Callable[[], dict[str, Any]]) -> None:
        """Run ``work`` in the background, in ``api_key``'s turn among the keys with work
        waiting; its dict is the task's result, its error fails it.

        Within a request it starts once the request has succeeded (see undo_on_crash)."""
        start = functools.partial(
            self._pool.submit, api_key, functools.partial(self._run, task_id, work)
        )
        ledger = request_ledger()
        if ledger is None:
            start()
        else:
            ledger.starts.append(start)

    def _run(self, task_id: str, work: Callable[[], dict[str, Any]]) -> None:
        try:
            with self.working_on(task_id):
                result, code, message = work(), 200, None
        except ServiceError as exc:
            result, code, message = None, exc.code, exc.message
        except Exception as exc:  # a sandbox bug must still end the task, never hang it
            if self._interrupted.is_set():
                return  # ended with its process: the task is recorded as interrupted already
            log.exception("task %s failed", task_id)
            result, code, message = None, 500, f"internal error: {exc}"
        if self._interrupted.is_set():
            return  # done as its process ended: it was recorded interrupted and refunded
        self.db.execute(
            "UPDATE tasks SET ready = 1, result = ?, error_code = ?, message = ? WHERE task_id = ?",
            (
                json.dumps(result) if result is not None else None,
                None if code == 200 else code,
                message,
                task_id,
            ),
        )
        self._wake.set()

    def record_poll(self, task: dict[str, Any]) -> dict[str, Any]:
        """Count a tasks/detail poll (for 'after N polls' timing) and release if due."""
        self.db.execute("UPDATE tasks SET polls = polls + 1 WHERE task_id = ?", (task["task_id"],))
        self._release_due()
        return self.task_row(task["task_id"])

    def _release_due(self) -> None:
        due = self.db.all(
            "SELECT * FROM tasks WHERE status = 'running' AND ready = 1 AND "
            "(release_at IS NULL OR release_at <= ?) AND "
            "(release_polls IS NULL OR polls >= release_polls)",
            (time.time(),),
        )
        for row in due:
            task = dict(row)
            status = "failed" if task["error_code"] else "finished"
            cursor = self.db.execute(
                "UPDATE tasks SET status = ?, updated_at = ? WHERE "
                "task_id = ? AND status = 'running'",
                (status, now_iso(), task["task_id"]),
            )
            if cursor.rowcount:  # only the thread that flipped it announces it
                task["status"] = status
                for listener in self.on_release:
                    listener(task)

    def _tick_forever(self) -> None:
        while not self._stopping.is_set():
            try:
                self._release_due()
            except Exception:
                log.exception("sandbox ticker")
            self._wake.wait(0.05)
            self._wake.clear()

    def _end_lost_work(self, message: str) -> None:
        """End running work that is lost with its process (after a restart, or as the process
        ends) honestly, and give back what it was charged and had not yet given back (it
        delivered nothing)."""
        lost = self.db.all(
            "SELECT task_id, api_key, charged - refunded AS held FROM tasks "
            "WHERE status = 'running' AND ready = 0"
        )
        with self.db.transaction() as db:
            for task in lost:
                if task["held"] > 0:
                    db.execute(
                        "UPDATE keys SET credits = credits + ? WHERE api_key = ?",
                        (task["held"], task["api_key"]),
                    )
                db.execute(
                    "UPDATE tasks SET ready = 1, error_code = 500, refunded = charged, "
                    "message = ? WHERE task_id = ?",
                    (message, task["task_id"]),
                )
        for task in lost:
            for leftover in self.scratch_dir.glob(f"{task['task_id']}-*"):
                shutil.rmtree(leftover, ignore_errors=True)

    @property
    def scratch_dir(self) -> Path:
        """Where running work keeps files it does not serve (``<task_id>-*``, removed when the
        work ends, or at the next start if the process died first)."""
        return self.data_dir / "scratch"

    # ------------------------------------------------------------------ files served over HTTP

    def file_path(self, relpath: str) -> Path:
        return self.files_dir / relpath

    def file_url(self, relpath: str) -> str:
        return f"{self.base_url}/files/{relpath}"

    # ------------------------------------------------------------------ settings

    def setting(self, name: str, default: Any = None) -> Any:
        return self.db.setting(name, default)

    def set_setting(self, name: str, value: Any) -> None:
        self.db.set_setting(name, value)

    def reset(self) -> None:
        """Forget every task, key, delivery and setting; a fresh default key is made."""
        tables = self.db.tables()
        with self.db.transaction() as db:
            for table in tables:
                db.execute(f"DELETE FROM {table}")
        self.default_key = self._ensure_default_key()
        self.throttle = Throttle()


def _private_dir(path: Path) -> None:
    """Make the data dir, or adopt an existing one, readable by its owner only.

    Keys, secrets, the admin token and every file live below it, so 0700 here protects them
    all on a shared machine. A directory that holds something else is left as it is.
    """
    fresh = not path.exists()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if fresh or (path / "sandbox.sqlite3").exists():
        os.chmod(path, 0o700)


def who_can_raise(key: dict[str, Any], command: str, *, verb: str = "raise") -> str:
    """Who can raise a quota of ``key`` (a keys row), with the command that does it
    (``command`` names the student as ``{name}``): every quota refusal ends with it."""
    if key.get("class_name"):
        said = command.format(name=key["class_name"])
        return f"ask your teacher to {verb} it (dubkit class {said})"
    return f"the sandbox's admin can {verb} it (dubkit.SandboxHandle.update_key)"


def new_secret() -> str:
    return "whsec_" + secrets.token_hex(24)
