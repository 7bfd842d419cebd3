"""A product call written once as a plan: the steps it takes, run by either transport.

A plan is a generator that yields what it needs done (:class:`Call` an operation,
:class:`StartTask`, :class:`Sleep`, :class:`Offload` blocking work, :class:`Together` several
plans at once) and is sent what came of it; an error of a step is thrown into it, where it may
be caught. Its return value is the call's result. ``Transport.run(plan)`` runs it to the end in
the calling thread; ``await AsyncTransport.run(plan)`` runs it on the event loop, blocking work
in a thread and ``Together`` as tasks bounded by a semaphore. So a rule of a call (what is
checked, in which order it asks, what it makes of the answers) exists once, for both clients.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """An API operation by name (``Transport.call``): the envelope's data."""

    name: str
    payload: Any = None
    idempotency_key: str | None = None
    deadline: float | None = None


@dataclass(frozen=True)
class StartTask:
    """An asynchronous create (``Transport.start_task``): ``(acceptance, idempotency key)``."""

    name: str
    payload: Any = None
    idempotency_key: str | None = None


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Offload:
    """Blocking work (file reads, decoding, fetching a result's media): inline for the sync
    transport, in a worker thread for the async one, so it never stalls the event loop."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Together:
    """Run ``plans`` at most ``limit`` at a time; their results in their order. Each plan
    handles its own errors; one that still raises stops the rest. ``on_done(i)`` is told as
    plan ``i`` ends (a progress bar)."""

    plans: Sequence[Generator[Any, Any, Any]]
    limit: int
    on_done: Callable[[int], object] | None = None


Step = Call | StartTask | Sleep | Offload | Together
Plan = Generator[Step, Any, T]


def done(value: T) -> Plan[T]:
    """A plan that needs no step (a result known already)."""
    return value
    yield  # pragma: no cover  (makes this a generator)


# --------------------------------------------------------------------------- the two drivers


class Calls(Protocol):
    """What the sync driver needs of a transport (``Transport``)."""

    def call(
        self,
        name: str,
        payload: Any = None,
        *,
        idempotency_key: str | None = None,
        deadline: float | None = None,
    ) -> Any: ...

    def start_task(
        self, name: str, payload: Any = None, *, idempotency_key: str | None = None
    ) -> tuple[Any, str]: ...


class AsyncCalls(Protocol):
    """What the async driver needs of a transport (``AsyncTransport``)."""

    async def call(
        self,
        name: str,
        payload: Any = None,
        *,
        idempotency_key: str | None = None,
        deadline: float | None = None,
    ) -> Any: ...

    async def start_task(
        self, name: str, payload: Any = None, *, idempotency_key: str | None = None
    ) -> tuple[Any, str]: ...


def run_sync(plan: Plan[T], transport: Calls) -> T:
    """Run ``plan`` to its end in this thread."""
    got: Any = None
    error: Exception | None = None
    while True:
        try:
            step = plan.throw(error) if error is not None else plan.send(got)
        except StopIteration as ended:
            return ended.value  # type: ignore[no-any-return]
        got, error = None, None
        try:
            got = _sync_step(step, transport)
        except Exception as exc:  # the plan may catch it (a chunk marked failed, a poll)
            error = exc


def _sync_step(step: Step, transport: Calls) -> Any:
    if isinstance(step, Call):
        return transport.call(
            step.name, step.payload, idempotency_key=step.idempotency_key, deadline=step.deadline
        )
    if isinstance(step, StartTask):
        return transport.start_task(step.name, step.payload, idempotency_key=step.idempotency_key)
    if isinstance(step, Sleep):
        time.sleep(step.seconds)
        return None
    if isinstance(step, Offload):
        return step.fn(*step.args)
    results: list[Any] = [None] * len(step.plans)
    with ThreadPoolExecutor(max_workers=max(1, step.limit)) as pool:
        futures = {pool.submit(run_sync, p, transport): i for i, p in enumerate(step.plans)}
        try:
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                if step.on_done is not None:
                    step.on_done(futures[future])
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return results


async def run_async(plan: Plan[T], transport: AsyncCalls) -> T:
    """Run ``plan`` to its end on the event loop; blocking work goes to a thread."""
    got: Any = None
    error: Exception | None = None
    while True:
        try:
            step = plan.throw(error) if error is not None else plan.send(got)
        except StopIteration as ended:
            return ended.value  # type: ignore[no-any-return]
        got, error = None, None
        try:
            got = await _async_step(step, transport)
        except Exception as exc:
            error = exc


async def _async_step(step: Step, transport: AsyncCalls) -> Any:
    if isinstance(step, Call):
        return await transport.call(
            step.name, step.payload, idempotency_key=step.idempotency_key, deadline=step.deadline
        )
    if isinstance(step, StartTask):
        return await transport.start_task(
            step.name, step.payload, idempotency_key=step.idempotency_key
        )
    if isinstance(step, Sleep):
        await asyncio.sleep(step.seconds)
        return None
    if isinstance(step, Offload):
        return await asyncio.to_thread(step.fn, *step.args)
    bound = asyncio.Semaphore(max(1, step.limit))

    async def one(i: int, plan: Plan[Any]) -> Any:
        async with bound:
            result = await run_async(plan, transport)
        if step.on_done is not None:
            step.on_done(i)
        return result

    tasks = [asyncio.ensure_future(one(i, p)) for i, p in enumerate(step.plans)]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        raise
