"""Per-key rate and concurrency limits, as the service's usage guide says apply: a call over
either is ``429`` with ``Retry-After``, before anything is read, committed or charged.

* *choice* Rate: a token bucket per API key, ``rate`` calls a second with bursts of ``burst``.
  Concurrency: at most ``concurrency`` calls of one key in progress at once. The guide gives no
  numbers; the defaults (:data:`DEFAULTS`) are far above what a class of 30 running the
  notebooks on one key sends, so only a test or a demo that lowers them meets a 429
  (``POST /_sandbox/throttle``). ``0`` turns a limit off.
* ``Retry-After`` is in whole seconds: when the bucket will hold a token again (at least 1), or
  1 for a key at its concurrency limit.
* Refusals are counted per key (``GET /_sandbox/throttle``), so a test can see it was throttled.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from .service_error import ServiceError

DEFAULTS = {"rate": 200.0, "burst": 400, "concurrency": 256}


@dataclass
class _Account:
    tokens: float
    stamp: float
    running: int = 0
    refused: int = 0


@dataclass
class Throttle:
    """The limits and each key's bucket; thread-safe (calls of many keys arrive at once)."""

    rate: float = DEFAULTS["rate"]
    burst: int = int(DEFAULTS["burst"])
    concurrency: int = int(DEFAULTS["concurrency"])
    _accounts: dict[str, _Account] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_settings(cls, saved: dict[str, float]) -> Throttle:
        limits = {**DEFAULTS, **saved}
        return cls(float(limits["rate"]), int(limits["burst"]), int(limits["concurrency"]))

    def settings(self) -> dict[str, float]:
        return {"rate": self.rate, "burst": self.burst, "concurrency": self.concurrency}

    def configure(self, rate: float | None, burst: int | None, concurrency: int | None) -> None:
        with self._lock:
            self.rate = self.rate if rate is None else rate
            self.burst = self.burst if burst is None else burst
            self.concurrency = self.concurrency if concurrency is None else concurrency
            self._accounts.clear()  # new limits start with full buckets

    def refused(self) -> dict[str, int]:
        with self._lock:
            return {key: a.refused for key, a in self._accounts.items() if a.refused}

    def count_refusal(self, api_key: str) -> None:
        """Count a 429 given for another reason (the ``error429`` fault)."""
        with self._lock:
            self._accounts.setdefault(api_key, _Account(self.burst, time.monotonic())).refused += 1

    @contextmanager
    def admitted(self, api_key: str) -> Iterator[None]:
        """Hold one of the key's places while the call runs, or refuse it with a 429."""
        with self._lock:
            now = time.monotonic()
            account = self._accounts.setdefault(api_key, _Account(self.burst, now))
            if self.rate > 0:
                account.tokens = min(self.burst, account.tokens + (now - account.stamp) * self.rate)
                account.stamp = now
                if account.tokens < 1:
                    account.refused += 1
                    wait = max(1, math.ceil((1 - account.tokens) / self.rate))
                    raise ServiceError(
                        429,
                        f"Too many requests: this key may send {self.rate:g} "
                        f"call{'' if self.rate == 1 else 's'} a second (bursts of "
                        f"{self.burst}); retry after {wait} s",
                        {"Retry-After": str(wait)},
                    )
            if self.concurrency > 0 and account.running >= self.concurrency:
                account.refused += 1
                raise ServiceError(
                    429,
                    f"Too many requests: this key may have {self.concurrency} calls in "
                    f"progress, it has {account.running}; retry after 1 s",
                    {"Retry-After": "1"},
                )
            if self.rate > 0:
                account.tokens -= 1
            account.running += 1
        try:
            yield
        finally:
            with self._lock:
                account.running -= 1
