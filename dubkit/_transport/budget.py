"""The budget guard: a client-side ceiling on credits, checked before a paid call is sent.

Every product create is quoted from the published price table (:mod:`dubkit.schema.prices`)
and its cost reserved before the request leaves; a call that would pass the budget is refused
with :class:`~dubkit.errors.BudgetExceededError` and never sent. A call refused by the service
for certain (a 400, a 402, a connection never made) gives its reservation back; one that may
have been charged (a success, or an ambiguous failure with ``maybe_committed``) keeps it. So
``spent`` never hides a possible charge; it may count a task the service later refunds (a
failed dub), which errs on the side of spending less. Works the same against the service and
the sandbox: it reads nothing from either but what a dub needs, its material's length.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import BudgetExceededError, DubkitError
from ..schema import prices, product_of_operation

# material id -> (seconds, is video): how the guard learns what a dub will cost.
MaterialFacts = Callable[[str], tuple[float, bool]]


class Budget:
    """``limit`` credits for this client; ``spent`` so far (thread-safe)."""

    def __init__(self, limit: float, material_facts: MaterialFacts | None = None) -> None:
        if not limit >= 0:
            raise ValueError(f"budget must be a number of credits >= 0, got {limit!r}")
        self.limit = float(limit)
        self.spent = 0.0
        self._material_facts = material_facts
        self._keys: set[str] = set()  # idempotency keys of the calls counted in ``spent``
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Budget {self.spent:g} of {self.limit:g} credits spent, {self.left:g} left>"

    @property
    def left(self) -> float:
        return max(0.0, self.limit - self.spent)

    def quote(self, operation: str, body: Any) -> prices.Quote | None:
        """The quote of create ``operation`` with ``body`` (None for a free call: not a
        product's create)."""
        product = product_of_operation(operation)
        if product is None:
            return None
        seconds, video = None, True
        if product.name == "dubbing":
            if self._material_facts is None:
                raise ValueError("the budget cannot price a dub without its material's length")
            seconds, video = self._material_facts(body.source.material_id or body.source.source_url)
        quote = prices.quote_request(product.name, body, seconds=seconds, video=video)
        if quote is None:  # a paid product without a price row: refused, never let through
            raise DubkitError(f"the budget cannot price {product.name} calls (no price row)")
        return quote

    def check(self, quote: prices.Quote) -> None:
        """Refuse, without reserving, a call of ``quote`` that would pass the budget (before
        a step that comes first, such as an upload)."""
        with self._lock:
            self._refuse_over(quote)

    def _refuse_over(self, quote: prices.Quote) -> None:
        """BudgetExceededError if ``quote`` does not fit (the caller holds the lock)."""
        if self.spent + quote.credits > self.limit:
            raise BudgetExceededError(self.limit, self.spent, quote)

    @contextmanager
    def spending(self, operation: str, body: Any, key: str | None = None) -> Iterator[None]:
        """Reserve the call's cost (or refuse it) for as long as it is being sent.

        A call sent again with the idempotency ``key`` of one already counted (the way to find
        out whether a lost answer's call committed) cannot be charged twice: it reserves
        nothing more.
        """
        quote = self.quote(operation, body)
        if quote is None or (key is not None and key in self._keys):
            yield
            return
        with self._lock:
            self._refuse_over(quote)
            self.spent += quote.credits
        try:
            yield
        except DubkitError as exc:
            if not exc.maybe_committed:  # refused for certain: nothing was charged
                with self._lock:
                    self.spent -= quote.credits
                raise
            self._counted(key)
            raise
        except BaseException:
            self._counted(key)  # Ctrl-C mid-send may have been charged: it stays counted
            raise
        self._counted(key)

    def _counted(self, key: str | None) -> None:
        if key is not None:
            with self._lock:
                self._keys.add(key)
