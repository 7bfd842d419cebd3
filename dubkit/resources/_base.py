"""What every resource shares: the transport, async creates, paged listing, concurrent chunks."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar

from tqdm.auto import tqdm

from .._transport import AsyncTransport, Transport
from .._transport.plans import Call, Plan, StartTask, Together
from .._wire import checked
from ..errors import DubkitError, IdempotencyConflictError, ValidationError
from ..frontends import in_voila
from ..results import AsyncTask, Task, task_for
from ..schema import Page, TaskContext, Wire, product_of_operation

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")
S = TypeVar("S", bound="Resource")


class Resource:
    """A product's calls, sent through the client's one :class:`~dubkit._transport.Transport`."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._transport.base_url}>"

    def _run(self, plan: Plan[T]) -> T:
        """Run a plan through this resource's transport: its result (sync), or an awaitable
        of it (the async client's transport)."""
        return self._transport.run(plan)

    async def _arun(self, plan: Plan[T]) -> T:
        """Run a plan through the async client's transport (:class:`AsyncTransport`)."""
        transport: AsyncTransport = self._transport  # type: ignore[assignment]
        return await transport.run(plan)

    def _call(self, op: str, payload: Any = None, idempotency_key: str | None = None) -> Plan[Any]:
        """Operation ``op`` as a plan: the envelope's data."""
        return (yield Call(op, payload, idempotency_key=idempotency_key))

    def _start(
        self,
        op: str,
        body: Wire,
        *,
        idempotency_key: str | None = None,
        extra_data: Mapping[str, Any] | None = None,
        context: TaskContext | None = None,
    ) -> Plan[Task]:
        """Send an asynchronous create; the accepted :class:`Task` (an :class:`AsyncTask` for
        the async client).

        The task holds its product's :class:`~dubkit.schema.TaskContext` (made from ``body``
        unless given) for its typed result. ``extra_data`` joins the body's ``extraData``; the
        transport adds the idempotency key there too (``dubkitIdempotencyKey``).
        """
        product = product_of_operation(op)
        if product is None:
            raise ValueError(f"{op} is not a product's create operation")
        if extra_data:  # checked again whole: free-form data may hold what JSON cannot
            own = getattr(body, "extra_data", None) or {}
            merged = {
                **body.model_dump(by_alias=True, exclude_none=True),
                "extraData": {**own, **extra_data},
            }
            body = checked(type(body), merged)
        data, key = yield StartTask(op, body, idempotency_key=idempotency_key)
        accepted = self._transport.read(product.acceptance, data)
        return task_for(
            self._transport,
            accepted.task_id,
            task_type=getattr(accepted, "task_type", None) or product.task_type_of(body),
            status=getattr(accepted, "status", None) or "running",
            created_at=accepted.created_at,
            idempotency_key=key,
            context=context or product.context.of(body),
        )

    def _page_of(self, op: str, query: Mapping[str, Any]) -> Plan[Page]:
        """One page of list operation ``op`` (``query`` holds its page number and size)."""
        data = yield Call(op, dict(query))
        return self._transport.read(Page, data)

    def _pages(
        self,
        op: str,
        query: Mapping[str, Any],
        page_size: int,
        limit: int | None = None,
        totals: list[int] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """The records of list operation ``op`` across pages (see :class:`PageWalk`), read
        page by page as they are taken (the sync client's)."""
        walk = PageWalk(query, page_size, limit, totals)
        while (asked := walk.next_query()) is not None:
            yield from walk.take(self._transport.run(self._page_of(op, asked)))

    def _all_pages(
        self,
        op: str,
        query: Mapping[str, Any],
        page_size: int,
        limit: int | None = None,
        totals: list[int] | None = None,
    ) -> Plan[list[dict[str, Any]]]:
        """Every record of list operation ``op``, as one plan (see :class:`PageWalk`)."""
        walk, records = PageWalk(query, page_size, limit, totals), []
        while (asked := walk.next_query()) is not None:
            records.extend(walk.take((yield from self._page_of(op, asked))))
        return records


class Offloaded(Generic[S]):
    """A resource of the async client whose calls are its sync twin's, run in a worker thread
    (:func:`asyncio.to_thread`, which keeps the caller's context), so the event loop never
    waits on them. Uploads, clones and dubs are file and media work as much as HTTP: hashing
    and reading a file, probing it with ffmpeg, parts sent concurrently (bounded by
    ``concurrency``), a batch's ledger. Running the one sync implementation keeps each rule in
    one place; a task they start comes back as an :class:`~dubkit.results.AsyncTask`."""

    def __init__(self, transport: AsyncTransport, sync: S) -> None:
        self._transport, self._sync = transport, sync

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._transport.base_url}>"

    async def _iterate(self, records: Iterator[T]) -> AsyncIterator[T]:
        """Each item of a sync iterator (a paged listing), each step taken off the loop."""
        done = object()
        while (item := await asyncio.to_thread(next, records, done)) is not done:
            yield item  # type: ignore[misc]


def offloaded(
    method: Callable[Concatenate[Any, P], R],
) -> Callable[Concatenate[Offloaded[Any], P], Coroutine[Any, Any, R]]:
    """The async version of a sync resource's ``method`` (see :class:`Offloaded`): the same
    parameters and answer, awaited."""

    @functools.wraps(method)
    async def run(self: Offloaded[Any], *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(getattr(self._sync, method.__name__), *args, **kwargs)

    return run


def offloaded_task(
    method: Callable[Concatenate[Any, P], Task],
) -> Callable[Concatenate[Offloaded[Any], P], Coroutine[Any, Any, AsyncTask]]:
    """:func:`offloaded` for a call that starts a task: the task as an :class:`AsyncTask`."""

    @functools.wraps(method)
    async def run(self: Offloaded[Any], *args: P.args, **kwargs: P.kwargs) -> AsyncTask:
        task = await asyncio.to_thread(getattr(self._sync, method.__name__), *args, **kwargs)
        return AsyncTask.of(task, self._transport)

    return run


class PageWalk:
    """Where a walk over a list's pages stands: the next page's query, then what of its answer
    to take. It ends when ``total`` (or ``limit``) records were seen, on an empty page, or on
    a page equal to the one before: a service that ignores the page number (or a ``total``
    larger than what it holds) would otherwise be asked forever. Each page's total goes to
    ``totals`` when given."""

    def __init__(
        self,
        query: Mapping[str, Any],
        page_size: int,
        limit: int | None = None,
        totals: list[int] | None = None,
    ) -> None:
        self.query, self.page_size, self.limit, self.totals = dict(query), page_size, limit, totals
        self.current, self.seen, self.ended = 1, 0, False
        self._previous: list[dict[str, Any]] | None = None

    def next_query(self) -> dict[str, Any] | None:
        if self.ended:
            return None
        return {**self.query, "current_page": self.current, "page_size": self.page_size}

    def take(self, page: Page) -> list[dict[str, Any]]:
        if self.totals is not None:
            self.totals.append(page.total or 0)
        if page.records == self._previous:
            self.ended = True
            return []
        self._previous = page.records
        room = len(page.records) if self.limit is None else max(0, self.limit - self.seen)
        taken = page.records[:room]
        self.seen += len(taken)
        self.current += 1
        limited = self.limit is not None and self.seen >= self.limit
        self.ended = limited or not page.records or self.seen >= (page.total or 0)
        return taken


class CastLike(Protocol):
    """What a cast (:class:`dubkit.Cast`) gives the calls that ask for voices."""

    def lines_for(self, lines: Sequence[Any], locale: str | None = None) -> list[dict[str, Any]]:
        """TTS lines, each line's role replaced by its voice in ``locale``."""
        ...

    def speaker_voices(self, speakers: Mapping[int, str], locale: str) -> list[str]:
        """The voice ids of speakers 1, 2, ... mapped to roles."""
        ...


def cast_lines(lines: Any, cast: CastLike | None, voice: Any, locale: str | None) -> Any:
    """``lines`` as they are, or, with a ``cast``, each role-named line given its voice."""
    if cast is None:
        return lines
    if voice is not None:
        raise ValidationError("voice", "is given by the cast: pass cast= or voice=, not both")
    if isinstance(lines, Mapping):
        raise ValidationError("lines", "a script spoken by a cast is a list of lines, not a body")
    return cast.lines_for(as_list(lines), locale)


def as_list(items: Any) -> list[Any]:
    """A plain string is one item (one segment, one line), never a sequence of characters."""
    return [items] if isinstance(items, str) else list(items)


def texts_of(items: Any, field: str) -> list[str]:
    """The texts of lines or segments given as a create takes them: strings, dicts with
    ``text``, or a raw wire body holding them in ``field`` (what a quote prices)."""
    if isinstance(items, Mapping) and field in items:
        items = items[field]
    return [item if isinstance(item, str) else str(item.get("text", "")) for item in as_list(items)]


def chunked(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def chunk_failure(exc: DubkitError) -> str:
    """The per-line message for a chunk whose request failed; an accepted-but-lost chunk is
    said to be so, because running it again would be charged again."""
    if isinstance(exc, IdempotencyConflictError) and exc.first_attempt_accepted:
        return (
            f"accepted, answer lost: this chunk was done and charged once (idempotency key "
            f"{exc.idempotency_key}); find it in client.tasks.list() rather than re-running"
        )
    return f"request failed: {exc}"


def run_chunks(
    chunks: Sequence[T],
    send: Callable[[T], Plan[R]],
    *,
    concurrency: int,
    progress: bool,
    description: str,
    weight: Callable[[T], int],
    on_error: Callable[[T, DubkitError], R] | None = None,
) -> Plan[list[R]]:
    """Send chunks concurrently (``concurrency`` at a time: threads for the sync client, tasks
    on the loop for the async one); results come back in the chunks' order.

    The batch helpers' one policy: everything is validated before the first chunk is sent;
    a chunk whose request fails becomes ``on_error(chunk, error)`` (its lines marked failed
    with :func:`chunk_failure`) so the chunks that succeeded are never lost. Without
    ``on_error`` the first error stops the rest and is raised.
    """

    def guarded(chunk: T) -> Plan[R]:
        try:
            return (yield from send(chunk))
        except DubkitError as exc:
            if on_error is None:
                raise
            return on_error(chunk, exc)

    total = sum(weight(c) for c in chunks)
    # Voila shows a cell's outputs after it ran: a bar closed by then reads "model not
    # found" there, so it stays (full) instead.
    with tqdm(total=total, desc=description, disable=not progress, leave=in_voila()) as bar:
        results: list[R] = yield Together(
            [guarded(chunk) for chunk in chunks],
            concurrency,
            on_done=lambda i: bar.update(weight(chunks[i])),
        )
    return results
