"""What runs a batch: uploads ahead of the dubs, one create at a time, waits, downloads.

One scheduler thread claims rows from the ledger in order and hands each to a worker thread,
which takes it as far as it goes: ``planned`` → create (``sending`` written first) →
``running`` → wait (pushed by a local webhook receiver when one runs, else polled) →
``saving`` → ``done``. A row the ledger shows further on (another process's, or this one's
before a crash) is taken up where it stands. At most ``max_in_flight`` of the batch's tasks
run at once, counted in the ledger across every process; an uploader thread keeps the next
files' materials ready so a freed slot is filled at once.

Failures stay with their row: a refusal (a bad request, no credits) is kept with its error; a
transient one (the service's 5xx, a throttle that outlasted the transport's retries, a task
that failed with a 5xx) is tried again up to ``retries`` times as a new attempt, and a create
that may have committed is never sent again with a new key (:mod:`dubkit.batch.recovery`).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .._transport.keys import new_idempotency_key
from ..errors import (
    APIConnectionError,
    DubkitError,
    IdempotencyConflictError,
    NotFoundError,
    RateLimitError,
    ServerError,
    UpstreamError,
)
from ..results import Material, Task
from ..schema import DubbingContext, TaskFailure
from ..webhooks import push
from . import outputs, recovery
from .ledger import Ledger, worker_id
from .plan import Source
from .rows import IN_FLIGHT, Row

log = logging.getLogger("dubkit.batch")

TAG = "dubkitBatch"  # the extraData key a batch's creates carry their row under
WEBHOOK_GRACE = 60.0  # seconds a receiver's webhook may take to name an unresolved row's task
UPLOAD_TRIES = 3  # a file's upload, tried again after a transient failure


class Services(Protocol):
    """The client as a batch uses it (``dubkit.Client``)."""

    @property
    def dubbing(self) -> Any: ...
    @property
    def materials(self) -> Any: ...
    @property
    def tasks(self) -> Any: ...
    @property
    def transport(self) -> Any: ...


@dataclass
class Settings:
    """How a batch runs (``client.dubbing.batch``'s keywords of the same names)."""

    max_in_flight: int = 4
    retries: int = 2  # new attempts after a transient failure, per revision
    poll_interval: float = 0.5
    max_poll_interval: float = 1.0  # a dub noticed late leaves its slot empty that long
    push_interval: float = 30.0  # polling while a local receiver pushes events
    look_interval: float = 1.0  # how often rows held by other processes are looked at again


def transient(exc: BaseException) -> bool:
    """Worth trying again later: the service's trouble, not the request's."""
    return isinstance(exc, (APIConnectionError, RateLimitError, ServerError, UpstreamError))


class Runner:
    """Runs the rows ``keys`` of ``ledger`` until each has ended (or the batch is cancelled)."""

    def __init__(
        self,
        client: Services,
        ledger: Ledger,
        keys: list[str],
        sources: dict[str, Source],
        drafts: dict[str, Any],
        out: Path,
        settings: Settings,
    ) -> None:
        self.client, self.ledger, self.keys = client, ledger, keys
        self._wanted = set(keys)
        self.sources, self.drafts, self.out, self.settings = sources, drafts, out, settings
        self.cancelled = threading.Event()
        self.finished = threading.Event()
        self.error: BaseException | None = None  # what stopped the scheduler, if anything
        self._wake = threading.Event()
        self._active: set[str] = set()
        self._active_lock = threading.Lock()
        self._pushed: dict[str, Any] = {}  # idempotency key -> the webhook event that named it
        self._waiting: dict[str, threading.Event] = {}  # rows waiting for their task, by key
        self._not_before: dict[str, float] = {}  # a row tried again after a transient failure
        self._parked: set[str] = set()  # unresolved rows only a person can settle, this run
        self._save_tries: dict[str, int] = {}
        self._alike_since: dict[str, float] = {}  # when an unresolved row's look-alikes ended
        self._materials = MaterialShelf(client, ledger, sources)
        self._thread: threading.Thread | None = None
        self._me = worker_id()
        self._batch_id = ledger.batch_id

    # -- the scheduler
    def start(self) -> None:
        if self._thread is None:
            self._unsubscribe = push.subscribe(self._on_event)
            self._materials.prefetch([self.ledger.row(k) for k in self.keys])
            self._thread = threading.Thread(target=self._schedule, name="dub-batch", daemon=True)
            self._thread.start()

    def _schedule(self) -> None:
        try:
            while True:
                rows = self._rows()
                if self._all_ended(rows):
                    if self.cancelled.is_set():
                        cancel_unstarted(self.ledger, rows)
                    return
                self._claim_what_can_run(rows)
                self._wake.wait(self.settings.look_interval)
                self._wake.clear()
        except BaseException as exc:  # shown by wait(); the rows stay as the ledger has them
            log.exception("dubbing batch stopped")
            self.error = exc
        finally:
            self._unsubscribe()
            self._materials.stop()
            self.finished.set()

    def _rows(self) -> list[Row]:
        """This batch's rows still to end (ended rows are not read again)."""
        wanted = self._wanted
        return [r for r in self.ledger.open_rows() if r.key in wanted]

    def _all_ended(self, rows: list[Row]) -> bool:
        with self._active_lock:
            busy = bool(self._active)
        if busy:
            return False
        if self.cancelled.is_set():
            return not any(r.status in IN_FLIGHT or r.status == "saving" for r in rows)
        return all(r.key in self._parked for r in rows)

    def _claim_what_can_run(self, rows: list[Row]) -> None:
        in_flight = self.ledger.in_flight()  # every process's, across the ledger
        for row in rows:
            if row.ended or row.key in self._parked:
                continue
            with self._active_lock:
                if row.key in self._active:
                    continue
            starting = row.status in ("planned", "cancelled")
            if starting and (self.cancelled.is_set() or in_flight >= self.settings.max_in_flight):
                continue
            if starting and row.file_hash not in self.sources:
                continue  # another caller's file: theirs to start
            if self._not_before.get(row.key, 0.0) > time.monotonic():
                continue  # backing off after a transient failure
            if not self.ledger.claim(row.key):
                continue  # a live process holds it
            with self._active_lock:
                self._active.add(row.key)
            in_flight += starting
            # Daemon threads: a script, or a Ctrl-C'd command, ends without waiting for the
            # service; the ledger keeps where each row stood for the next run.
            threading.Thread(
                target=self._work, args=(row.key,), name=f"dub-row {row.key}", daemon=True
            ).start()

    # -- one row, as far as it goes
    def _work(self, key: str) -> None:
        try:
            row = self.ledger.row(key)
            if row is None:
                return
            if row.worker != self._me:  # taken over from a process that is gone, or new
                row = self.ledger.update(row, worker=self._me)
            task = None
            if row.status in ("planned", "cancelled"):
                row = self._start(row)
            if row.status in ("sending", "unresolved"):
                row = self._resolve(row)
            if row.status == "running":
                row, task = self._wait(row)
            if row.status == "saving":
                self._save(row, task)
        except Exception as exc:  # a bug or an unexpected answer: the row says so
            log.exception("batch row %s", key)
            found = self.ledger.row(key)
            if found is not None and found.status in ("planned", "saving"):
                self.ledger.update(found, status="failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            self.ledger.release(key)
            with self._active_lock:
                self._active.discard(key)
            self._wake.set()

    def _start(self, row: Row) -> Row:
        """Create the row's task: ``sending`` (key, tag) written first, ``running`` after."""
        if self.cancelled.is_set():
            return self.ledger.update(row, status="cancelled")
        try:
            material = self._materials.get(row.file_hash)
        except DubkitError as exc:
            return self._failed(row, exc)
        with self.ledger.creating():
            if self.cancelled.is_set():  # cancelled while its file was being uploaded
                return self.ledger.update(row, status="cancelled")
            if self.ledger.in_flight() >= self.settings.max_in_flight:
                return row  # the slots filled meanwhile (another process): later
            attempt = row.attempt + (1 if row.idempotency_key else 0)
            key = new_idempotency_key()
            row = self.ledger.update(
                row,
                status="sending",
                attempt=attempt,
                idempotency_key=key,
                tag=f"{self._batch_id}/{row.key}/r{row.revision}/a{attempt}",
                sent_at=time.time(),
                started_at=row.started_at or time.time(),
                ended_at=None,
                task_id=None,
            )
            try:
                task = self._send(row, material)
            except IdempotencyConflictError:  # the answer was lost; the service has the task
                return self._adopt(row, self._candidates_of(row, material))
            except DubkitError as exc:
                if exc.maybe_committed:
                    return self._adopt(row, self._candidates_of(row, material))
                return self._failed(row, exc)
            return self._running(row, task.task_id, task.task_type)

    def _send(self, row: Row, material: Material) -> Task:
        task: Task = self.client.dubbing.start(
            self.drafts[row.locale],
            material,
            extra_data={TAG: row.tag},
            idempotency_key=row.idempotency_key,
        )
        return task

    def _running(self, row: Row, task_id: str, task_type: str | None) -> Row:
        self.ledger.add_task(row.key, task_id)
        return self.ledger.update(
            row, status="running", task_id=task_id, task_type=task_type, error=None
        )

    def _adopt(self, row: Row, found: list[str]) -> Row:
        """The row's task if exactly one fits; else the row stays ``unresolved`` (its cost
        counted as spent) until one does."""
        if len(found) == 1:
            return self._running(row, found[0], None)
        if not found:
            why = "the service may have accepted this dub, and does not list its task yet"
            return self.ledger.update(row, status="unresolved", error=why)
        why = (
            f"the service accepted this dub; its task is one of {', '.join(found)}, which "
            "nothing the service says tells apart: batch.adopt(file, locale, task_id) takes one"
        )
        if all(self._ended(task_id) for task_id in found):
            since = self._alike_since.setdefault(row.key, time.monotonic())
            # every one has ended; while a local receiver runs, its webhook may yet name the
            # row's own (deliveries come a little after the end): wait for it a while
            if not push.active() or time.monotonic() - since > WEBHOOK_GRACE:
                self._parked.add(row.key)  # nothing more can tell: a person decides (adopt)
        return self.ledger.update(row, status="unresolved", error=why)

    def _ended(self, task_id: str) -> bool:
        try:
            return bool(self.client.tasks.get(task_id).done)
        except DubkitError:
            return False

    def _resolve(self, row: Row) -> Row:
        """A row left ``sending`` or ``unresolved``: adopt its task if one fits; if none is
        listed, send the create again with the same key (a service that never got it does the
        work once; one that did answers 409, and the row waits for the task to be listed)."""
        material = self._materials.known(row.file_hash)
        with self.ledger.creating():
            found = self._candidates_of(row, material)
            if found or material is None or row.locale not in self.drafts:
                return self._adopt(row, found)
            try:
                task = self._send(row, material)
            except DubkitError as exc:
                if isinstance(exc, IdempotencyConflictError) or exc.maybe_committed:
                    return self._adopt(row, [])
                return self._failed(row, exc)
            return self._running(row, task.task_id, task.task_type)

    def _candidates_of(self, row: Row, material: Material | None) -> list[str]:
        pushed = self._pushed.get(row.idempotency_key or "")
        if pushed is not None and pushed.task_id:
            return [str(pushed.task_id)]
        return recovery.find(
            self.client.tasks,
            self._detail,
            row,
            self.ledger.known_task_ids(),
            material.material_id if material else None,
        )

    def _detail(self, task_id: str) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] | None = self.client.tasks.get(task_id).raw_result
            return result
        except DubkitError:
            return None

    def _failed(self, row: Row, exc: BaseException) -> Row:
        """Kept with its error; planned again (a new attempt) when transient and tries are left."""
        again = transient(exc) and row.attempt <= self.settings.retries
        if again and not self.cancelled.is_set():
            self._not_before[row.key] = time.monotonic() + min(60.0, 2.0**row.attempt)
            return self.ledger.update(
                row, status="planned", error=f"attempt {row.attempt}: {exc}", transient=True
            )
        return self.ledger.update(
            row, status="failed", error=str(exc), transient=transient(exc), ended_at=time.time()
        )

    # -- waiting
    def _task(self, row: Row) -> Task:
        draft = self.drafts.get(row.locale)
        return Task(
            self.client.transport,
            row.task_id or "",
            task_type=row.task_type,
            context=DubbingContext(
                draft.source if draft else None, row.locale, self._materials.known(row.file_hash)
            ),
        )

    def _wait(self, row: Row) -> tuple[Row, Task]:
        """Until the row's task ends: pushed by a local receiver's events, else polled with
        backoff (kept short: a slot freed late is a worker of the service left idle)."""
        task = self._task(row)
        woken = self._waiting.setdefault(row.idempotency_key or row.key, threading.Event())
        interval = self.settings.poll_interval
        while True:
            pushed = self._pushed.get(row.idempotency_key or "")
            if pushed is not None and pushed.task_id == task.task_id:
                task.apply(pushed.task_type, pushed.status, pushed.task_result(), pushed=True)
            if not task.done:
                try:
                    task.refresh()
                except NotFoundError as exc:
                    gone = self.ledger.update(
                        row, status="failed", error=f"its task is gone: {exc}", ended_at=time.time()
                    )
                    return gone, task
                except DubkitError as exc:
                    log.info("polling %s: %s", task.task_id, exc)  # tried again next time
            if task.done:
                break
            woken.wait(self.settings.push_interval if push.active() else interval)
            woken.clear()
            interval = min(self.settings.max_poll_interval, interval * 1.5)
        self._waiting.pop(row.idempotency_key or row.key, None)
        self._wake.set()  # a slot is free: the scheduler fills it while this row is saved
        if task.status == "failed":
            failure = TaskFailure.model_validate(task.raw_result or {})
            kind = ServerError if _is_5xx(failure.error_code) else DubkitError
            said = kind(f"the dub failed: {failure.error_message or 'no reason given'}")
            return self._failed(self.ledger.update(row, task_type=task.task_type), said), task
        row = self.ledger.update(
            row,
            status="saving",
            task_type=task.task_type,
            charged=outputs.charge_of(task.raw_result),
            outputs=outputs.plan(self.out, row, task.raw_result, self.ledger),
        )
        return row, task

    # -- saving
    def _save(self, row: Row, task: Task | None) -> None:
        """Download the row's files; a transient failure leaves it ``saving``, tried again
        after a pause (its task is done and paid: only the download is repeated)."""
        try:
            if task is None or task.raw_result is None:
                task = self._task(row).refresh()
            outputs.download(self.client.transport, self.out, row, task.raw_result or {})
        except DubkitError as exc:
            if not transient(exc):
                raise
            tries = self._save_tries[row.key] = self._save_tries.get(row.key, 0) + 1
            self._not_before[row.key] = time.monotonic() + min(60.0, 2.0**tries)
            self.ledger.update(row, error=f"saving, try {tries}: {exc}")
            return
        self.ledger.update(row, status="done", error=None, ended_at=time.time())

    # -- events pushed by a local webhook receiver
    def _on_event(self, event: Any) -> None:
        key = getattr(event, "idempotency_key", None)
        if not key:
            return
        self._pushed[key] = event
        waiting = self._waiting.get(key)
        if waiting is not None:
            waiting.set()
        self._wake.set()

    def cancel(self) -> None:
        """Start no more rows; the running ones finish and are recorded."""
        self.cancelled.set()
        self._wake.set()

    def join(self, timeout: float | None = None) -> bool:
        return self.finished.wait(timeout)


def cancel_unstarted(ledger: Ledger, rows: list[Row]) -> None:
    """Mark each of ``rows`` still planned as cancelled, under its claim and as the ledger has
    it then (a row held elsewhere is its holder's to end). A cancelled runner does it last: a
    worker may give a row back unstarted after ``cancel()`` passed it by as held."""
    for row in rows:
        if row.status == "planned" and ledger.claim(row.key):
            try:
                now = ledger.fresh(row)
                if now.status == "planned":
                    ledger.update(now, status="cancelled")
            finally:
                ledger.release(row.key)


def _is_5xx(code: Any) -> bool:
    try:
        return 500 <= int(code) < 600
    except (TypeError, ValueError):
        return False


class MaterialShelf:
    """Each file's material, uploaded once (by MD5) ahead of the rows that need it; across
    processes, a file is uploaded by whoever claims it first (``file:<md5>``)."""

    def __init__(self, client: Services, ledger: Ledger, sources: dict[str, Source]) -> None:
        self.client, self.ledger, self.sources = client, ledger, sources
        self._ready: dict[str, Material] = {}
        self._errors: dict[str, DubkitError] = {}
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def known(self, file_hash: str) -> Material | None:
        """The file's material if uploaded (by this process, or as the ledger says)."""
        with self._lock:
            if file_hash in self._ready:
                return self._ready[file_hash]
        record = self.ledger.material(file_hash)
        if record is None or not record.get("material_id"):
            return None
        made = Material(
            material_id=record["material_id"],
            name=record["name"],
            category="video" if record["video"] else "audio",
            file_hash=file_hash,
            duration=round((record["seconds"] or 0) * 1000),
        )
        with self._lock:
            self._ready[file_hash] = made
        return made

    def prefetch(self, rows: list[Row | None]) -> None:
        """Upload, in the batch's order, the files of rows still to start."""
        order = []
        for row in rows:
            if row is not None and row.status in ("planned", "cancelled", "sending"):
                if row.file_hash in self.sources and row.file_hash not in order:
                    order.append(row.file_hash)
        self._thread = threading.Thread(
            target=self._upload_all, args=(order,), name="dub-uploads", daemon=True
        )
        self._thread.start()

    def _upload_all(self, order: list[str]) -> None:
        for file_hash in order:
            if self._stop.is_set():
                return
            try:
                self._upload(file_hash)
            except DubkitError as exc:
                with self._lock:
                    self._errors[file_hash] = exc
            except Exception as exc:
                log.exception("uploading %s", file_hash)
                with self._lock:
                    self._errors[file_hash] = DubkitError(f"upload failed: {exc}")

    def _upload(self, file_hash: str) -> None:
        claim = f"file:{file_hash}"
        while self.known(file_hash) is None and not self._stop.is_set():
            if self.ledger.holds(claim):  # a thread of this process uploads it: told when done
                with self._lock:
                    self._lock.wait(0.5)
                continue
            if not self.ledger.claim(claim):
                self._stop.wait(0.5)  # another process uploads it
                continue
            try:
                if self.known(file_hash) is not None:
                    return
                source = self.sources[file_hash]
                material = source.material or self._uploaded(source)
                self.ledger.put_material(
                    file_hash,
                    material.name or source.name,
                    material.material_id or "",
                    source.seconds,
                    source.video,
                )
                with self._lock:
                    self._ready[file_hash] = material
            finally:
                self.ledger.release(claim)
                with self._lock:
                    self._lock.notify_all()

    def _uploaded(self, source: Source) -> Material:
        """Upload a file; a transient failure (or a session call whose answers kept being
        lost) is tried again: an upload is free, and its bytes dedupe by MD5."""
        for tried in range(1, UPLOAD_TRIES + 1):
            try:
                material: Material = self.client.materials.upload(source.path, progress=False)
                return material
            except DubkitError as exc:
                lost = isinstance(exc, IdempotencyConflictError) and exc.first_attempt_accepted
                if tried == UPLOAD_TRIES or not (lost or transient(exc)):
                    raise
                self._stop.wait(min(8.0, 0.5 * 2**tried))
        raise AssertionError("unreachable")

    def get(self, file_hash: str) -> Material:
        """The file's material: uploaded here, unless the uploader (or another process) is
        at it, then waited for."""
        with self._lock:
            if file_hash in self._errors:
                raise self._errors[file_hash]
        self._upload(file_hash)
        found = self.known(file_hash)
        if found is None:
            raise DubkitError(f"the upload of {self.sources[file_hash].name!r} was stopped")
        return found

    def stop(self) -> None:
        self._stop.set()
