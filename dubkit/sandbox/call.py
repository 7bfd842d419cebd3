"""What a handler gets: one authenticated, validated call to one operation.

A handler is a plain function ``handler(call: Call[Body]) -> data`` where ``Body`` is the
operation's request model from :data:`dubkit.schema.OPERATIONS` (its body for a POST, its query
for a GET). It answers the envelope's ``data`` or raises
:class:`~dubkit.sandbox.service_error.ServiceError`. Which handler answers which operation is the
explicit table :data:`dubkit.sandbox.products.routes.HANDLERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..schema import Operation, Wire
from .backend import Backend

Body = TypeVar("Body", bound=Wire | None)


@dataclass(frozen=True)
class Call(Generic[Body]):
    backend: Backend
    api_key: str
    op: Operation
    body: Body  # the validated body (POST) or query (GET), typed per operation
    raw: dict[str, Any]  # the body exactly as sent, for fields the schema keeps as extras
    idempotency_key: str | None
    req_id: str = ""  # the caller's req_id or one made up; never echoed, only logged


Handler = Callable[[Call[Any]], Any]
