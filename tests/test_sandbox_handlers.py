"""The sandbox's handler table: each of the 22 operations is answered by a handler of its own,
typed with the request model the operation carries, so a handler reads ``call.body`` fields
the schema really parsed (the table itself refuses a missing or unknown operation on import)."""

from __future__ import annotations

import inspect
import typing

import pytest

from dubkit.sandbox.call import Call
from dubkit.sandbox.products.routes import HANDLERS
from dubkit.schema import OPERATIONS


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_each_operation_has_a_handler_typed_with_its_request_model(op):
    handler = HANDLERS[op.name]
    first = next(iter(inspect.signature(handler).parameters))
    annotation = typing.get_type_hints(handler)[first]
    assert typing.get_origin(annotation) is Call, f"{handler.__qualname__}: {annotation}"
    (body,) = typing.get_args(annotation)
    model = op.body or op.query
    assert body is model, (
        f"{op.name}: {handler.__module__}.{handler.__qualname__} takes "
        f"Call[{body.__name__}], but the operation carries {model.__name__}"
    )


def test_the_table_holds_exactly_the_operations_each_with_its_own_handler():
    assert sorted(HANDLERS) == sorted(op.name for op in OPERATIONS)
    assert len(set(HANDLERS.values())) == len(OPERATIONS)
