"""The table from operation name to the product function that answers it.

Product modules under ``sandbox/products/`` register their handlers with :func:`handles`; the
HTTP layer finds them by the operation's name from :data:`dubkit.schema.OPERATIONS`. A handler
gets a :class:`Call` (already authenticated and validated) and returns the envelope's ``data``
or raises :class:`~dubkit.sandbox.backend.ServiceError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..schema import Operation, Wire
from .backend import Backend

Handler = Callable[["Call"], Any]
HANDLERS: dict[str, Handler] = {}


@dataclass
class Call:
    backend: Backend
    api_key: str
    op: Operation
    body: Wire | None        # the validated body (POST) or query (GET)
    raw: dict[str, Any]      # the body exactly as sent, for fields the schema keeps as extras
    idempotency_key: str | None
    req_id: str = ""         # the caller's req_id or one made up; never echoed, only logged


def handles(name: str) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of operation ``name``."""
    def register(handler: Handler) -> Handler:
        if name in HANDLERS:
            raise RuntimeError(f"two handlers for {name}")
        HANDLERS[name] = handler
        return handler
    return register
