"""Typed webhook events: one class per ``event`` (interface §4.4-§4.5), built by :func:`parse`.

>>> event = parse_event(raw_body)                  # after verify(); raises ValidationError if malformed
>>> if isinstance(event, TranslateEvent) and event.succeeded:
...     print([item.text for item in event.result.items])

``result`` is typed with the same models the client uses for sync answers (``TTSResult``,
``TranslateResult``, ``CloneResult``, ``MediaTranslationResult``). A failed task's ``data`` is not
specified by the interface: ``null``, ``{}`` or an object without ``result`` all parse into the
event's own class, with ``status == "failed"``. An envelope whose ``event`` is unknown, or whose
``data`` does not fit its event's shape, still parses: as a plain :class:`WebhookEvent` with
``problem`` saying why, so a newer service never makes a receiver fail.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import PrivateAttr, create_model

from .._wire import checked, wire_name
from ..errors import ValidationError
from ..schema import (
    CLONE,
    DUBBING,
    PRODUCTS,
    TRANSLATION,
    TTS,
    CloneResult,
    MediaEventData,
    MediaTranslationResult,
    Product,
    TaskDetail,
    TaskFailure,
    TranslateResult,
    TTSResult,
    WebhookEnvelope,
    idempotency_key_of,
)

_TASK_ID = wire_name(TaskDetail, "task_id")  # how any task-shaped data names its task


class WebhookEvent(WebhookEnvelope):
    """One delivery's envelope. The subclasses type ``data`` for their product's event."""

    PRODUCT: ClassVar[Product | None] = None  # the product whose tasks send this event
    # Its row's event name, and its task type when it has one (set by event_class).
    EVENT: ClassVar[str | None] = None
    TASK_TYPE: ClassVar[str | None] = None
    _problem: str | None = PrivateAttr(default=None)

    @property
    def problem(self) -> str | None:
        """Why this envelope was not given a typed class (unknown event, unexpected data)."""
        return self._problem

    @property
    def task_id(self) -> str | None:
        data = self.data
        if isinstance(data, dict):  # an event dubkit has no class for, or data that did not fit
            value = data.get(_TASK_ID)
        else:
            value = getattr(data, "task_id", None)
        return value if isinstance(value, str) else None

    @property
    def task_type(self) -> str | None:
        """The task's type: what ``data`` says (media translation's ``vt``/``at``), else the
        product's only one."""
        own = getattr(self.data, "task_type", None) if self._wraps_result else None
        if isinstance(own, str) and own:
            return own
        types = self.PRODUCT.task_types if self.PRODUCT else ()
        return types[0] if len(types) == 1 else None

    @property
    def status(self) -> str | None:
        """``finished`` or ``failed``: what ``data`` says when it carries a status (media
        translation), else from ``code`` (200 = finished); None when neither says."""
        own = getattr(self.data, "status", None) if self._wraps_result else None
        if own in ("finished", "failed"):
            return str(own)
        if self.code is None:
            return None
        return "finished" if self.code == 200 else "failed"

    @property
    def succeeded(self) -> bool:
        return self.status == "finished"

    @property
    def result(self) -> Any:
        """The typed result of a task that finished; None otherwise."""
        if not self.succeeded:
            return None
        return getattr(self.data, "result", None) if self._wraps_result else self.data

    @property
    def _wraps_result(self) -> bool:
        """``data`` is ``{taskId, taskType, status, result}`` (media translation), not the
        result itself."""
        return self.PRODUCT is not None and self.PRODUCT.event_data is not None

    @property
    def idempotency_key(self) -> str | None:
        """The ``X-Idempotency-Key`` of the submit (dubkit echoes it in ``extraData``)."""
        return idempotency_key_of(self.extra_data)

    def task_result(self) -> dict[str, Any] | None:
        """The raw result as ``tasks/detail`` shows it, for :meth:`dubkit.Task.apply`.

        A failure becomes ``{errorCode, errorMessage}``, the shape the sandbox's detail uses.
        """
        if self.status == "failed":
            return TaskFailure(error_code=self.code, error_message=self.message or "").to_wire()
        result = self.result
        if result is None:
            return None
        return result if isinstance(result, dict) else result.to_wire()

    def __repr__(self) -> str:
        extra = f", problem={self._problem!r}" if self._problem else ""
        return (
            f"{type(self).__name__}(event={self.event!r}, task_id={self.task_id!r}, "
            f"status={self.status!r}, pipeline_key={self.pipeline_key!r}{extra})"
        )


# The products' events under names a receiver can test with isinstance; ``data`` is typed here
# for type checkers, and ``event_class`` checks it against the product table.


class TTSEvent(WebhookEvent):
    PRODUCT: ClassVar[Product | None] = TTS
    data: TTSResult | None


class TranslateEvent(WebhookEvent):
    PRODUCT: ClassVar[Product | None] = TRANSLATION
    data: TranslateResult | None


class CloneEvent(WebhookEvent):
    PRODUCT: ClassVar[Product | None] = CLONE
    data: CloneResult | None


class MediaTranslationEvent(WebhookEvent):
    """``data`` carries its own ``status`` and ``taskType`` (``vt`` or ``at``)."""

    PRODUCT: ClassVar[Product | None] = DUBBING
    data: MediaEventData | None

    @property
    def result(self) -> MediaTranslationResult | None:
        return self.data.result if self.succeeded and self.data else None


_NAMED = (TTSEvent, TranslateEvent, CloneEvent, MediaTranslationEvent)


def event_class(product: Product) -> type[WebhookEvent]:
    """The event class of ``product``: its named class, or one made from its row."""
    data = product.event_data or product.result
    named: list[type[WebhookEvent]] = [cls for cls in _NAMED if cls.PRODUCT is product]
    made: type[WebhookEvent]
    if named:
        made = named[0]
        if made.model_fields["data"].annotation != (data | None):
            raise RuntimeError(f"{made.__name__}.data is not {data.__name__} | None")
    else:
        name = "".join(part.title() for part in product.name.split("_")) + "Event"
        data_field: Any = (data | None, ...)
        made = create_model(name, __base__=WebhookEvent, data=data_field, __module__=__name__)
        made.PRODUCT = product
    made.EVENT = product.event
    made.TASK_TYPE = product.task_types[0] if len(product.task_types) == 1 else None
    return made


EVENT_TYPES: dict[str, type[WebhookEvent]] = {p.event: event_class(p) for p in PRODUCTS}


def parse_event(body: bytes | str | Mapping[str, Any]) -> WebhookEvent:
    """The typed event for a delivery's body (verify the raw bytes first).

    Raises :class:`dubkit.ValidationError` naming the field when the body is not a JSON object
    or lacks ``data``. Unknown events and unexpected ``data`` shapes do not raise: see
    :attr:`WebhookEvent.problem`.
    """
    payload: Any = body
    if isinstance(body, (bytes, bytearray, str)):
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError) as exc:  # bad UTF-8 is a ValueError too
            detail = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            raise ValidationError("body", f"is not JSON ({detail})") from None
    if not isinstance(payload, Mapping):
        raise ValidationError(
            "body", f"must be a JSON object (the envelope), got {type(payload).__name__}"
        )
    generic = checked(WebhookEvent, dict(payload))
    typed = EVENT_TYPES.get(generic.event or "")
    if typed is None:
        generic._problem = f"unknown event {generic.event!r}"
        return generic
    try:
        event = checked(typed, dict(payload))
    except ValidationError as exc:
        generic._problem = f"data does not fit {generic.event}: {exc}"
        return generic
    event._problem = _looks_like_another(event.event or "", generic.data)
    return event


def _distinctive(product: Product) -> set[str]:
    """The wire names of the fields of ``product``'s event data that no other product's has."""

    def fields(p: Product) -> set[str]:
        model = p.event_data or p.result
        return {f.alias or n for n, f in model.model_fields.items()}

    others = set().union(*(fields(p) for p in PRODUCTS if p is not product))
    return fields(product) - others


def _looks_like_another(event: str, data: Any) -> str | None:
    """A word when ``data`` has none of its event's own fields and some of another event's:
    every field is optional, so such data parses, and would be read as an empty result."""
    if not isinstance(data, Mapping) or not data:
        return None
    keys = set(data)
    own = EVENT_TYPES[event].PRODUCT
    if own is None or keys & _distinctive(own):
        return None
    for product in PRODUCTS:
        found = sorted(keys & _distinctive(product))
        if product is not own and found:
            return f"data has none of {event}'s fields, and {', '.join(found)} of {product.event}'s"
    return None
