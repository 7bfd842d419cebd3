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

import ipywidgets as widgets

from ._threads import start_cell_thread

if TYPE_CHECKING:
    from ..webhooks import Delivery, Receiver

_COLOURS = {
    "verified": "#1a7f37",
    "duplicate": "#57606a",
    "rejected": "#cf222e",
    "recovered": "#0969da",
}
_OUTCOMES = ("verified", "duplicate", "rejected", "recovered")


def delivery_table_html(deliveries: list[Delivery], *, limit: int = 20) -> str:
    """Counts per outcome, then the newest ``limit`` deliveries as a table."""
    counts = Counter(d.outcome for d in deliveries)
    summary = " · ".join(f"{counts[o]} {o}" for o in _OUTCOMES if counts[o]) or "no deliveries yet"
    rows = []
    for d in reversed(deliveries[-limit:]):
        colour = _COLOURS.get(d.outcome, "#57606a")
        stamp = time.strftime("%H:%M:%S", time.localtime(d.at)) + f".{int(d.at % 1 * 1000):03d}"
        what = "; ".join(x for x in (d.reason, d.handling) if x)
        rows.append(
            f"<tr><td>{d.number}</td><td>{stamp}</td>"
            f"<td><b style='color:{colour}'>{d.outcome}</b></td><td>{d.http_status}</td>"
            f"<td>{html.escape(d.event or '')}</td>"
            f"<td><code>{html.escape(d.task_id or '')}</code></td>"
            f"<td>{html.escape(what)}</td></tr>"
        )
    more = (
        (
            f"<div style='color:#57606a;font-size:90%'>showing the newest {limit} of "
            f"{len(deliveries)}</div>"
        )
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


class EventLog(widgets.VBox):
    """A widget over :attr:`Receiver.deliveries` that re-renders (at most 10 times a second)."""

    def __init__(self, receiver: Receiver, *, limit: int = 20, start: bool = True) -> None:
        self.receiver, self.limit = receiver, limit
        self._view = widgets.HTML(self.html())
        super().__init__([self._view])
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
            self._view.value = self.html()
            self._stop.wait(0.1)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        self._view.value = self.html()  # the fallback shows the log as it is now
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = self._view.value
        bundle["text/plain"] = (
            f"EventLog({len(self.receiver.deliveries)} "
            f"deliver{'y' if len(self.receiver.deliveries) == 1 else 'ies'})"
        )
        return bundle
