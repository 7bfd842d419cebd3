"""Wire shapes as the client meets them: a payload that does not fit is a ValidationError.

>>> body = parse(TTSRequest, {"data": [{"text": "Hi", "voiceId": "sv_..."}]})
"""

from __future__ import annotations

from typing import Any

from . import schema
from .errors import ValidationError
from .schema import W


def parse(model: type[W], payload: Any) -> W:
    """:func:`dubkit.schema.parse`, raising :class:`dubkit.ValidationError` (nothing was sent)."""
    try:
        return schema.parse(model, payload)
    except schema.WireError as exc:
        raise ValidationError(exc.field, exc.problem, rule=exc.rule) from None
