"""Process-wide hand-off from local receivers to whatever shows tasks live.

A :class:`~dubkit.webhooks.Receiver` publishes every verified, first-seen event here; a
:class:`~dubkit.widgets.tasks.TaskMonitor` subscribes while it watches and slows its polling
while :func:`active` is true. Neither knows the other: this module is the whole coupling.

>>> unsubscribe = push.subscribe(lambda event: print(event.task_id, event.status))
>>> push.active()          # True while some receiver in this process is running
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ._listeners import Listeners

if TYPE_CHECKING:
    from .events import WebhookEvent

Listener = Callable[["WebhookEvent"], None]

_lock = threading.Lock()
_listeners = Listeners("push listener")
_running: set[int] = set()  # id() of receivers whose workers are running


def subscribe(listener: Listener) -> Callable[[], None]:
    """Call ``listener(event)`` for every event a local receiver accepts; returns unsubscribe."""
    return _listeners.add(listener)


def publish(event: WebhookEvent) -> None:
    """Hand ``event`` to every listener; a failing listener is logged, never propagated."""
    _listeners.call(event)


def active() -> bool:
    """Whether events can arrive by push right now (a receiver in this process is running)."""
    with _lock:
        return bool(_running)


def set_running(receiver: object, running: bool) -> None:
    with _lock:
        (_running.add if running else _running.discard)(id(receiver))
