"""Both clients behind the sync client's face, so one set of scenario tests runs through each.

``Awaited(AsyncClient)`` forwards every attribute; a call whose value is awaitable is awaited to
its end on an event loop running in a thread of its own (as a notebook's loop runs it), an async
iterator is read to a list, and an async resource or task it returns is wrapped in turn. The
values tests look at (Speech, Translation, VoiceList, errors) are the async client's own.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

import dubkit
from dubkit.resources import (
    AsyncCloneResource,
    AsyncDubbingResource,
    AsyncMaterialsResource,
    AsyncTasksResource,
    AsyncTranslateResource,
    AsyncTTSResource,
    AsyncVoicesResource,
)
from dubkit.results import AsyncTask

WRAPPED = (
    dubkit.AsyncClient,
    AsyncTask,
    AsyncCloneResource,
    AsyncDubbingResource,
    AsyncMaterialsResource,
    AsyncTasksResource,
    AsyncTranslateResource,
    AsyncTTSResource,
    AsyncVoicesResource,
)


class Loop:
    """An event loop in a daemon thread; :meth:`run` awaits a coroutine there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, awaitable: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(_awaited(awaitable), self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


async def _awaited(awaitable: Any) -> Any:
    if inspect.isasyncgen(awaitable):
        return [item async for item in awaitable]
    return await awaitable


class Awaited:
    """The proxy. It passes ``isinstance`` as its target's class (dubkit's own code, a task
    cell given a task, sees the object it expects) and sets attributes on the target."""

    def __init__(self, target: Any, loop: Loop) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_loop", loop)

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return type(self._target)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)

    def __repr__(self) -> str:
        return repr(self._target)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if callable(value) and not isinstance(value, type):

            def called(*args: Any, **kwargs: Any) -> Any:
                return self._settled(value(*args, **kwargs))

            return called
        return self._settled(value)

    def _settled(self, value: Any) -> Any:
        if inspect.isawaitable(value) or inspect.isasyncgen(value):
            value = self._loop.run(value)
        if isinstance(value, WRAPPED):
            return Awaited(value, self._loop)
        return value

    @property
    def unwrapped(self) -> Any:
        return self._target


def async_client(api_key: str, base_url: str, loop: Loop, **options: Any) -> Awaited:
    made = loop.run(_make(api_key, base_url, options))
    return Awaited(made, loop)


async def _make(api_key: str, base_url: str, options: dict[str, Any]) -> dubkit.AsyncClient:
    return dubkit.AsyncClient(api_key, base_url, **options)
