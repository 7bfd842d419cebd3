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
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Budget {self.spent:g} of {self.limit:g} credits spent, {self.left:g} left>"

    @property
    def left(self) -> float:
        return max(0.0, self.limit - self.spent)

    def quote(self, operation: str, body: Any) -> prices.Quote | None:
        """The quote of create ``operation`` with ``body`` (None for a free call)."""
        product = product_of_operation(operation)
        if product is None:
            return None
        seconds, video = None, True
        if product.name == "dubbing":
            if self._material_facts is None:
                raise ValueError("the budget cannot price a dub without its material's length")
            seconds, video = self._material_facts(body.source.material_id)
        return prices.quote_request(product.name, body, seconds=seconds, video=video)

    @contextmanager
    def spending(self, operation: str, body: Any) -> Iterator[None]:
        """Reserve the call's cost (or refuse it) for as long as it is being sent."""
        quote = self.quote(operation, body)
        if quote is None:
            yield
            return
        with self._lock:
            if self.spent + quote.credits > self.limit:
                raise BudgetExceededError(self.limit, self.spent, quote)
            self.spent += quote.credits
        try:
            yield
        except DubkitError as exc:
            if not exc.maybe_committed:  # refused for certain: nothing was charged
                with self._lock:
                    self.spent -= quote.credits
            raise
        # Anything else (Ctrl-C mid-send) may have been charged: the reservation stays.
