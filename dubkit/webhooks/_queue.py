"""A small in-memory work queue with due times, for handler runs and their retries."""

from __future__ import annotations

import heapq
import itertools
import threading
import time


class WorkQueue:
    """Items come out no earlier than their due time; :meth:`close` wakes every waiter."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str]] = []
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._busy = 0
        self._closed = False

    def put(self, item: str, at: float = 0.0) -> None:
        with self._cond:
            heapq.heappush(self._heap, (at, next(self._order), item))
            self._cond.notify()

    def get(self) -> str | None:
        """The next due item (marked busy until :meth:`done`), or None once closed."""
        with self._cond:
            while not self._closed:
                wait = self._heap[0][0] - time.time() if self._heap else None
                if wait is not None and wait <= 0:
                    self._busy += 1
                    return heapq.heappop(self._heap)[2]
                self._cond.wait(wait)
            return None

    def done(self) -> None:
        with self._cond:
            self._busy -= 1
            self._cond.notify_all()

    def wait_idle(self, timeout: float | None = None, *, include_scheduled: bool = True) -> bool:
        """Block until nothing is running (and, by default, nothing is waiting for its time)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._busy or (
                self._heap and (include_scheduled or self._heap[0][0] <= time.time())
            ):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(0.05 if left is None else min(left, 0.05))
            return True

    def sleep(self, seconds: float) -> bool:
        """Wait ``seconds`` unless closed first; False once closed."""
        with self._cond:
            if not self._closed:
                self._cond.wait(seconds)
            return not self._closed

    def close(self) -> list[str]:
        """Stop handing out items; returns those never handed out."""
        with self._cond:
            self._closed = True
            left = [item for _, _, item in self._heap]
            self._heap.clear()
            self._cond.notify_all()
            return left

    def __len__(self) -> int:
        with self._cond:
            return len(self._heap)
