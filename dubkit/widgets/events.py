"""A live list of what a webhook receiver got: verified, duplicate, rejected (and why).

>>> receiver = dubkit.webhooks.Receiver(secret)
>>> EventLog(receiver)          # newest first; updates as deliveries arrive and handlers run
"""

from __future__ import annotations

import html
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..frontends.channel import LiveHTML
from ..views.palette import muted
from ._threads import start_cell_thread

if TYPE_CHECKING:
    from ..webhooks import Delivery, Receiver

_MARKS = {"verified": "✓", "duplicate": "=", "rejected": "✗", "recovered": "↻"}
_OUTCOMES = ("verified", "duplicate", "rejected", "recovered")


def delivery_table_html(deliveries: list[Delivery], *, limit: int = 20) -> str:
    """Counts per outcome, then the newest ``limit`` deliveries as a table."""
    counts = Counter(d.outcome for d in deliveries)
    summary = " · ".join(f"{counts[o]} {o}" for o in _OUTCOMES if counts[o]) or "no deliveries yet"
    rows = []
    for d in reversed(deliveries[-limit:]):
        stamp = time.strftime("%H:%M:%S", time.localtime(d.at)) + f".{int(d.at % 1 * 1000):03d}"
        what = "; ".join(x for x in (d.reason, d.handling) if x)
        rows.append(
            f"<tr><td>{d.number}</td><td>{stamp}</td>"
            f"<td><b>{_MARKS.get(d.outcome, '')} {d.outcome}</b></td><td>{d.http_status}</td>"
            f"<td>{html.escape(d.event or '')}</td>"
            f"<td><code>{html.escape(d.task_id or '')}</code></td>"
            f"<td>{html.escape(what)}</td></tr>"
        )
    more = (
        muted(f"showing the newest {limit} of {len(deliveries)}", tag="div", size="90%")
        if len(deliveries) > limit
        else ""
    )
    return (
        f"<div><b>webhook deliveries:</b> {html.escape(summary)}</div>"
        "<table class='dubkit-events'><thead><tr><th>#</th><th>at</th><th>outcome</th>"
        "<th>HTTP</th><th>event</th><th>task</th><th>why / handler</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + more
    )


class EventLog(LiveHTML):
    """A widget over :attr:`Receiver.deliveries` that re-renders (at most 10 times a second)."""

    def __init__(self, receiver: Receiver, *, limit: int = 20, start: bool = True) -> None:
        self.receiver, self.limit = receiver, limit
        super().__init__(self.html())
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._unwatch: Any = None
        self._thread: threading.Thread | None = None
        if start:
            self.start()

    def html(self) -> str:
        return delivery_table_html(self.receiver.deliveries, limit=self.limit)

    def start(self) -> None:
        if self._thread is None:
            self._unwatch = self.receiver.watch(lambda _delivery: self._dirty.set())
            self._thread = start_cell_thread(self._refresh, name="dubkit-event-log")

    def stop(self) -> None:
        self._stop.set()
        self._dirty.set()
        if self._unwatch is not None:
            self._unwatch()

    def _refresh(self) -> None:
        # Coalesce: a burst of deliveries costs one render, not one per delivery.
        while not self._stop.is_set():
            self._dirty.wait()
            self._dirty.clear()
            self.value = self.html()
            self._stop.wait(0.1)

    def __repr__(self) -> str:
        count = len(self.receiver.deliveries)
        return f"EventLog({count} deliver{'y' if count == 1 else 'ies'})"

    def fallback_html(self) -> str:
        self.value = self.html()  # the fallback shows the log as it is now
        return self.value
