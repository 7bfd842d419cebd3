"""Only documented fields on the wire: each answer and webhook body is cut to what the contract
document gives it, and an answer's labelled extras ride in a header beside it
(:mod:`dubkit._util.extras_header`), where they cannot be mistaken for the service's answer.

A task's ``result`` is free-form in the document; a finished one is cut to its product's result
schema (``TTSResult``, ``TranslateResult``, ``CloneResult``, ``MediaTranslationResult``).
A failed task's result is the sandbox's own shape (there is no documented one) and is kept.
"""

from __future__ import annotations

import logging
from typing import Any

from .. import contract
from .._util import extras_header
from ..schema import PRODUCTS

log = logging.getLogger("dubkit.sandbox")

_RESULT_SCHEMAS = {
    task_type: {"$ref": f"#/components/schemas/{product.result.__name__}"}
    for product in PRODUCTS
    for task_type in product.task_types
}


def answer(operation: str, payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A success envelope cut to the document, and the header carrying what was cut."""
    kept, overlay = contract.split(contract.answer_schema(operation), payload)
    data = kept.get("data")
    if operation == "tasks.detail" and isinstance(data, dict):
        schema = _RESULT_SCHEMAS.get(str(data.get("taskType")))
        if schema is not None and data.get("status") == "finished":
            data["result"], cut = contract.split(schema, data.get("result"))
            if cut is not None:
                overlay = overlay or {}
                overlay.setdefault("data", {})["result"] = cut
    return kept, _header(overlay)


def webhook(event: str, body: dict[str, Any]) -> dict[str, Any]:
    """A webhook body cut to the document. The extras are not sent with it (a delivery's
    headers are the signature's); a client that wants them reads ``tasks/detail``."""
    kept: dict[str, Any] = contract.split(contract.webhook_schema(event), body)[0]
    return kept


def _header(overlay: Any) -> dict[str, str]:
    value = extras_header.encode(overlay)
    if value is None and overlay is not None:  # a header line that long would not be read
        log.warning("the sandbox's extras of an answer were too long to send; left out")
    return {extras_header.HEADER: value} if value else {}
