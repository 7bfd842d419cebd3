"""The pipeline's workers, shared fairly across API keys.

Every asynchronous task (a dub, a clone, async TTS or translation) runs here. With one
first-come queue, a student's short dub waited behind another student's whole queue of long
dubs; here each key has its own queue, and a free worker takes the oldest job of the key with
the fewest jobs running, the key served longest ago first among equals. One key runs at most
``per_key`` jobs at once: the sandbox keeps one worker more than that, so a newcomer's job
starts at once instead of after a whole job of someone else's, and one learner alone still
runs as many jobs at once as before. Webhook delivery shares the
same rule (:class:`dubkit.sandbox.delivery_pool.FairPool`, which also caps each key).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger("dubkit.sandbox")


class FairWorkPool:
    """Runs ``job()`` calls on ``workers`` threads, keys taking turns, at most ``per_key`` of
    one key's at once (fewer than ``workers`` keeps a worker free for the next key's job)."""

    def __init__(
        self, workers: int, *, per_key: int | None = None, name: str = "sandbox-work"
    ) -> None:
        self.workers = workers
        self.per_key = per_key or workers
        # Never more jobs handed over than workers, so the executor's own queue stays empty
        # and the turn is decided here.
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix=name)
        self._lock = threading.Lock()
        self._queued: dict[str, deque[Callable[[], None]]] = {}
        self._running: Counter[str] = Counter()
        self._served: dict[str, int] = {}  # key -> the turn it was last served at
        self._turn = 0
        self._closed = False

    def submit(self, key: str, job: Callable[[], None]) -> None:
        with self._lock:
            if self._closed:
                return
            self._queued.setdefault(key, deque()).append(job)
        self._dispatch()

    def queued(self) -> dict[str, int]:
        """Jobs waiting, per key."""
        with self._lock:
            return {k: len(q) for k, q in self._queued.items() if q}

    def _dispatch(self) -> None:
        with self._lock:
            while not self._closed and sum(self._running.values()) < self.workers:
                waiting = [
                    k for k, q in self._queued.items() if q and self._running[k] < self.per_key
                ]
                if not waiting:
                    return
                key = min(waiting, key=lambda k: (self._running[k], self._served.get(k, 0)))
                job = self._queued[key].popleft()
                self._turn += 1
                self._served[key] = self._turn
                self._running[key] += 1
                self._executor.submit(self._run, key, job)

    def _run(self, key: str, job: Callable[[], None]) -> None:
        try:
            job()
        except Exception:  # a job ends its own task; a bug here must not stop the pool
            log.exception("sandbox work for a key failed")
        finally:
            with self._lock:
                self._running[key] -= 1
            self._dispatch()

    def shutdown(self) -> None:
        """Drop what waits; running jobs finish on their own (as the executor's would)."""
        with self._lock:
            self._closed = True
            self._queued.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)
