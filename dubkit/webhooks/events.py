"""Typed webhook events: one class per ``event`` (interface §4.4-§4.5), built by :func:`parse`.

>>> event = parse(raw_body)                   # after verify(); raises ValidationError if malformed
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

from pydantic import PrivateAttr

from .._wire import parse as parse_wire
from ..errors import ValidationError
from ..schema import (
    CloneResult,
    MediaEventData,
    MediaTranslationResult,
    TranslateResult,
    TTSResult,
    WebhookEnvelope,
)


class WebhookEvent(WebhookEnvelope):
    """One delivery's envelope. The subclasses type ``data`` for their ``event``."""

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
        value = data.get("taskId") if isinstance(data, dict) else getattr(data, "task_id", None)
        return value if isinstance(value, str) else None

    @property
    def task_type(self) -> str | None:
        return self.TASK_TYPE

    @property
    def status(self) -> str | None:
        """``finished`` or ``failed``: from ``code`` (200 = finished); None when code is absent."""
        if self.code is None:
            return None
        return "finished" if self.code == 200 else "failed"

    @property
    def succeeded(self) -> bool:
        return self.status == "finished"

    @property
    def result(self) -> Any:
        """The typed result of a task that finished; None otherwise."""
        return self.data if self.succeeded else None

    @property
    def idempotency_key(self) -> str | None:
        """The ``X-Idempotency-Key`` of the submit (dubkit echoes it in ``extraData``)."""
        return (self.extra_data or {}).get("dubkitIdempotencyKey")

    def task_result(self) -> dict[str, Any] | None:
        """The raw result as ``tasks/detail`` shows it, for :meth:`dubkit.Task.apply`.

        A failure becomes ``{errorCode, errorMessage}``, the shape the sandbox's detail uses.
        """
        if self.status == "failed":
            return {"errorCode": self.code, "errorMessage": self.message or ""}
        if not self.succeeded or self.data is None:
            return None
        return self.data if isinstance(self.data, dict) else self.data.to_wire()

    def __repr__(self) -> str:
        extra = f", problem={self._problem!r}" if self._problem else ""
        return (
            f"{type(self).__name__}(event={self.event!r}, task_id={self.task_id!r}, "
            f"status={self.status!r}, pipeline_key={self.pipeline_key!r}{extra})"
        )


class TTSEvent(WebhookEvent):
    EVENT: ClassVar[str | None] = "openapi-tts"
    TASK_TYPE: ClassVar[str | None] = "tts"
    data: TTSResult | None


class TranslateEvent(WebhookEvent):
    EVENT: ClassVar[str | None] = "openapi-translate"
    TASK_TYPE: ClassVar[str | None] = "textTranslation"
    data: TranslateResult | None


class CloneEvent(WebhookEvent):
    EVENT: ClassVar[str | None] = "openapi-clone-voice"
    TASK_TYPE: ClassVar[str | None] = "cloneVoice"
    data: CloneResult | None


class MediaTranslationEvent(WebhookEvent):
    """``data`` carries its own ``status`` and ``taskType`` (``vt`` or ``at``)."""

    EVENT: ClassVar[str | None] = "openapi-media-translation"
    data: MediaEventData | None

    @property
    def task_type(self) -> str | None:
        return self.data.task_type if self.data else None

    @property
    def status(self) -> str | None:
        own = self.data.status if self.data else None
        return own if own in ("finished", "failed") else super().status

    @property
    def result(self) -> MediaTranslationResult | None:
        return self.data.result if self.succeeded and self.data else None

    def task_result(self) -> dict[str, Any] | None:
        if not self.succeeded:
            return super().task_result()
        return self.result.to_wire() if self.result is not None else None


EVENT_TYPES: dict[str, type[WebhookEvent]] = {
    str(cls.EVENT): cls for cls in (TTSEvent, TranslateEvent, CloneEvent, MediaTranslationEvent)
}


def parse(body: bytes | str | Mapping[str, Any]) -> WebhookEvent:
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
    generic = parse_wire(WebhookEvent, dict(payload))
    typed = EVENT_TYPES.get(generic.event or "")
    if typed is None:
        generic._problem = f"unknown event {generic.event!r}"
        return generic
    try:
        return parse_wire(typed, dict(payload))
    except ValidationError as exc:
        generic._problem = f"data does not fit {generic.event}: {exc}"
        return generic
