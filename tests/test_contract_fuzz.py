"""schemathesis fuzzes a sandbox from the contract document: every operation, bounded examples.

The sandbox here is its own (strict contract mode, remote fetching off, so it stays off the
network); the session's conftest fails any test after which strict mode recorded a mismatch,
which is how "a request the document allows was refused by dubkit's models" is caught. The
checks, and what they hold:

* ``not_a_server_error``: no 5xx, whatever arrives.
* ``content_type_conformance``, ``response_schema_conformance``, ``response_headers_conformance``
  and :func:`answers_in_the_envelope`: every answer is the JSON envelope its status documents
  (a 200 valid against its operation's schema, a 409 with ``Retry-After``).
* ``negative_data_rejection``: a request the document forbids (a boolean for a number, a
  ``null`` body, a missing required field or header) is refused with a 4xx.
* ``unsupported_method``: a method the path does not have is 405 with ``Allow``.
* ``ignored_auth``, ``missing_required_header``, ``status_code_conformance``.

Valid requests get a fresh ``X-Idempotency-Key`` each, so none is refused as a reused key.
Business refusals of valid requests (an unknown voice, a locale the sandbox cannot speak) are
400/402/404/409/413/422 envelopes, which positive_data_acceptance allows.
"""

from __future__ import annotations

import collections
import os
import tempfile
import uuid

from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis writes a few files even without an example database: keep them out of the checkout.
set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), "dubkit-hypothesis"))

import pytest  # noqa: E402
import schemathesis  # noqa: E402
from schemathesis import Case, CheckContext, GenerationMode, Response  # noqa: E402
from schemathesis.core.parameters import ParameterLocation  # noqa: E402

from dubkit import contract  # noqa: E402
from dubkit import start_sandbox as start  # noqa: E402
from dubkit.schema import OPERATIONS  # noqa: E402

pytestmark = pytest.mark.heavy  # a costly set-up: the quick loop leaves it out (README)

EXAMPLES = int(os.environ.get("DUBKIT_FUZZ_EXAMPLES", "50"))  # per operation, fuzzing phase
KEY = "sk_fuzz_" + uuid.uuid4().hex  # made known to the sandbox by the fixture
CONFIG = schemathesis.Config.from_dict(
    {
        "seed": 20261122,
        "auth": {"openapi": {"bearer": {"bearer": KEY}}},
        "suppress-health-check": ["all"],
        "request-timeout": 60,
        "generation": {"mode": "all", "max-examples": EXAMPLES, "database": "none"},
        "output": {"sanitization": {"enabled": False}},
        "checks": {
            "positive_data_acceptance": {"expected-statuses": [200, 400, 402, 404, 409, 413, 422]},
            "negative_data_rejection": {"expected-statuses": [400, 401, 404, 405, 413, 422]},
        },
    }
)
schema = schemathesis.openapi.from_dict(contract.document(), config=CONFIG)
SEEN: collections.Counter = collections.Counter()


@pytest.fixture(scope="module")
def fuzzed():
    box = start(strict=True)
    box.admin("POST", "/fetch", remote=False)
    box.create_key("fuzz", credits=10**12, api_key=KEY)
    yield box
    box.stop()


def answers_in_the_envelope(ctx: CheckContext, response: Response, case: Case) -> None:
    """Every answer is ``{code, message, data}`` with an integer code its HTTP status mirrors."""
    body = response.json()
    assert isinstance(body, dict) and isinstance(body.get("code"), int), (
        f"not an envelope: {body!r}"
    )
    assert set(body) <= {"code", "message", "data"}, f"unexpected envelope fields: {sorted(body)}"
    assert (response.status_code == 200) == (body["code"] == 200), (response.status_code, body)
    if body["code"] != 200:
        assert body["data"] is None and body["code"] == response.status_code, body


def _negative(case: Case) -> bool:
    return case.meta is not None and case.meta.generation.mode is GenerationMode.NEGATIVE


@schema.parametrize()
def test_the_sandbox_holds_to_the_document(case: Case, fuzzed) -> None:
    header_negative = case.meta is not None and case.meta.is_negative_at(ParameterLocation.HEADER)
    if case.method.upper() == "POST" and not header_negative:
        case.headers = {**(case.headers or {}), "X-Idempotency-Key": uuid.uuid4().hex}
    response = case.call_and_validate(
        base_url=fuzzed.url, additional_checks=[answers_in_the_envelope]
    )
    SEEN[
        (case.operation.label, "negative" if _negative(case) else "positive", response.status_code)
    ] += 1


def test_the_fuzzing_covered_every_operation_both_ways(fuzzed):
    """Runs after the fuzzing (same module, file order): print the figures, check coverage."""
    labels = {label for label, _, _ in SEEN}
    print(f"\nschemathesis: {len(labels)} operations, {sum(SEEN.values())} requests")
    for (label, mode, status), count in sorted(SEEN.items()):
        print(f"  {label:58} {mode:8} {status}: {count}")
    assert len(labels) == len(OPERATIONS)
    for label in labels:
        assert any(SEEN[(label, "positive", s)] for s in (200, 400, 402, 404, 409, 413, 422))
        assert any(SEEN[(label, "negative", s)] for s in (400, 401, 404, 405, 413, 422))
    assert fuzzed.contract_mismatches() == []
