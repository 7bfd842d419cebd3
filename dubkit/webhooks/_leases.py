"""Which pending events this receiver holds, and taking over the ones nobody holds.

Several receivers may share one store (gunicorn workers, a restarted notebook). Each holds a
time-limited lease on the rows it works on and renews it while it does; a row whose lease
lapsed (its holder crashed) is adopted by whoever sweeps next. Nothing accepted is lost.
"""

from __future__ import annotations

import logging
import threading
import time

from ._queue import WorkQueue
from .postgres_store import PostgresEventStore
from .store import EventStore

log = logging.getLogger("dubkit.webhooks")


class Leases:
    def __init__(
        self, store: EventStore | PostgresEventStore, lease: float, retention: float
    ) -> None:
        self.store, self.lease, self.retention = store, lease, retention
        self._lock = threading.Lock()
        self._held: set[str] = set()

    def hold(self, key: str) -> None:
        with self._lock:
            self._held.add(key)

    def let_go(self, key: str) -> None:
        with self._lock:
            self._held.discard(key)

    def sweep_forever(self, queue: WorkQueue) -> None:
        """Adopt pending rows nobody holds: at start, then every little while."""
        # Looking is cheap (an indexed query, a signal-0 per peer pid), so a peer's crash is
        # noticed within seconds; renewing writes a row per held key, so that waits longer.
        look = max(0.1, min(self.lease / 4, 5.0))
        renew, renewed = max(0.1, min(self.lease / 4, 30.0)), -float("inf")
        try:
            self.store.forget(self.retention)
        except Exception:
            log.exception("webhook store upkeep")
        while True:
            if time.monotonic() - renewed >= renew:
                self._renew()
                renewed = time.monotonic()
            self.adopt_orphans(queue)
            if not queue.sleep(look):
                return

    def adopt_orphans(self, queue: WorkQueue) -> None:
        try:
            for row in self.store.take_orphans(lease=self.lease):
                key = row["pipeline_key"]
                with self._lock:
                    if key in self._held:
                        continue
                    self._held.add(key)
                queue.put(key, at=row["next_at"])
        except Exception:
            log.exception("webhook sweeper")

    def _renew(self) -> None:
        try:
            with self._lock:
                held = set(self._held)
            for key in held:  # heartbeat: our leases never lapse while we hold them
                self.store.extend(key, self.lease)
        except Exception:
            log.exception("webhook sweeper")
