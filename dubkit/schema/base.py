"""The wire base: camelCase aliases, limits, validation that names the field."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from typing import Any, Literal, NoReturn, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticError
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

W = TypeVar("W", bound="Wire")
MAX_LINES = 50  # TTS lines and translation segments per request
MAX_IDEMPOTENCY_KEY = 64
MIN_PART_SIZE = 5 * 1024 * 1024  # every multipart part but the last (the object store's rule)


class Wire(BaseModel):
    """Base of every wire shape: camelCase aliases, snake_case names, extra fields kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        protected_namespaces=(),
        allow_inf_nan=False,  # NaN and Infinity are not JSON, even from a string like "nan"
        defer_build=True,  # validators are built on first use, not at import (issue 36)
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON body to send: camelCase, unset fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


# --------------------------------------------------------------------------- shared pieces

RULE = "dubkit_rule"  # pydantic error type of a rule the interface states beyond the shape


def rule(message: str) -> PydanticCustomError:
    """An error for a rule the interface states that a JSON schema cannot say (``end >= start``).

    Raised from validators; :func:`validated` reports it like any other, and the sandbox tells it
    apart from a shape error (a shape the document allows must never be refused).
    """
    return PydanticCustomError(RULE, message)


class Page(Wire):
    """One page of a list answer: ``records`` and the ``total`` matching."""

    records: list[dict[str, Any]] = Field(default_factory=list)
    total: int | None = None


class AsyncAcceptance(Wire):
    """What an async create answers: the task was accepted, results come later."""

    task_id: str
    created_at: str | None = None


class Operation(BaseModel):
    """One of the service's operations: where it lives and what its body looks like."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    method: Literal["GET", "POST"]
    path: str  # below /openapi/v1
    body: type[Wire] | None = None
    query: type[Wire] | None = None
    idempotency_required: bool = False
    # A create-async: its answer is a task whose result comes later (by webhook or polling).
    asynchronous: bool = False


def post(name: str, path: str, body: type[Wire] | None, *, key: bool = True) -> Operation:
    return Operation(
        name=name,
        method="POST",
        path=path,
        body=body,
        idempotency_required=key,
        asynchronous=path.endswith("/create-async"),
    )


def get(name: str, path: str, query: type[Wire] | None) -> Operation:
    return Operation(name=name, method="GET", path=path, query=query)


SANDBOX_EXTRA = "x-dubkit-sandbox-extra"


class SandboxExtra(Wire):
    """Base of a shape the interface does not have, which only the sandbox's labelled extras
    (or its own choices where the interface is silent) use; the contract test skips these."""


def sandbox_extra(description: str) -> Any:
    """A field the interface does not have, which the local sandbox adds, labelled. It never
    sits in an answer's body: the sandbox sends it beside the body in the extras header
    (:mod:`dubkit._util.extras_header`) and dubkit's transport puts it back, so code that reads
    the wire sees what the service sends. Declared here so the sandbox builds it from the model
    and the client reads it typed; the contract test knows these fields by this mark."""
    return Field(default=None, description=description, json_schema_extra={SANDBOX_EXTRA: True})


def extras(model: Wire) -> dict[str, Any]:
    """What ``model`` carries beyond the interface, by wire name: fields the schema does not
    know, and the sandbox's labelled extras that are set."""
    declared = {
        (field.alias or name): getattr(model, name)
        for name, field in type(model).model_fields.items()
        if (field.json_schema_extra or {}).get(SANDBOX_EXTRA)  # type: ignore[union-attr]
        and getattr(model, name) is not None
    }
    return {**declared, **(model.model_extra or {})}


# --------------------------------------------------------------------------- validation


def field_path(loc: tuple[Any, ...]) -> str:
    """``('segments', 3, 'end')`` -> ``'segments[3].end'``; the body itself is ``'body'``."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "body"


class WireError(ValueError):
    """``payload`` does not fit the model: ``field`` (its wire path) and the ``problem``.

    ``rule`` is true when the shape was fine and a rule the interface states refused it. The
    client raises it as :class:`dubkit.ValidationError`; the sandbox answers it with a 400.
    """

    def __init__(self, field: str, problem: str, *, rule: bool = False) -> None:
        super().__init__(f"{field}: {problem}")
        self.field, self.problem, self.rule = field, problem, rule


def renamed(model: type[Wire], payload: Mapping[str, Any], *, wire: bool) -> dict[str, Any]:
    """``payload`` with every key that names a field of ``model`` (by its wire name or its
    Python name) given as the wire name (``wire=True``: ``voiceId``) or the Python name
    (``voice_id``), in nested objects and lists of objects too; other keys kept as they are."""
    known = _field_names(model)
    out: dict[str, Any] = {}
    for key, value in payload.items():
        found = known.get(key)
        if found is not None:
            name, alias, inner = found
            if inner is not None and isinstance(value, Mapping):
                value = renamed(inner, value, wire=wire)
            elif inner is not None and isinstance(value, list):
                value = [
                    renamed(inner, v, wire=wire) if isinstance(v, Mapping) else v for v in value
                ]
            key = alias if wire else name
        out[key] = value
    return out


@functools.cache
def _field_names(model: type[Wire]) -> dict[str, tuple[str, str, type[Wire] | None]]:
    """Each field by its wire and its Python name: (Python name, wire name, nested model).
    Built once per model: renaming runs on every call the client sends."""
    known: dict[str, tuple[str, str, type[Wire] | None]] = {}
    for name, field in model.model_fields.items():
        entry = (name, field.alias or name, _wire_model(field.annotation))
        known[name] = known[field.alias or name] = entry
    return known


def _wire_model(annotation: Any) -> type[Wire] | None:
    """The Wire model inside ``Optional[X]`` / ``list[X]`` / ``X``, if there is one."""
    if isinstance(annotation, type) and issubclass(annotation, Wire):
        return annotation
    return next((m for m in map(_wire_model, get_args(annotation)) if m is not None), None)


def validated(model: type[W], payload: Any) -> W:
    """Validate ``payload`` (wire dict, snake_case dict or model) into ``model``.

    Raises :class:`WireError` naming the first bad field by its wire name.
    """
    if isinstance(payload, model):
        return payload
    if isinstance(payload, BaseModel):
        payload = payload.model_dump(by_alias=True, exclude_none=True)
    try:  # the C encoder finds NaN/Infinity fast; the walk only says where
        json.dumps(payload, allow_nan=False)
    except (ValueError, TypeError):
        _check_finite(_wire_named(model, payload), "")
    try:  # Python names are accepted as they are (populate_by_name): no renaming when it fits
        return model.model_validate(payload)
    except PydanticError:
        pass
    try:  # told again under wire names, so that the error names the wire field
        return model.model_validate(_wire_named(model, payload))
    except PydanticError as exc:
        _raise_wire_error(exc)


def _wire_named(model: type[Wire], payload: Any) -> Any:
    return renamed(model, payload, wire=True) if isinstance(payload, Mapping) else payload


def _raise_wire_error(exc: PydanticError) -> NoReturn:
    """The first of pydantic's errors as a :class:`WireError` naming its field."""
    first = exc.errors(include_url=False)[0]
    problem = first["msg"].removeprefix("Value error, ")
    value = first.get("input")
    if first["type"] == "missing":
        problem = "is required"
    elif first["type"] == "too_long":
        problem = (
            f"at most {first['ctx']['max_length']} items per request, "
            f"got {first['ctx']['actual_length']}"
        )
    elif not isinstance(value, (dict, list)):
        problem += f" (got {_short(value)})"
    raise WireError(field_path(tuple(first["loc"])), problem, rule=first["type"] == RULE) from None


def _check_finite(value: Any, path: str) -> None:
    """NaN and Infinity are not JSON (Python's encoder writes them bare): refuse them by field."""
    if isinstance(value, float) and not math.isfinite(value):
        raise WireError(
            path or "body", f"{value!r} is not a JSON number (NaN and Infinity are not JSON)"
        )
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check_finite(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_finite(item, f"{path}[{i}]")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = [
    "W",
    "MAX_LINES",
    "MAX_IDEMPOTENCY_KEY",
    "MIN_PART_SIZE",
    "Wire",
    "RULE",
    "rule",
    "Page",
    "AsyncAcceptance",
    "Operation",
    "SANDBOX_EXTRA",
    "SandboxExtra",
    "sandbox_extra",
    "extras",
    "field_path",
    "WireError",
    "renamed",
    "validated",
]
