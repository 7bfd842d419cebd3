"""The receiver's log of deliveries: what arrived, what became of it, and who is watching."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._listeners import Listeners

if TYPE_CHECKING:
    from .events import WebhookEvent

log = logging.getLogger("dubkit.webhooks")


@dataclass
class Delivery:
    """One entry of the receiver's log: what arrived and what became of it.

    ``outcome`` is ``verified``, ``duplicate``, ``rejected`` (``reason`` says why) or
    ``recovered`` (pending work taken from the store: after a restart, or ``revive()``).
    ``handling`` follows a verified event: ``queued``, ``handled``, ``no handler``,
    ``retrying (n/max): error``, ``dead: error``.
    """

    number: int
    at: float
    outcome: str
    http_status: int
    reason: str | None = None
    event: str | None = None
    pipeline_key: str | None = None
    task_id: str | None = None
    handling: str | None = None


class DeliveryLog:
    """The newest ``size`` deliveries; every new or changed entry is logged and told to watchers."""

    def __init__(self, size: int) -> None:
        self._entries: deque[Delivery] = deque(maxlen=size)
        self._open: dict[str, Delivery] = {}  # pipeline key -> entry whose handling goes on
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._watchers = Listeners("webhook log watcher")

    def entries(self) -> list[Delivery]:
        with self._lock:
            return list(self._entries)

    def watch(self, callback: Callable[[Delivery], None]) -> Callable[[], None]:
        return self._watchers.add(callback)

    def add(
        self,
        outcome: str,
        status: int,
        reason: str | None,
        event: WebhookEvent | None,
        key: str | None,
        handling: str | None = None,
    ) -> Delivery:
        entry = Delivery(
            next(self._numbers),
            time.time(),
            outcome,
            status,
            reason,
            event.event if event else None,
            key,
            event.task_id if event else None,
            handling,
        )
        notable = outcome == "rejected" or (outcome == "verified" and reason)
        log.log(
            logging.WARNING if notable else logging.INFO,
            "webhook %s, HTTP %s, event %s, task %s%s",
            outcome,
            status,
            entry.event,
            entry.task_id,
            f": {reason}" if reason else "",
        )
        with self._lock:
            self._entries.append(entry)
            if handling and key:
                self._open[key] = entry
        self._watchers.call(entry)
        return entry

    def set_handling(
        self, key: str, handling: str, event: WebhookEvent, final: bool = True
    ) -> None:
        with self._lock:
            entry = self._open.get(key)
        if entry is None:  # pending work taken from the store: a restart, or revive()
            entry = self.add(
                "recovered", 200, "taken from the store, not from a delivery", event, key, handling
            )
        with self._lock:
            entry.handling = handling
            if final:  # only unfinished work needs finding again
                self._open.pop(key, None)
        self._watchers.call(entry)
