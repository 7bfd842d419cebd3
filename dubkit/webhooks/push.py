"""Process-wide hand-off from local receivers to whatever shows tasks live.

A :class:`~dubkit.webhooks.Receiver` publishes every verified, first-seen event here; a
:class:`~dubkit.widgets.tasks.TaskMonitor` subscribes while it watches and slows its polling
while :func:`active` is true. Neither knows the other: this module is the whole coupling.

>>> unsubscribe = push.subscribe(lambda event: print(event.task_id, event.status))
>>> push.active()          # True while some receiver in this process is running
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .events import WebhookEvent

log = logging.getLogger("dubkit.webhooks")
Listener = Callable[["WebhookEvent"], None]

_lock = threading.Lock()
_listeners: list[Listener] = []
_running: set[int] = set()          # id() of receivers whose workers are running


def subscribe(listener: Listener) -> Callable[[], None]:
    """Call ``listener(event)`` for every event a local receiver accepts; returns unsubscribe."""
    with _lock:
        _listeners.append(listener)

    def unsubscribe() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)
    return unsubscribe


def publish(event: "WebhookEvent") -> None:
    """Hand ``event`` to every listener; a failing listener is logged, never propagated."""
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener(event)
        except Exception:
            log.exception("push listener %r failed", listener)


def active() -> bool:
    """Whether events can arrive by push right now (a receiver in this process is running)."""
    with _lock:
        return bool(_running)


def set_running(receiver: object, running: bool) -> None:
    with _lock:
        (_running.add if running else _running.discard)(id(receiver))
