"""The models in dubkit.schema answer to the contract document (dubkit/contract/openapi.yaml).

Each component schema of the document is paired by name with the model of that name. For every
pair, the wire field names (aliases), requiredness, enums, basic JSON types, nested models and
bounds (minimum, maximum, minItems, maxItems, minLength, maxLength, on arrays' items too) must
agree, in both directions; the sandbox's labelled extras (``schema.sandbox_extra``) are left out; each operation of dubkit's table must be the document's (method,
path, body or query, idempotency header). One renamed field fails one test, naming the field.
"""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any, Literal, Union

import pytest
from pydantic import BaseModel

from dubkit import contract, schema, webhooks
from dubkit._transport import API_PREFIX

# Document schemas with no model of their own, and why.
NOT_MODELS = {
    "SuccessEnvelope": "the transport reads the envelope's code, message and data itself",
    "ErrorEnvelope": "the transport turns it into a typed error (dubkit.errors)",
    "SucceededEnvelope": "a condition inside the webhook schemas, not a record",
    "TaskType": "an enum, compared with the schema's TaskType Literal",
    "CloneProvider": "an enum, compared with the schema's CloneProvider Literal",
}


def _webhook_schemas() -> dict[str, str]:
    """The schemas of the document's webhooks: each is an event class of dubkit.webhooks,
    made from the product table (test_webhook_events_type_their_data), not a model."""
    found = {}
    for name, op in contract.operations().items():
        if name.startswith("webhook."):
            ref = _ref_name(op.spec["requestBody"]["content"]["application/json"]["schema"])
            if ref:
                found[ref] = f"dubkit.webhooks.EVENT_TYPES[{name.removeprefix('webhook.')!r}]"
    return found


# Models with no document schema of their own, and why.
NOT_IN_DOCUMENT = {
    "Wire": "the base of every model",
    "Page": "the base of the four typed pages",
    "TaskListQuery": "query parameters of tasks.list (test_operations_match)",
    "PageQuery": "the paging query parameters (test_operations_match)",
    "MaterialQuery": "query parameters of materials.list (test_operations_match)",
}
BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
BOUNDS += ("minItems", "maxItems", "minLength", "maxLength")
ENUMS = {"TaskType": schema.TaskType, "CloneProvider": schema.CloneProvider}
JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (float, int),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict, BaseModel),
}


def _models() -> dict[str, type[schema.Wire]]:
    """The interface's models: the sandbox's own shapes (``schema.SandboxExtra``) are not."""
    return {
        name: obj
        for name, obj in vars(schema).items()
        if inspect.isclass(obj)
        and issubclass(obj, schema.Wire)
        and not issubclass(obj, schema.SandboxExtra)
    }


def _merged(node: dict[str, Any]) -> dict[str, Any]:
    """An object schema with its ``allOf`` parts merged: properties and required names."""
    node = contract.resolve(node)
    properties = dict(node.get("properties", {}))
    required = set(node.get("required", []))
    for part in node.get("allOf", []):
        merged = _merged(part)
        properties |= merged["properties"]
        required |= merged["required"]
    return {"properties": properties, "required": required}


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """``Optional[X]`` -> (X, True); anything else -> (it, False); ``Annotated`` dropped."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _unwrap(args[0])[0], True
    return annotation, False


def _ref_name(node: dict[str, Any]) -> str | None:
    return node["$ref"].rsplit("/", 1)[1] if "$ref" in node else None


def _is_extra(field: Any) -> bool:
    return bool((field.json_schema_extra or {}).get(schema.SANDBOX_EXTRA))


def _bounds(node: dict[str, Any], *, document: bool) -> dict[str, Any]:
    """The bounds a JSON schema node sets, its array items' under ``items.``; an optional
    value's (``anyOf`` with null) are its non-null branch's. A model's references name
    models, which set no bounds of their own: only the document's are followed."""
    if document:
        node = contract.resolve(node)
    branches = [b for b in node.get("anyOf", []) if b.get("type") != "null"]
    if len(branches) == 1:
        node = contract.resolve(branches[0]) if document else branches[0]
    found = {k: node[k] for k in BOUNDS if k in node}
    if isinstance(node.get("items"), dict):
        items = _bounds(node["items"], document=document)
        found |= {f"items.{k}": v for k, v in items.items()}
    return found


def _differences(model: type[BaseModel], node: dict[str, Any]) -> list[str]:
    """Every way ``model`` and the document schema ``node`` disagree, one line each."""
    doc = _merged(node)
    wire = {
        (field.alias or name): field
        for name, field in model.model_fields.items()
        if not _is_extra(field)
    }
    generated = model.model_json_schema(by_alias=True)["properties"]
    found = []
    for name, prop in doc["properties"].items():
        if name not in wire and not prop.get("deprecated"):
            found.append(f"{name}: in the document, missing from the model")
    for name in wire:
        if name not in doc["properties"]:
            found.append(f"{name}: in the model, missing from the document")
    for name, field in wire.items():
        prop = doc["properties"].get(name)
        if prop is None:
            continue
        if field.is_required() != (name in doc["required"]):
            found.append(
                f"{name}: required {field.is_required()} in the model, "
                f"{name in doc['required']} in the document"
            )
        found += [f"{name}: {problem}" for problem in _compare_value(field.annotation, prop)]
        ours = _bounds(generated[name], document=False)
        theirs = _bounds(prop, document=True)
        if ours != theirs:
            found.append(f"{name}: bounds {ours} in the model, {theirs} in the document")
    return found


def _compare_value(annotation: Any, prop: dict[str, Any]) -> list[str]:
    annotation, _ = _unwrap(annotation)
    ref = _ref_name(prop)
    target = contract.resolve(prop)
    enum = target.get("enum")
    literal = (
        list(typing.get_args(annotation)) if typing.get_origin(annotation) is Literal else None
    )
    if enum is not None or literal is not None:
        if sorted(enum or []) != sorted(literal or []):
            return [f"enum {literal} in the model, {enum} in the document"]
        return []
    if ref is not None and ref not in ENUMS and ("properties" in target or "allOf" in target):
        name = getattr(annotation, "__name__", repr(annotation))
        return [] if name == ref else [f"is {name} in the model, {ref} in the document"]
    kind = target.get("type")
    origin = typing.get_origin(annotation) or annotation
    if origin is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
        origin = typing.get_origin(annotation) or annotation
    if kind == "array":
        if origin is not list:
            return [f"is {annotation} in the model, an array in the document"]
        items = target.get("items")
        return _compare_value(typing.get_args(annotation)[0], items) if items else []
    if (
        kind == "object"
        and "additionalProperties" in target
        and isinstance(target["additionalProperties"], dict)
    ):
        if origin is not dict:
            return [f"is {annotation} in the model, a map in the document"]
        return _compare_value(typing.get_args(annotation)[1], target["additionalProperties"])
    if kind in JSON_TYPES and origin is not Any:
        if not (inspect.isclass(origin) and issubclass(origin, JSON_TYPES[kind])):
            return [f"is {annotation} in the model, {kind} in the document"]
    return []


NOT_MODELS |= _webhook_schemas()
DOC_SCHEMAS = [n for n in contract.schema_names() if n not in NOT_MODELS]


@pytest.mark.parametrize("name", DOC_SCHEMAS)
def test_model_matches_document(name):
    model = _models().get(name)
    assert model is not None, f"the document's {name} has no model dubkit.schema.{name}"
    differences = _differences(model, contract.component("schemas", name))
    assert not differences, f"dubkit.schema.{name} differs from the document:\n  " + "\n  ".join(
        differences
    )


def test_every_model_is_in_the_document():
    missing = sorted(set(_models()) - set(contract.schema_names()) - set(NOT_IN_DOCUMENT))
    assert not missing, f"models with no schema of that name in the document: {missing}"


@pytest.mark.parametrize("name", sorted(ENUMS))
def test_enums_match(name):
    assert sorted(typing.get_args(ENUMS[name])) == sorted(
        contract.component("schemas", name)["enum"]
    )


@pytest.mark.parametrize("op", schema.OPERATIONS, ids=lambda op: op.name)
def test_operations_match(op):
    documented = contract.operations().get(op.name)
    assert documented is not None, f"{op.name} is not an operationId of the document"
    assert (documented.method, documented.path) == (op.method, API_PREFIX + op.path)
    params = {p["name"]: p for p in map(contract.resolve, documented.spec.get("parameters", []))}
    key = params.get("X-Idempotency-Key")
    assert bool(key and key["required"]) == op.idempotency_required, "X-Idempotency-Key"
    if op.method == "POST":
        body = documented.spec["requestBody"]["content"]["application/json"]["schema"]
        assert _ref_name(body) == op.body.__name__
        assert documented.spec["requestBody"].get("required", False) == op.idempotency_required
    else:
        query = {n: p for n, p in params.items() if n != "req_id"}
        fields = {(f.alias or n): f for n, f in op.query.model_fields.items()}
        assert set(query) == set(fields), f"query parameters of {op.name}"
        for name, param in query.items():
            assert param.get("required", False) == fields[name].is_required(), name
            assert not _compare_value(fields[name].annotation, param["schema"]), name


def test_every_webhook_of_the_document_is_a_products_event():
    webhooks_documented = {
        n.removeprefix("webhook.") for n in contract.operations() if n.startswith("webhook.")
    }
    assert webhooks_documented == {p.event for p in schema.PRODUCTS} == set(webhooks.EVENT_TYPES)
    assert len(_webhook_schemas()) == len(schema.PRODUCTS)  # one schema each, all found


def test_every_documented_operation_is_in_the_table():
    names = {op.name for op in schema.OPERATIONS}
    documented = {n for n in contract.operations() if not n.startswith("webhook.")}
    assert documented == names


@pytest.mark.parametrize("event", sorted(webhooks.EVENT_TYPES))
def test_webhook_events_type_their_data(event):
    """Each event class types ``data`` with the model the document's webhook names."""
    spec = contract.operations()[f"webhook.{event}"].spec
    node = contract.resolve(spec["requestBody"]["content"]["application/json"]["schema"])
    typed = next(p for p in node["allOf"] if "$ref" not in p)
    data = (typed.get("then") or typed)["properties"]["data"]
    annotation, _ = _unwrap(webhooks.EVENT_TYPES[event].model_fields["data"].annotation)
    assert annotation.__name__ == _ref_name(data)


def test_the_document_is_valid_openapi_3_1():
    from openapi_spec_validator import validate

    validate(contract.document())
