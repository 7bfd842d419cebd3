"""Every public call, against any answer the contract document allows, over real HTTP.

Answers are generated from ``dubkit/contract/openapi.yaml`` (tests/_answers.py says how and
why) and served by a double of the service; each public call of each resource runs against
them, and whatever it returns is rendered as a notebook would (repr, HTML view, ``to_frame``).
What must hold, for every answer:

* the call gives a result or a :class:`dubkit.DubkitError`, never a bare Python exception;
* an error about an answer keeps where it came from: its ``req_id`` (the task, for a wait
  that ran out);
* results line up with what was sent: one translation item, one speech line, per line;
* an error without the envelope keeps its HTTP status, content type and a secret-free excerpt;
* a wait that ran out says whether the task never ended or a poll went unanswered;
* ``voices.preset(id)`` is that voice or an error;
* the views and tables of any result render.

CI runs ``EXAMPLES`` examples per call with a fixed seed; ``pytest -m slow`` runs
``SLOW_EXAMPLES`` with a seed of its own. Each run writes how many generated answers each
operation met to ``test-artifacts/generated-answers.json``.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _answers import DOC, WEBHOOK_EVENTS, scripts, webhook_bodies
from _clients import async_client
from _double import Answer, answer_double, fixed, wav_bytes
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import dubkit
from dubkit import APIError, DubkitError, SpeechLine, TaskTimeoutError, UnexpectedAnswerError
from dubkit.results import DubbingResult
from dubkit.webhooks import parse_event

pytestmark = pytest.mark.heavy  # a costly set-up: the quick loop leaves it out (README)

EXAMPLES = int(os.environ.get("DUBKIT_ANSWER_EXAMPLES", "40"))
SLOW_EXAMPLES = int(os.environ.get("DUBKIT_SLOW_ANSWER_EXAMPLES", "400"))
SEED = 20261126
NO_RETRY_WAIT = dubkit.RetryPolicy(max_retries=1, backoff=0.0, max_backoff=0.0, max_retry_after=0.0)
WAIT = 0.3  # seconds a call waits for a task the answers may never end

PRESET = "sv_answers_en_f"
CLONED = "cv_answers_1"
VOICES = {  # how the double's fixed voice lists make the test's voices known
    "voices.presets": [
        fixed({"records": [{"voiceId": PRESET, "provider": "S1", "locale": "en-US"}], "total": 1})
    ],
    "voices.clones": [fixed({"records": [{"voiceId": CLONED, "provider": "V1"}], "total": 1})],
}
MATERIAL = "mat_answers_1"
REGISTERED = {
    "materials.list": [
        fixed(
            {
                "records": [{"materialId": MATERIAL, "category": "video", "name": "a.mp4"}],
                "total": 1,
            }
        )
    ]
}


@dataclass
class Ctx:
    """What a call needs besides the client: the double's address and a folder of its own."""

    url: str
    folder: Path
    sample: Path
    sent: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Call:
    """One public call: the operations whose answers it meets (generated), the set-up answers
    it needs (fixed), how to make it, and what must hold of its result."""

    name: str
    ops: tuple[str, ...]
    run: Callable[[dubkit.Client, Ctx], Any]
    check: Callable[[Any, Ctx], None] | None = None
    setup: dict[str, list[Answer]] = field(default_factory=dict)
    steps: int = 1  # a call of many answered steps gets this many times the examples


# ------------------------------------------------------------------- what must hold of results


def lines_line_up(count: int) -> Callable[[Any, Ctx], None]:
    def check(result: Any, ctx: Ctx) -> None:
        rows = result.items if hasattr(result, "items") and not isinstance(result, dict) else result
        assert len(rows) == count, f"{len(rows)} results for {count} lines"
        assert len(result.to_frame()) == count

    return check


def one_line(result: Any, ctx: Ctx) -> None:
    assert isinstance(result, SpeechLine) and result.ok


def the_preset_asked_for(result: Any, ctx: Ctx) -> None:
    assert result.voice_id == PRESET, result


def waited(result: Any, ctx: Ctx) -> None:
    """A task ``wait`` returned: it ended, and its result (if it finished) renders."""
    assert result.done, result
    render(result.result_if_made())


def _wait(task: Any) -> Any:
    return task.wait(timeout=WAIT, poll_interval=0.01, max_interval=0.02)


def _clone_then_ab(client: dubkit.Client, ctx: Ctx) -> Any:
    clone = client.clones.create(f"{ctx.url}/files/tone.wav")
    return client.clones.ab(clone, "Hello")


def _dub_then_redub(client: dubkit.Client, ctx: Ctx) -> Any:
    task = _wait(client.dubbing.create(MATERIAL, target="fr-FR"))
    dub = task.result
    if not isinstance(dub, DubbingResult) or not dub.script:  # the poll may name another task type
        return dub
    dub.edit(dub.script[0].id, translation="Bonjour")
    return client.dubbing.redub(dub, ctx.folder / "redub", progress=False)


def _upload(multipart: bool) -> Callable[[dubkit.Client, Ctx], Any]:
    def run(client: dubkit.Client, ctx: Ctx) -> Any:
        return client.materials.upload(
            ctx.sample,
            progress=False,
            multipart_threshold=1 if multipart else 1 << 30,
            state_dir=ctx.folder / "state",
        )

    return run


LINES3 = ["Hello", "How are you?", "Goodbye"]
CALLS = [
    Call(
        "tts.create",
        ("tts.create",),
        lambda c, x: c.tts.create(LINES3, voice=PRESET),
        lines_line_up(3),
        VOICES,
    ),
    Call("tts.speak", ("tts.create",), lambda c, x: c.tts.speak("Hello", PRESET), one_line, VOICES),
    Call(
        "tts.batch",
        ("tts.create",),
        lambda c, x: c.tts.batch([f"Line {i}" for i in range(60)], voice=PRESET, progress=False),
        lines_line_up(60),
        VOICES,
    ),
    Call(
        "tts.audition",
        ("tts.create",),
        lambda c, x: c.tts.audition("Hello", [PRESET, CLONED]),
        None,
        VOICES,
    ),
    Call(
        "tts.create_async",
        ("tts.create_async", "tasks.detail"),
        lambda c, x: _wait(c.tts.create_async(["Hello"], voice=PRESET)),
        waited,
        VOICES,
    ),
    Call(
        "translate.create",
        ("translate.create",),
        lambda c, x: c.translate.create(LINES3, source="en-US", target="fr-FR"),
        lines_line_up(3),
    ),
    Call(
        "translate.batch",
        ("translate.create",),
        lambda c, x: c.translate.batch(
            [f"Line {i}" for i in range(120)], source="en-US", target="fr-FR", progress=False
        ),
        lines_line_up(120),
    ),
    Call(
        "translate.create_async",
        ("translate.create_async", "tasks.detail"),
        lambda c, x: _wait(c.translate.create_async(LINES3, source="en-US", target="fr-FR")),
        waited,
    ),
    Call(
        "clones.create", ("clone.create",), lambda c, x: c.clones.create(f"{x.url}/files/tone.wav")
    ),
    Call(
        "clones.create_async",
        ("clone.create_async", "tasks.detail"),
        lambda c, x: _wait(c.clones.create_async(f"{x.url}/files/tone.wav")),
        waited,
    ),
    # The new clone's provider may be absent: speaking it looks the voice up in the lists.
    Call(
        "clones.ab",
        ("clone.create", "tts.create", "voices.presets", "voices.clones"),
        _clone_then_ab,
    ),
    Call(
        "dubbing.create",
        ("media.create_async", "tasks.detail"),
        lambda c, x: _wait(c.dubbing.create(MATERIAL, target="fr-FR")),
        waited,
        REGISTERED,
    ),
    Call(
        "dubbing.redub",
        ("media.create_async", "tasks.detail", "tts.create"),
        _dub_then_redub,
        None,
        {**REGISTERED, **VOICES},
    ),
    Call(
        "materials.upload",
        ("materials.gen_upload_url", "materials.complete", "materials.list"),
        _upload(multipart=False),
        steps=3,
    ),
    Call(
        "materials.upload (multipart)",
        (
            "materials.multipart_initiate",
            "materials.multipart_presign",
            "materials.multipart_complete",
            "materials.multipart_abort",
            "materials.list",
        ),
        _upload(multipart=True),
        steps=5,
    ),
    Call("materials.list", ("materials.list",), lambda c, x: c.materials.list()),
    Call("materials.get", ("materials.list",), lambda c, x: c.materials.get(MATERIAL)),
    Call(
        "materials.find_by_hash",
        ("materials.list",),
        lambda c, x: c.materials.find_by_hash("0" * 32),
    ),
    Call(
        "materials.is_registered",
        ("materials.list",),
        lambda c, x: c.materials.is_registered(MATERIAL),
    ),
    Call("materials.delete", ("materials.delete",), lambda c, x: c.materials.delete(MATERIAL)),
    Call("tasks.list", ("tasks.list",), lambda c, x: c.tasks.list()),
    Call("tasks.get", ("tasks.detail",), lambda c, x: c.tasks.get("task_answers_1")),
    Call(
        "tasks.get(...).wait",
        ("tasks.detail",),
        lambda c, x: _wait(c.tasks.get("task_answers_1", fetch=False)),
        waited,
    ),
    Call("tasks.delete", ("tasks.delete",), lambda c, x: c.tasks.delete("task_answers_1")),
    Call("voices.presets", ("voices.presets",), lambda c, x: c.voices.presets()),
    Call("voices.presets_page", ("voices.presets",), lambda c, x: c.voices.presets_page()),
    Call(
        "voices.preset",
        ("voices.presets",),
        lambda c, x: c.voices.preset(PRESET),
        the_preset_asked_for,
    ),
    Call("voices.clones", ("voices.clones",), lambda c, x: c.voices.clones()),
    Call("voices.rename", ("voices.rename",), lambda c, x: c.voices.rename(CLONED, "Ana")),
    Call("voices.delete", ("voices.delete",), lambda c, x: c.voices.delete(CLONED)),
]


# ------------------------------------------------------------------- rendering, as a notebook


def render(result: Any) -> None:
    """What a notebook does with a result: its repr, its HTML view, its table; and the same
    for the first few things it holds."""
    repr(result)
    if hasattr(result, "_repr_html_"):
        assert isinstance(result._repr_html_(), str)
    if hasattr(result, "to_frame"):
        result.to_frame()
    if isinstance(result, (list, tuple)):
        for item in list(result)[:3]:
            render(item)


# ------------------------------------------------------------------- the property


def _check_error(exc: DubkitError, answers: dict[str, list[Answer]]) -> None:
    if isinstance(exc, TaskTimeoutError):
        # Either the task never ended, or the last poll was cut short: it says which.
        said = str(exc)
        assert "every poll was answered" in said or "its last poll did not end" in said, said
        assert exc.task is not None
        return
    assert exc.req_id, f"{type(exc).__name__} without the req_id of its answer: {exc}"
    if isinstance(exc, UnexpectedAnswerError):
        assert exc.operation and str(exc).startswith(exc.operation)
    gateway = [a for script in answers.values() for a in script if a.kind == "gateway"]
    if isinstance(exc, APIError) and exc.http_status and exc.content_type is not None:
        # Kept from the wire: the status, the content type, an excerpt without the key.
        assert any(a.status == exc.http_status for a in gateway), exc
        assert "sk_live_0123456789abcdef" not in str(exc) + repr(exc)
        assert exc.body_excerpt is not None


@contextmanager
def _client(double: Any, loop: Any = None) -> Iterator[Any]:
    """The sync client, or (given an event loop thread) the async one behind its face."""
    if loop is None:
        with dubkit.Client("sk_answers_0123456789", double.url, retry=NO_RETRY_WAIT) as client:
            yield client
        return
    client = async_client("sk_answers_0123456789", double.url, loop, retry=NO_RETRY_WAIT)
    try:
        yield client
    finally:
        loop.run(client.unwrapped.aclose())


def _exercise(
    call: Call, double: Any, folder: Path, answers: dict[str, list[Answer]], loop: Any = None
) -> None:
    sample = folder / "sample.wav"
    if not sample.exists():
        sample.write_bytes(wav_bytes())
    ctx = Ctx(double.url, folder, sample)
    double.script({**answers, **call.setup})
    with _client(double, loop) as client:
        if call.setup.keys() & VOICES.keys():
            client.voices.presets()  # the fixed lists make the test's voices known
            client.voices.clones()
            double.script({**answers, **{k: v for k, v in call.setup.items() if k not in VOICES}})
        try:
            result = call.run(client, ctx)
        except DubkitError as exc:
            _check_error(exc, answers)
        else:
            render(result)
            if call.check is not None:
                call.check(result, ctx)
    assert not double.unscripted, f"the call used operations it does not list: {double.unscripted}"


@pytest.fixture(scope="module")
def double(artifacts: Path):
    with answer_double() as served:
        yield served
    met = {op: served.met[op] for op in sorted(served.met)}
    (artifacts / "generated-answers.json").write_text(json.dumps(met, indent=2))


def _property(
    call: Call, double: Any, folder: Path, examples: int, at: int, loop: Any = None
) -> None:
    examples_run = itertools.count()

    @seed(at)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )
    @given(answers=scripts(call.ops))
    def holds(answers: dict[str, list[Answer]]) -> None:
        here = folder / str(next(examples_run))
        here.mkdir()
        _exercise(call, double, here, answers, loop)

    holds()


@pytest.mark.parametrize("call", CALLS, ids=[c.name for c in CALLS])
def test_any_legal_answer_gives_a_result_or_a_typed_error(call: Call, double, tmp_path) -> None:
    _property(call, double, tmp_path, EXAMPLES * call.steps, SEED)


@pytest.mark.parametrize("call", CALLS, ids=[c.name for c in CALLS])
def test_any_legal_answer_through_the_async_client_gives_a_result_or_a_typed_error(
    call: Call, double, tmp_path, event_loop_thread
) -> None:
    # A quarter of the examples: the answers are read by the same core and the same plans as
    # the sync client's, which meets them all; this shows the async path keeps them.
    _property(call, double, tmp_path, EXAMPLES // 4 * call.steps, SEED + 2, event_loop_thread)


@pytest.mark.slow
@pytest.mark.parametrize("call", CALLS, ids=[c.name for c in CALLS])
def test_any_legal_answer_at_length(call: Call, double, tmp_path) -> None:
    _property(call, double, tmp_path, SLOW_EXAMPLES * call.steps, SEED + 1)


# ------------------------------------------------------------------- webhooks


def _result_fields(event: str) -> set[str]:
    """The fields the document gives ``event``'s data when its task succeeded."""
    schema = DOC["components"]["schemas"][
        DOC["webhooks"][event]["post"]["requestBody"]["content"]["application/json"]["schema"][
            "$ref"
        ].rsplit("/", 1)[-1]
    ]
    data = next(  # under "then" where the data's shape holds only for a success
        part.get("then", part)["properties"]["data"]
        for part in schema["allOf"]
        if "data" in part.get("then", part).get("properties", {})
    )
    return set(DOC["components"]["schemas"][data["$ref"].rsplit("/", 1)[-1]]["properties"])


OWN_FIELDS = {  # per event, the fields of its data that no other event's data has
    event: _result_fields(event)
    - set().union(*(_result_fields(e) for e in WEBHOOK_EVENTS if e != event))
    for event in WEBHOOK_EVENTS
}


def _any_webhook_body_parses(event: str, examples: int, at: int) -> None:
    """A body the document allows for ``event``, sent under any event name: ``parse_event``
    gives an event (or a ValidationError for a body that is no envelope); one whose data has
    its own product's fields and none of the event named is flagged, never read as empty."""

    @seed(at)
    @settings(max_examples=examples, deadline=None, database=None, print_blob=True)
    @given(body=webhook_bodies(event), under=st.sampled_from(WEBHOOK_EVENTS))
    def holds(body: dict[str, Any], under: str) -> None:
        sent = {**body, "event": under}
        try:
            parsed = parse_event(json.dumps(sent).encode())
        except dubkit.ValidationError as exc:
            assert exc.field in ("body", "data"), exc
            return
        repr(parsed)
        keys = set(sent["data"]) if isinstance(sent.get("data"), dict) else set()
        if under != event and keys & OWN_FIELDS[event] and not keys & OWN_FIELDS[under]:
            assert parsed.problem, f"{event} data under {under} parsed without a word: {sent}"

    holds()


@pytest.mark.parametrize("event", WEBHOOK_EVENTS)
def test_any_legal_webhook_body_parses_to_an_event_that_says_what_is_odd(event):
    _any_webhook_body_parses(event, EXAMPLES, SEED)


@pytest.mark.slow
@pytest.mark.parametrize("event", WEBHOOK_EVENTS)
def test_any_legal_webhook_body_at_length(event):
    _any_webhook_body_parses(event, SLOW_EXAMPLES, SEED + 1)
