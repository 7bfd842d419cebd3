"""Credits: a key is charged before work starts (402 when it cannot pay) and refunded after.

A crash must not cost the caller: each request keeps a ledger of its charges, the tasks it made
and the async work it holds back, so :meth:`Credits.undo_on_crash` can take all of it back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from .service_error import ServiceError
from .store import Store

DEFAULT_CREDITS = 1_000_000.0


@dataclass
class RequestLedger:
    charges: list[tuple[str, float]] = field(default_factory=list)  # (api_key, amount)
    tasks: list[str] = field(default_factory=list)  # task ids it made
    starts: list[Callable[[], object]] = field(default_factory=list)  # async work, held back


# What the request this thread is serving has done so far (see Credits.undo_on_crash).
_request: ContextVar[RequestLedger | None] = ContextVar("sandbox_request", default=None)
# The task whose work this thread is doing: its refunds are counted on it (see refund).
_working_on: ContextVar[str | None] = ContextVar("sandbox_task", default=None)


def request_ledger() -> RequestLedger | None:
    """The ledger of the request this thread is serving; None outside one (a worker thread)."""
    return _request.get()


class Credits:
    """The credits half of :class:`~dubkit.sandbox.backend.Backend`, over its ``store``."""

    store: Store

    def set_credits(self, api_key: str, credits: float) -> None:
        self.store.execute("UPDATE keys SET credits = ? WHERE api_key = ?", (credits, api_key))

    def charge(self, api_key: str, amount: float, what: str) -> None:
        """Take ``amount`` credits or refuse with 402 before any work starts."""
        cursor = self.store.execute(
            "UPDATE keys SET credits = credits - ? WHERE api_key = ? AND credits >= ?",
            (amount, api_key, amount),
        )
        if cursor.rowcount == 0:
            key = self.store.one("SELECT credits FROM keys WHERE api_key = ?", (api_key,))
            left = key["credits"]  # type: ignore[index]
            raise ServiceError(
                402, f"insufficient credits: {what} needs {amount:g} credits, this key has {left:g}"
            )
        ledger = _request.get()
        if ledger is not None:
            ledger.charges.append((api_key, amount))

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
            self.store.store_many(
                "DELETE FROM tasks WHERE task_id = ?", [(task_id,) for task_id in ledger.tasks]
            )
            raise
        finally:
            _request.reset(token)
            for start in [] if crashed else ledger.starts:
                start()

    def refund(self, api_key: str, amount: float) -> None:
        task_id = _working_on.get()
        with self.store.transaction() as db:
            db.execute("UPDATE keys SET credits = credits + ? WHERE api_key = ?", (amount, api_key))
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
