"""Answers the contract allows, generated, and a service double that serves them over real HTTP.

The sandbox shares dubkit's schema, so it only ever answers what dubkit expects. These helpers
draw answers from ``dubkit/contract/openapi.yaml`` instead: every success, error envelope and
header that document allows for an operation, including what a careful server rarely sends
(empty lists, absent optional fields, unknown fields, unknown values of open enums, ``null``
where the document allows it, totals that disagree with the page), plus the answers no envelope
wraps that a gateway or proxy in front of the service sends (HTML, foreign JSON, plain text).

The generator is schemathesis's JSON-schema generator (positive mode: every value it draws
validates against the schema), reached through its public API by turning each answer schema
into the request body of a derived document. hypothesis-jsonschema 0.23.1, the obvious choice,
fails on the hypothesis this suite runs (``'many' object has no attribute 'more'``), and Prism's
``--dynamic`` answers have no seed and do not shrink; Prism referees the requests instead
(tests/test_contract_prism.py).

Three nudges keep generated answers useful without leaving what the document allows: fields
the document leaves free but the interface names values for (``status``, ``taskType``,
``provider``, ``category``, ``partNumber``) draw those values as often as arbitrary ones; URL fields draw
the double's own files (a real WAV, bytes that decode as nothing, a 404, a subtitle file) as
often as arbitrary strings, so the paths that fetch and play media are walked too; and ids
draw a plain id as often as an arbitrary (often empty) string. Half the successes also carry
every field the document names (:func:`_filled`), so calls of several steps get past their
first answer.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from typing import Any

import schemathesis
from _double import FILES, STUB, Answer
from hypothesis import strategies as st
from schemathesis import GenerationMode

from dubkit import contract
from dubkit.schema import OPERATIONS

DOC = contract.document()
# Values the interface names for fields the document leaves free (§7.1: more may come).
NAMED_VALUES: dict[str, list[Any]] = {
    # "paused" stands for a status the interface does not name (dubkit warns once per name,
    # per process: "queued" is left to the test of that warning).
    "status": ["running", "finished", "failed", "complete", "paused"],
    "taskType": ["vt", "at", "tts", "cloneVoice", "textTranslation"],
    "provider": ["S1", "S2", "V1", "V3"],
    "category": ["video", "audio"],
    "partNumber": [1, 2],  # the parts a small file's upload asks URLs for
}
URL_FIELD = re.compile(r"(?i)(url|audio|file|cover)$|^uri$")
# The first value is what hypothesis draws first and shrinks towards: one that works.
URL_VALUES = [f"{STUB}/files/{name}" for name in FILES] + ["/files/tone.wav", "", "s3://bucket/x"]
ID_FIELD = re.compile(r"(Id|Uri)$")  # materialId, uploadId, taskId, s3Uri, voiceId ...
ID_VALUES = ["answers_1", "answers_2"]


def _nudge_values(key: str) -> list[str]:
    if key in NAMED_VALUES:
        return NAMED_VALUES[key]
    if URL_FIELD.search(key):
        return URL_VALUES
    if ID_FIELD.search(key):
        return ID_VALUES
    return []


def _nudged(value: Any, key: str = "") -> st.SearchStrategy[Any]:
    """``value`` (a generated body), with each string under a nudged name (see the module
    docstring) replaced half the time by one of its values: still an answer the document
    allows, since those fields are free strings there.

    Done on the drawn body rather than in the schema: the generator folds an ``anyOf`` of an
    ``enum`` and the plain string it narrows into the plain string, dropping the nudge."""
    if isinstance(value, dict):
        return st.fixed_dictionaries({k: _nudged(v, k) for k, v in value.items()})
    if isinstance(value, list):
        return st.tuples(*(_nudged(v) for v in value)).map(list)
    values = [v for v in _nudge_values(key) if type(v) is type(value)]  # a string for a string
    return st.one_of(st.sampled_from(values), st.just(value)) if values else st.just(value)


def _resolved(node: dict[str, Any]) -> dict[str, Any]:
    """A response object with its ``$ref`` to ``components/responses`` followed."""
    ref = node.get("$ref", "")
    return DOC["components"]["responses"][ref.rsplit("/", 1)[-1]] if ref else node


def _answer_schemas() -> dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]]:
    """(operation, kind) -> (body schema, response headers) for each answer the document
    gives an operation: ``success`` and ``error200`` (the two branches of its 200), and each
    documented error status."""
    found = {}
    for item in DOC["paths"].values():
        for operation in item.values():
            if not isinstance(operation, dict) or "operationId" not in operation:
                continue
            for status, response in operation["responses"].items():
                response = _resolved(response)
                schema = response["content"]["application/json"]["schema"]
                headers = response.get("headers", {})
                if status == "200":
                    error, success = schema["oneOf"]
                    found[(operation["operationId"], "success")] = (success, headers)
                    found[(operation["operationId"], "error200")] = (error, headers)
                else:
                    found[(operation["operationId"], status)] = (schema, headers)
    return found


ANSWER_SCHEMAS = _answer_schemas()


SHORTCUTS = {"material"}


def _filled(node: Any) -> Any:
    """``node`` with every object's properties required: answers that carry every field the
    document names (still legal), so calls of several steps get past their first answer.
    ``material`` of gen-upload-url stays optional: its presence means "these bytes are a
    material already" and would end every upload there."""
    node = copy.deepcopy(node)

    def visit(part: Any) -> None:
        if isinstance(part, dict):
            if isinstance(part.get("properties"), dict):
                part["required"] = sorted(
                    name for name in part["properties"] if name not in SHORTCUTS
                )
            for value in part.values():
                visit(value)
        elif isinstance(part, list):
            for value in part:
                visit(value)

    visit(node)
    return node


def _derived_document(filled: bool) -> dict[str, Any]:
    """One POST per answer schema whose request body is that schema: schemathesis's
    generator, reached through its public API, draws the bodies."""
    fill = _filled if filled else (lambda node: node)
    paths = {
        f"/{op}/{kind}": {
            "post": {
                "operationId": f"{op}:{kind}",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": fill(s)}},
                },
                "responses": {"200": {"description": "unused"}},
            }
        }
        for (op, kind), (s, _) in ANSWER_SCHEMAS.items()
    }
    for event, item in DOC["webhooks"].items():  # what the service pushes, by the same means
        body = item["post"]["requestBody"]["content"]["application/json"]["schema"]
        paths[f"/webhook/{event}"] = {
            "post": {
                "operationId": f"webhook:{event}",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": body}},
                },
                "responses": {"200": {"description": "unused"}},
            }
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": "answers", "version": "1"},
        "paths": paths,
        "components": {"schemas": fill(DOC["components"]["schemas"])},
    }


_GENERATORS = {
    filled: schemathesis.openapi.from_dict(
        _derived_document(filled),
        config=schemathesis.Config.from_dict(
            # Strings as a server that speaks JSON as UTF-8 can send them (no lone surrogates).
            {"generation": {"mode": "positive", "codec": "utf-8", "database": "none"}}
        ),
    )
    for filled in (False, True)
}


def _body(op: str, kind: str, filled: bool = False) -> st.SearchStrategy[Any]:
    path = f"/{op}/{kind}" if kind else f"/{op}"
    strategy = _GENERATORS[filled][path]["POST"].as_strategy(
        generation_mode=GenerationMode.POSITIVE
    )
    return strategy.flatmap(lambda case: _nudged(case.body))


WEBHOOK_EVENTS = list(DOC["webhooks"])


def webhook_bodies(event: str) -> st.SearchStrategy[dict[str, Any]]:
    """Bodies the document allows for webhook ``event``, every field filled half the time;
    ``event`` names it half the time (the document leaves the field a free string)."""
    drawn = st.one_of(_body(f"webhook/{event}", "", False), _body(f"webhook/{event}", "", True))
    named = st.sampled_from([event, None])
    return st.tuples(drawn, named).map(
        lambda pair: {**pair[0], "event": pair[1]} if pair[1] else pair[0]
    )


def _enveloped(op: str, kind: str, filled: bool = False) -> st.SearchStrategy[Answer]:
    _, headers = ANSWER_SCHEMAS[(op, kind)]
    status = 200 if kind in ("success", "error200") else int(kind)
    # Retry-After is the one header the document requires (on a 409): "0", so tests never
    # sleep on it; its value is a free string there.
    extra = {"Retry-After": "0"} if "Retry-After" in headers else {}
    return _body(op, kind, filled).map(
        lambda body: Answer(status, json.dumps(body).encode(), headers=extra, kind=kind)
    )


GATEWAY_PAGES = [
    (
        "text/html",
        "<html><head><title>{status} Bad Gateway</title></head><body><center>"
        "<h1>{status} Bad Gateway</h1></center><hr><center>nginx</center></body></html>",
    ),
    (
        "application/json",
        '{{"error": "upstream timed out", "status": {status}, '
        '"request": "Authorization: Bearer sk_live_0123456789abcdef"}}',
    ),
    ("application/json", '{{"message": "Endpoint request timed out"}}'),
    ("text/plain", "upstream connect error or disconnect/reset before headers"),
    ("", ""),
]


def gateway_answers() -> st.SearchStrategy[Answer]:
    """What a gateway or proxy in front of the service answers: no envelope."""
    return st.builds(
        lambda status, page: Answer(
            status,
            page[1].format(status=status).encode(),
            content_type=page[0],
            headers={"Retry-After": "0"} if status in (429, 503) else {},
            kind="gateway",
        ),
        st.sampled_from([502, 504, 503, 429, 500, 413, 403, 400]),
        st.sampled_from(GATEWAY_PAGES),
    )


def answers(op: str) -> st.SearchStrategy[Answer]:
    """Any answer ``op`` may get: mostly successes, half of them with every field filled (so
    calls of several steps get past the first), then error envelopes with HTTP 200 or a documented status, then gateway pages."""
    errors = [k for (o, k) in ANSWER_SCHEMAS if o == op and k not in ("success", "error200")]
    success, error200 = _enveloped(op, "success"), _enveloped(op, "error200")
    filled = _enveloped(op, "success", filled=True)
    documented = st.sampled_from(errors).flatmap(lambda k: _enveloped(op, k))
    # The first branch is what hypothesis draws most and shrinks towards: a full success, the
    # most ordinary answer, so a failing example ends as one when one shows the failure.
    return st.integers(0, 9).flatmap(
        lambda n: (
            filled
            if n < 3
            else success
            if n < 6
            else error200
            if n == 6
            else documented
            if n < 9
            else gateway_answers()
        )
    )


def scripts(ops: Sequence[str], most: int = 3) -> st.SearchStrategy[dict[str, list[Answer]]]:
    """For each of ``ops``, the answers its successive requests get (the last repeats)."""
    return st.fixed_dictionaries(
        {op: st.lists(answers(op), min_size=1, max_size=most) for op in ops}
    )


ALL_OPERATIONS = [op.name for op in OPERATIONS]
