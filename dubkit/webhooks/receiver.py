"""The Receiver: verify, dedupe, answer at once, then run handlers in the background.

>>> receiver = Receiver(secret, store="events.sqlite3")
>>> @receiver.on("openapi-translate")
... def translated(event: TranslateEvent) -> None:
...     save(event.task_id, event.result.items)
>>> receiver.serve(port=8787)            # a notebook; or gunicorn 'app:receiver.wsgi_app'
>>> app.mount("/webhooks", receiver.asgi_app)   # FastAPI, Starlette; or uvicorn

One delivery, in order: size check (413), :func:`verify` (401), :func:`parse` (400), then the
``pipelineKey`` is recorded in the :class:`EventStore` (a key seen before is answered 200 and
nothing runs again) and queued, and the answer is 200. Handlers run on worker threads; a handler
that raises is retried with backoff (``retry_delay * 2**n``) up to ``max_attempts`` times, then
the event becomes a dead letter (:meth:`Receiver.dead_letters`, :meth:`Receiver.revive`).
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .._util.masking import mask_key
from ..errors import ValidationError, WebhookVerificationError
from . import push
from ._asgi import ASGIApp
from ._leases import Leases
from ._queue import WorkQueue
from .deliveries import Delivery, DeliveryLog
from .events import WebhookEvent, parse_event
from .postgres_store import PostgresEventStore, is_postgres_url
from .signature import TOLERANCE_SECONDS, verify
from .store import DEFAULT_RETENTION, Attempt, EventStore

log = logging.getLogger("dubkit.webhooks")
Handler = Callable[[WebhookEvent], Any]  # a plain def, or an async def (awaited by a worker)
STORE_RETRY = 1.0  # seconds before an event whose store failed mid-attempt is tried again
DEFAULT_MAX_BODY = 8 * 1024 * 1024  # envelopes are small; the sandbox's own body limit


_loops = threading.local()


def _worker_loop() -> asyncio.AbstractEventLoop:
    """This worker thread's event loop for ``async def`` handlers, kept for the thread's life
    (a handler's async clients stay on one loop from one event to the next)."""
    loop: asyncio.AbstractEventLoop | None = getattr(_loops, "loop", None)
    if loop is None or loop.is_closed():
        loop = _loops.loop = asyncio.new_event_loop()
    return loop


def open_store(store: str | Path | None) -> EventStore | PostgresEventStore:
    """The store a ``Receiver(store=…)`` names: a PostgreSQL URL, else a SQLite file."""
    if is_postgres_url(store):
        return PostgresEventStore(str(store))
    return EventStore(store)


class _Registered(NamedTuple):
    fn: Callable[..., Any]
    transaction: bool  # called as fn(event, connection) in the event's transaction


class Answer(NamedTuple):
    """What to send back: an HTTP status and a small JSON body."""

    status: int
    body: dict[str, Any]
    delivery: Delivery


class Receiver:
    """Receives the service's webhooks; see the module docstring for the path of a delivery.

    ``secret`` is the webhook secret, or several during a rotation (see :meth:`rotate_secret`).
    ``store`` remembers keys and pending work: a SQLite file (default
    :func:`~dubkit.webhooks.store.default_store_path`), shared by processes on one host, or a
    ``postgresql://`` URL, shared by receivers on many hosts
    (:mod:`dubkit.webhooks.postgres_store`).
    A handled key is kept ``retention`` seconds (7 days), far longer than any retry arrives.
    ``lease`` is how long a handler may run before another process may assume this one died.
    """

    def __init__(
        self,
        secret: str | Sequence[str],
        *,
        store: str | Path | EventStore | PostgresEventStore | None = None,
        tolerance: float = TOLERANCE_SECONDS,
        max_body: int = DEFAULT_MAX_BODY,
        workers: int = 2,
        max_attempts: int = 5,
        retry_delay: float = 1.0,
        lease: float = 300.0,
        retention: float = DEFAULT_RETENTION,
        log_size: int = 1000,
    ) -> None:
        self._secrets: list[tuple[str, float | None]] = [
            (s, None) for s in ([secret] if isinstance(secret, str) else secret)
        ]
        if not self._secrets:
            raise ValueError("secret: at least one webhook secret is required")
        self.store: EventStore | PostgresEventStore = (
            store if isinstance(store, EventStore | PostgresEventStore) else open_store(store)
        )
        self.tolerance, self.max_body = tolerance, max_body
        self.workers, self.max_attempts, self.retry_delay = workers, max_attempts, retry_delay
        self.lease, self.retention = lease, retention
        self.url: str | None = None
        self._handlers: dict[str, _Registered] = {}
        self._default: _Registered | None = None
        self._log = DeliveryLog(log_size)
        self._lock = threading.Lock()
        # Keys this process has queued or is running: the sweeper renews their leases and
        # never adopts them again, so one delivery runs once here however long it takes.
        self._leases = Leases(self.store, lease, retention)
        self._queue: WorkQueue | None = None
        self._threads: list[threading.Thread] = []
        self._pid = 0
        self._http: Any = None

    def __repr__(self) -> str:
        secrets = ", ".join(mask_key(s) for s in self.secrets)
        state = (
            f"serving at {self.url}" if self._http else ("running" if self.running else "stopped")
        )
        return f"Receiver({state}, secrets=[{secrets}], store={self.store.where!r})"

    # ------------------------------------------------------------------ configuration

    def on(self, event: str, handler: Handler | None = None, *, transaction: bool = False) -> Any:
        """Register the handler for one ``event`` (usable as a decorator); one per event.

        ``transaction=True`` (a PostgreSQL store): the handler is called as
        ``handler(event, connection)`` inside the transaction that marks the event done, so
        its writes through ``connection`` and the mark commit together: exactly once. Any
        other handler runs at least once (again, if its process dies before the mark)."""
        if (
            transaction
            and getattr(self.store, "attempt", None) is None
            or (transaction and isinstance(self.store, EventStore))
        ):
            raise ValidationError(
                "transaction",
                "a handler in the event's transaction needs a PostgreSQL store "
                "(Receiver(secret, store='postgresql://…'))",
            )

        def register(fn: Handler) -> Handler:
            if transaction and inspect.iscoroutinefunction(fn):
                raise ValidationError(
                    "transaction",
                    "a handler in the event's transaction is a plain def: it writes through "
                    "the transaction's (sync) connection before the event is marked done",
                )
            if event in self._handlers:
                raise ValueError(
                    f"event: a handler for {event!r} is already registered; "
                    f"one handler per event keeps retries free of repeats"
                )
            self._handlers[event] = _Registered(fn, transaction)
            return fn

        return register(handler) if handler is not None else register

    def default(self, handler: Handler) -> Handler:
        """The handler for events without their own, including unknown ones (see ``problem``)."""
        self._default = _Registered(handler, False)
        return handler

    @property
    def secrets(self) -> list[str]:
        """The secrets accepted right now (an old one drops out when its overlap ends)."""
        now = time.time()
        return [s for s, until in self._secrets if until is None or until > now]

    def rotate_secret(self, new_secret: str, *, overlap: float = 3600) -> None:
        """Accept ``new_secret`` from now on and the current ones for ``overlap`` more seconds."""
        until = time.time() + overlap
        self._secrets = [
            (s, until if u is None else min(u, until)) for s, u in self._secrets if s != new_secret
        ] + [(new_secret, None)]

    # ------------------------------------------------------------------ one delivery

    def handle(self, headers: Mapping[str, str], body: bytes) -> Answer:
        """Judge one delivery and answer it; framework-neutral (the WSGI app calls this)."""
        get = {k.lower(): v for k, v in headers.items()}.get
        if len(body) > self.max_body:
            return self.refuse_oversize(len(body))
        try:
            verify(self.secrets, get("x-timestamp"), body, get("x-signature"), self.tolerance)
        except WebhookVerificationError as exc:
            return self._answer(401, "rejected", f"{exc.reason}: {exc.message}")
        try:
            event = parse_event(body)
        except ValidationError as exc:
            return self._answer(400, "rejected", f"verified but malformed: {exc}")
        # pipelineKey is optional on the wire; a retry repeats the exact body, so its hash
        # dedupes as well when the key is missing.
        key = event.pipeline_key or "sha256:" + hashlib.sha256(body).hexdigest()
        queue = self._ensure_started()
        try:
            first = self.store.claim(key, event.event, event.task_id, body, lease=self.lease)
        except Exception as exc:  # the store is down: not accepted, so the service retries
            log.exception("webhook store unavailable")
            return self._answer(
                503, "rejected", f"store unavailable: {type(exc).__name__}", event=event, key=key
            )
        if not first:
            return self._answer(
                200, "duplicate", "pipelineKey seen before; not run again", event=event, key=key
            )
        answer = self._answer(
            200, "verified", event.problem, event=event, key=key, handling="queued"
        )
        self._leases.hold(key)
        queue.put(key)
        return answer

    def refuse_oversize(self, size: int) -> Answer:
        """The answer to a body over ``max_body`` (WSGI calls it before reading the body)."""
        return self._answer(
            413, "rejected", f"body of {size} bytes is over the {self.max_body}-byte limit"
        )

    def _answer(
        self,
        status: int,
        outcome: str,
        reason: str | None,
        *,
        event: WebhookEvent | None = None,
        key: str | None = None,
        handling: str | None = None,
    ) -> Answer:
        entry = self._log.add(outcome, status, reason, event, key, handling)
        body: dict[str, Any] = {"received": status == 200}
        if outcome == "duplicate":
            body["duplicate"] = True
        if status != 200:
            body["error"] = reason
        return Answer(status, body, entry)

    @property
    def deliveries(self) -> list[Delivery]:
        """The most recent deliveries (``log_size`` of them), oldest first."""
        return self._log.entries()

    def watch(self, callback: Callable[[Delivery], None]) -> Callable[[], None]:
        """Call ``callback(delivery)`` on every new or updated entry; returns unwatch."""
        return self._log.watch(callback)

    # ------------------------------------------------------------------ handler workers

    @property
    def running(self) -> bool:
        return self._queue is not None and self._pid == os.getpid()

    def start(self) -> Receiver:
        """Start the handler workers and take back pending work left in the store."""
        self._ensure_started()
        return self

    def _ensure_started(self) -> WorkQueue:
        # Lazily, and again after a fork: threads do not survive into gunicorn's workers.
        queue = self._queue
        if queue is not None and self.running:
            return queue
        with self._lock:
            if self._queue is not None and self.running:
                return self._queue
            queue = self._queue = WorkQueue()
            self._pid = os.getpid()
            self._threads = [
                threading.Thread(
                    target=self._work_forever,
                    args=(self._queue,),
                    name=f"dubkit-webhook-{i}",
                    daemon=True,
                )
                for i in range(self.workers)
            ]
            self._threads.append(
                threading.Thread(
                    target=self._leases.sweep_forever,
                    args=(self._queue,),
                    name="dubkit-webhook-sweeper",
                    daemon=True,
                )
            )
        for thread in self._threads:
            thread.start()
        push.set_running(self, True)
        return queue

    def _work_forever(self, queue: WorkQueue) -> None:
        while (key := queue.get()) is not None:
            try:
                self._run_handler(key, queue)
            except Exception:  # the store went away (a database restart), or a bug
                log.exception("webhook worker")
                # The event is still pending in the store: try it again in a while (the
                # attempt's transaction, if any, was rolled back with the connection).
                queue.put(key, at=time.time() + STORE_RETRY)
            finally:
                queue.done()

    def _run_handler(self, key: str, queue: WorkQueue) -> None:
        retry_at = None
        with self.store.attempt(key, lease=self.lease) as attempt:
            if attempt is None:  # handled already, or another receiver is running it
                self._leases.let_go(key)
                return
            event = parse_event(attempt.row["body"])
            push.publish(event)  # live task cells: idempotent, so every attempt may tell them
            handler = self._handlers.get(event.event or "", self._default)
            if handler is None:
                attempt.finish()
                self._log.set_handling(key, "no handler", event)
            else:
                retry_at = self._attempt(key, event, handler, attempt)
        # After the attempt's outcome is committed: a retry must find the row free.
        if retry_at is None:
            self._leases.let_go(key)
        else:
            queue.put(key, at=retry_at)

    def _attempt(
        self, key: str, event: WebhookEvent, handler: _Registered, attempt: Attempt
    ) -> float | None:
        """Run the handler once and record how it went; when to try again, or None."""
        try:
            with attempt.savepoint():  # a failed transactional handler's writes are undone
                if handler.transaction:
                    handler.fn(event, attempt.connection)
                else:
                    done = handler.fn(event)
                    if inspect.isawaitable(done):  # an async def handler: awaited right here
                        _worker_loop().run_until_complete(done)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            tried = int(attempt.row["attempts"]) + 1
            if tried >= self.max_attempts:
                attempt.fail(error, None)
                log.error(
                    "webhook %s for task %s is a dead letter after %d attempts: %s",
                    event.event,
                    event.task_id,
                    tried,
                    error,
                )
                self._log.set_handling(key, f"dead: {error}", event)
                return None
            retry_at: float = time.time() + self.retry_delay * 2 ** (tried - 1)
            attempt.fail(error, retry_at)
            log.warning(
                "webhook handler failed (attempt %d/%d), retrying: %s",
                tried,
                self.max_attempts,
                error,
            )
            self._log.set_handling(
                key, f"retrying ({tried}/{self.max_attempts}): {error}", event, final=False
            )
            return retry_at
        attempt.finish()
        self._log.set_handling(key, "handled", event)
        return None

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every queued handler run (retries included) is over; True if it was."""
        queue = self._queue
        return queue is None or queue.wait_idle(timeout)

    def dead_letters(self) -> list[dict[str, Any]]:
        """Events whose handler failed ``max_attempts`` times (with the last error)."""
        return self.store.dead_letters()

    def revive(self, pipeline_key: str | None = None) -> int:
        """Run dead letters again (all, or one), now if this receiver is running."""
        revived = self.store.revive(pipeline_key)
        if revived and self.running:
            self._leases.adopt_orphans(self._queue)  # type: ignore[arg-type]
        return revived

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving; let queued handlers finish for up to ``timeout`` seconds.

        Whatever is still queued stays pending in the store and runs when a receiver on the
        same store starts again: nothing accepted is lost.
        """
        if self._http is not None:
            from ._server import stop_server

            stop_server(self._http)
            self._http, self.url = None, None
        queue = self._queue
        if queue is None:
            return
        queue.wait_idle(timeout, include_scheduled=False)
        self.store.release(queue.close())
        self._queue = None
        for thread in self._threads:
            thread.join(timeout)
        self._threads = []
        push.set_running(self, False)

    # ------------------------------------------------------------------ HTTP

    def wsgi_app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        """The WSGI application (gunicorn ``module:receiver.wsgi_app``, waitress, ...)."""
        from ._server import wsgi_call

        return wsgi_call(self, environ, start_response)

    @property
    def asgi_app(self) -> ASGIApp:
        """The ASGI application: ``app.mount("/webhooks", receiver.asgi_app)`` in FastAPI or
        Starlette (call ``receiver.stop()`` on the app's shutdown), or ``uvicorn
        module:receiver.asgi_app``. The same checks, store and handlers as :meth:`wsgi_app`
        (see :mod:`dubkit.webhooks._asgi`)."""
        return ASGIApp(self)

    def serve(
        self,
        port: int = 0,
        host: str = "127.0.0.1",
        *,
        idle_timeout: float = 10.0,
        request_timeout: float = 30.0,
        max_connections: int = 100,
    ) -> str:
        """Serve in a background thread (a notebook's receiver); returns the URL.

        For the real service the URL must be reachable from the internet (a tunnel such as
        ngrok in front of this port, or a deployed WSGI server). A connection that sends
        nothing for ``idle_timeout`` seconds, or has not sent its whole request
        ``request_timeout`` seconds after connecting, is closed; beyond ``max_connections``
        open at once, new ones are answered 503 (the service retries later).
        """
        from ._server import start_server

        if self._http is not None:
            return self.url  # type: ignore[return-value]
        self._ensure_started()
        self._http, self.url = start_server(
            self,
            host,
            port,
            idle_timeout=idle_timeout,
            request_timeout=request_timeout,
            max_connections=max_connections,
        )
        return self.url

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
