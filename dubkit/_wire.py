"""Wire shapes as the client meets them: a payload that does not fit is a ValidationError.

>>> body = checked(TTSRequest, {"data": [{"text": "Hi", "voiceId": "sv_..."}]})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import pydantic

from . import schema
from .errors import UnexpectedAnswerError, ValidationError
from .schema import W, Wire

M = TypeVar("M", bound=pydantic.BaseModel)


def checked(model: type[W], payload: Any) -> W:
    """:func:`dubkit.schema.validated`, raising :class:`dubkit.ValidationError` (nothing was
    sent)."""
    try:
        return schema.validated(model, payload)
    except schema.WireError as exc:
        raise ValidationError(exc.field, exc.problem, rule=exc.rule) from None


def answer_as(model: type[M], payload: Any, *, operation: str, context: Mapping[str, Any]) -> M:
    """An answer's ``payload`` read as ``model``. One that does not fit (a ``null`` where a
    record was due, a list where an object was) is an :class:`dubkit.UnexpectedAnswerError`
    naming ``operation`` and the field, with ``context`` (the answer's method, path, req_id)."""
    try:
        return model.model_validate(payload)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        field = f"data.{where}" if where else "data"
        raise UnexpectedAnswerError(
            f"the answer's {field} does not fit {model.__name__}: {first['msg']}",
            operation=operation,
            **context,
        ) from None


def python_names(model: type[Wire], payload: Mapping[str, Any]) -> dict[str, Any]:
    """``payload`` keyed by Python field names (``voiceId`` -> ``voice_id``), nested too."""
    return schema.renamed(model, payload, wire=False)


def wire_name(model: type[Wire], name: str) -> str:
    """The wire name of ``model``'s field ``name`` (``voice_id`` -> ``voiceId``)."""
    return model.model_fields[name].alias or name
