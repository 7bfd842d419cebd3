"""The service's interface as an OpenAPI 3.1 document, and checks of JSON against it.

``openapi.yaml`` beside this file is written from the interface's fact sheet, not generated from
dubkit's models: it is the referee that the client's models (``tests/test_contract_models.py``)
and the sandbox (strict contract mode, schemathesis) both answer to.

>>> from dubkit import contract
>>> contract.check_request("tts.create", body={"data": []}, headers={"X-Idempotency-Key": "k"})
[Problem(path='data', message='at least 1 item, got 0')]
>>> contract.check_answer("tasks.detail", 200, {"code": 200, "data": {"result": None}})
[Problem(path='data.result', message='expected object, got null')]

Validation is ``jsonschema-rs`` (a compiled JSON Schema 2020-12 validator), a few microseconds a
call, so the sandbox checks every request with it, not only in strict mode. This module is
neutral: the client and the sandbox may both use it; it imports neither.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import jsonschema_rs
import yaml

DOCUMENT = Path(__file__).with_name("openapi.yaml")
NO_BODY: Any = object()  # check_request(body=NO_BODY): no body was sent
_JSON_TYPES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


class Problem(NamedTuple):
    """One place where JSON differs from the document: a wire path and what is wrong there."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class Operation(NamedTuple):
    """What the document says about one operation (by its ``operationId``)."""

    name: str
    method: str
    path: str
    spec: dict[str, Any]


@functools.cache
def document() -> dict[str, Any]:
    """The document as a dict (parsed once)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(DOCUMENT, encoding="utf-8") as handle:
        loaded: dict[str, Any] = yaml.load(handle, Loader=loader)
    return loaded


@functools.cache
def operations() -> dict[str, Operation]:
    """Every operation and webhook, by ``operationId`` (``tts.create``, ``webhook.openapi-tts``)."""
    found: dict[str, Operation] = {}
    doc = document()
    for section in ("paths", "webhooks"):
        for path, item in doc.get(section, {}).items():
            for method, spec in item.items():
                found[spec["operationId"]] = Operation(
                    spec["operationId"], method.upper(), path, spec
                )
    return found


def schema_names() -> list[str]:
    return list(document()["components"]["schemas"])


def component(kind: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = document()["components"][kind][name]
    return found


def resolve(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` itself, or the component its ``$ref`` points at."""
    while "$ref" in node:
        _, _, kind, name = node["$ref"].split("/")
        node = component(kind, name)
    return node


@functools.cache
def _validator(schema_json: str) -> Any:
    root = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "components": document()["components"],
        **json.loads(schema_json),
    }
    return jsonschema_rs.validator_for(root)


def problems(schema: Mapping[str, Any], instance: Any, *, at: str = "") -> list[Problem]:
    """Where ``instance`` breaks ``schema`` (a schema or a ``$ref`` into the components)."""
    validator = _validator(json.dumps(dict(schema), sort_keys=True))
    return [_problem(error, at) for error in validator.iter_errors(instance)]


def check_request(
    operation: str,
    *,
    body: Any = NO_BODY,
    query: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> list[Problem]:
    """Problems of one request: its documented headers, query parameters and JSON body.

    ``body`` is the decoded JSON (:data:`NO_BODY` when none was sent); query values are strings as
    they arrive and are read as the parameter's type first. The query parameters an operation
    lists are all it has: another name is a problem (most likely a misspelt filter that would
    otherwise be ignored without a word). Unknown headers are allowed.
    """
    spec = operations()[operation].spec
    found: list[Problem] = []
    headers = {k.lower(): v for k, v in (headers or {}).items()}
    query = query or {}
    params = [resolve(p) for p in spec.get("parameters", [])]
    listed = {p["name"] for p in params if p["in"] == "query"}
    found += [
        Problem(
            name or "(empty name)",
            f"not a query parameter of {operation} (it has {', '.join(sorted(listed))})",
        )
        for name in query
        if name not in listed
    ]
    for param in params:
        where = param["in"]
        values = headers if where == "header" else query
        key = param["name"].lower() if where == "header" else param["name"]
        if key not in values:
            if param.get("required"):
                found.append(Problem(param["name"], f"required {where} is missing"))
            continue
        value = values[key]
        if where == "query":
            value = _read_query(value, param["schema"])
        found += problems(param["schema"], value, at=param["name"])
    request_body = spec.get("requestBody")
    if request_body is not None:
        if body is NO_BODY:
            if request_body.get("required"):
                found.append(Problem("body", "a JSON object is required"))
        else:
            schema = request_body["content"]["application/json"]["schema"]
            found += problems(schema, body)
    return found


def check_answer(
    operation: str | None, status: int, payload: Any, headers: Mapping[str, str] | None = None
) -> list[Problem]:
    """Problems of one answer: a documented status, its headers, and the envelope's shape.

    ``operation=None`` (an unknown path or method) checks the error envelope only.
    """
    if operation is None:
        return problems({"$ref": "#/components/schemas/ErrorEnvelope"}, payload)
    responses = operations()[operation].spec["responses"]
    answer = responses.get(str(status)) or responses.get("default")
    if answer is None:
        return [
            Problem(
                "status",
                f"HTTP {status} is not a documented answer of {operation} "
                f"(documented: {', '.join(responses)})",
            )
        ]
    answer = resolve(answer)
    found: list[Problem] = []
    headers = {k.lower(): v for k, v in (headers or {}).items()}
    for name, header in answer.get("headers", {}).items():
        if header.get("required") and name.lower() not in headers:
            found.append(Problem(f"header {name}", "required header is missing"))
    content = answer.get("content", {}).get("application/json")
    if content is not None:
        chosen = _branch(content["schema"], payload)
        found += problems(chosen, payload) + undocumented(chosen, payload)
    return found


def _branch(schema: dict[str, Any], payload: Any) -> dict[str, Any]:
    """The success or the error branch of an answer's ``oneOf``, chosen by the envelope's code.

    Checking the chosen branch names the field at fault; a failed ``oneOf`` names none.
    """
    branches = schema.get("oneOf")
    if not branches:
        return schema
    failed = not (isinstance(payload, dict) and payload.get("code") == 200)
    for branch in branches:
        if (branch.get("$ref", "").endswith("/ErrorEnvelope")) == failed:
            chosen: dict[str, Any] = branch
            return chosen
    return schema


def check_webhook(event: str, payload: Any, headers: Mapping[str, str]) -> list[Problem]:
    """Problems of one webhook delivery the service sends: its headers and envelope."""
    name = f"webhook.{event}"
    if name not in operations():
        return [Problem("event", f"{event!r} is not one of the documented webhooks")]
    found = check_request(name, body=payload, headers=headers)
    return found + undocumented(webhook_schema(event), payload)


# --------------------------------------------------------------------------- documented fields


def split(
    schema: Mapping[str, Any], value: Any, *, at: str = "", cut: list[str] | None = None
) -> tuple[Any, Any]:
    """``value`` cut in two: what ``schema`` documents, and the rest as a sparse overlay of the
    same shape (objects by key, lists by index with ``None`` where nothing was cut), or None.

    An object's documented names are the union of every branch the schema combines (``allOf``,
    ``oneOf``, ``anyOf``, ``then``); an object the document leaves free-form (no properties, or
    ``additionalProperties``) keeps everything. :func:`merge` puts the two back together.
    ``cut`` (if given) collects the path of every field cut.

    >>> split({"properties": {"a": {}}}, {"a": 1, "b": 2})
    ({'a': 1}, {'b': 2})
    """
    facets = _facets(schema, value)
    if isinstance(value, dict):
        named: dict[str, list[Any]] = {}
        free = False
        for facet in facets:
            for name, sub in facet.get("properties", {}).items():
                named.setdefault(name, []).append(sub)
            free |= facet.get("additionalProperties", False) not in (False, None)
        if not named:
            return value, None
        kept: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, item in value.items():
            path = f"{at}.{key}" if at else key
            if key in named:
                kept[key], rest = split({"allOf": named[key]}, item, at=path, cut=cut)
                if rest is not None:
                    extra[key] = rest
            elif free:
                kept[key] = item
            else:
                extra[key] = item
                if cut is not None:
                    cut.append(path)
        return kept, extra or None
    if isinstance(value, list):
        items = [f["items"] for f in facets if isinstance(f.get("items"), dict)]
        if not items:
            return value, None
        parts = [split({"allOf": items}, v, at=f"{at}[{i}]", cut=cut) for i, v in enumerate(value)]
        rests = [rest for _, rest in parts]
        return [kept for kept, _ in parts], rests if any(r is not None for r in rests) else None
    return value, None


def merge(value: Any, overlay: Any) -> Any:
    """``value`` with ``overlay`` (from :func:`split`) put back."""
    if overlay is None:
        return value
    if isinstance(value, dict) and isinstance(overlay, dict):
        merged = value.copy()  # once a call on the sandbox's answers: one copy, not two
        for key, put in overlay.items():
            merged[key] = merge(value.get(key), put)
        return merged
    if isinstance(value, list) and isinstance(overlay, list):
        return [merge(v, o) for v, o in zip(value, overlay)] + value[len(overlay) :]
    return overlay if value is None else value


def answer_schema(operation: str) -> dict[str, Any]:
    """The schema of ``operation``'s success answer (the whole envelope)."""
    answer = resolve(operations()[operation].spec["responses"]["200"])
    schema: dict[str, Any] = answer["content"]["application/json"]["schema"]
    return schema


def webhook_schema(event: str) -> dict[str, Any]:
    """The schema of webhook ``event``'s body."""
    body = operations()[f"webhook.{event}"].spec["requestBody"]
    schema: dict[str, Any] = body["content"]["application/json"]["schema"]
    return schema


def _facets(schema: Mapping[str, Any], value: Any) -> list[dict[str, Any]]:
    """The schema and every branch it combines for ``value``, references resolved (a ``then``
    only when ``value`` meets its ``if``)."""
    found, stack = [], [dict(schema)]
    while stack:
        node = resolve(stack.pop())
        found.append(node)
        for key in ("allOf", "oneOf", "anyOf"):
            stack.extend(node.get(key, []))
        then = node.get("then")
        if isinstance(then, dict) and not problems(node.get("if", {}), value):
            stack.append(then)
    return found


def undocumented(schema: Mapping[str, Any], value: Any) -> list[Problem]:
    """One problem per field of ``value`` that ``schema`` does not document."""
    cut: list[str] = []
    split(schema, value, cut=cut)
    return [Problem(path, "undocumented field") for path in cut]


# --------------------------------------------------------------------------- plumbing


def _read_query(value: str, schema: Mapping[str, Any]) -> Any:
    """A query string value as the parameter's JSON type, when it reads as one."""
    kind = resolve(dict(schema)).get("type")
    if kind == "integer" and re.fullmatch(r"-?[0-9]+", value):
        return int(value)
    if kind == "number":
        try:
            return float(value)
        except ValueError:
            return value
    if kind == "boolean" and value in ("true", "false"):
        return value == "true"
    return value


def _problem(error: Any, at: str) -> Problem:
    parts: list[Any] = ([at] if at else []) + list(error.instance_path)
    kind = type(error.kind).__name__
    if kind == "Required":
        parts.append(error.kind.property)
        return Problem(_path(parts), "is required")
    if kind == "Type":
        return Problem(
            _path(parts),
            f"expected {_expected(error.kind)}, got "
            f"{_JSON_TYPES.get(type(error.instance), 'a value')}",
        )
    if kind in _BOUNDS:  # every limit error states the limit and the value received
        return Problem(_path(parts), _BOUNDS[kind](error.kind.limit, error.instance))
    message = error.message
    if len(message) > 160:
        message = message[:157] + "..."
    return Problem(_path(parts), message)


def _items(n: Any) -> str:
    return f"{n} item{'s' if n != 1 else ''}"


def _characters(n: Any) -> str:
    return f"{n} character{'s' if n != 1 else ''}"


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# Bound kind -> its message from (limit, value): the limit and what was received, never a dump.
_BOUNDS: dict[str, Any] = {
    "MaxItems": lambda lim, got: f"at most {_items(lim)}, got {len(got)}",
    "MinItems": lambda lim, got: f"at least {_items(lim)}, got {len(got)}",
    "MaxLength": lambda lim, got: f"at most {_characters(lim)}, got {len(got)}",
    "MinLength": lambda lim, got: f"at least {_characters(lim)}, got {len(got)}",
    "Maximum": lambda lim, got: f"at most {_number(lim)}, got {_number(got)}",
    "Minimum": lambda lim, got: f"at least {_number(lim)}, got {_number(got)}",
    "ExclusiveMaximum": lambda lim, got: f"less than {_number(lim)}, got {_number(got)}",
    "ExclusiveMinimum": lambda lim, got: f"more than {_number(lim)}, got {_number(got)}",
}


def _expected(kind: Any) -> str:
    types = getattr(kind, "types", None)
    if not types:
        return "another type"
    names = [str(t) for t in (types if isinstance(types, (list, tuple)) else [types])]
    return " or ".join(names)


def _path(parts: Iterable[Any]) -> str:
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "body"
