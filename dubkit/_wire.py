"""Wire shapes as the client meets them: a payload that does not fit is a ValidationError.

>>> body = checked(TTSRequest, {"data": [{"text": "Hi", "voiceId": "sv_..."}]})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import schema
from .errors import ValidationError
from .schema import W, Wire


def checked(model: type[W], payload: Any) -> W:
    """:func:`dubkit.schema.validated`, raising :class:`dubkit.ValidationError` (nothing was
    sent)."""
    try:
        return schema.validated(model, payload)
    except schema.WireError as exc:
        raise ValidationError(exc.field, exc.problem, rule=exc.rule) from None


def python_names(model: type[Wire], payload: Mapping[str, Any]) -> dict[str, Any]:
    """``payload`` keyed by Python field names (``voiceId`` -> ``voice_id``), nested too."""
    return schema.renamed(model, payload, wire=False)


def wire_name(model: type[Wire], name: str) -> str:
    """The wire name of ``model``'s field ``name`` (``voice_id`` -> ``voiceId``)."""
    return model.model_fields[name].alias or name
