"""The sandbox's HTTP face: the envelope and auth, server-side idempotency (409s), limits that hold
while bytes arrive, the admin API behind its token, and the handler table."""

from __future__ import annotations

import hashlib
import inspect
import json
import select
import socket
import stat
import subprocess
import sys
import threading
import typing
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from _storage_fixtures import api, storage_defaults  # noqa: F401  (fixtures)
from _waiting import PATIENCE

import dubkit
from dubkit import contract
from dubkit._util import extras_header
from dubkit.sandbox.admin_token import ADMIN_HEADER, read_admin_token
from dubkit.sandbox.call import Call
from dubkit.sandbox.products.routes import HANDLERS
from dubkit.schema import OPERATIONS

SEGMENTS = [{"text": "Hello world"}]


LANG = {"source": "en-US", "target": "fr-FR"}


def raw_post(box, path, body, *, key=None, idem="auto", data=None):
    headers = {"Authorization": f"Bearer {key or box.api_key}"}
    if idem == "auto":
        headers["X-Idempotency-Key"] = uuid.uuid4().hex
    elif idem is not None:
        headers["X-Idempotency-Key"] = idem
    return requests.post(
        f"{box.url}/openapi/v1{path}",
        json=body if data is None else None,
        data=data,
        headers=headers,
        timeout=10,
    )


MiB = 1024 * 1024


def api_post(box, path: str, body: bytes | dict, key: str | None = None) -> requests.Response:
    headers = {
        "Authorization": f"Bearer {key or box.api_key}",
        "X-Idempotency-Key": uuid.uuid4().hex,
        "Content-Type": "application/json",
    }
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return requests.post(f"{box.url}/openapi/v1{path}", data=data, headers=headers, timeout=60)


ADMIN_CALLS = [
    ("GET", "/info", None),
    ("GET", "/keys", None),
    ("POST", "/reset", {}),
    ("POST", "/credits", {"credits": 0}),
    ("POST", "/webhook", {"url": None}),
    ("GET", "/deliveries", None),
    ("GET", "/storage", None),
    ("POST", "/fetch", {"remote": True, "schemes": ["http"], "allow": ["0.0.0.0/0"]}),
    ("PUT", "/replayed-files/replay/x.wav", None),
]


@pytest.mark.parametrize("key", [None, "sk_wrong_key_000000"])
def test_missing_or_wrong_key_is_a_401_envelope(sandbox, key):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    answer = requests.get(f"{sandbox.url}/openapi/v1/tasks/list", headers=headers, timeout=10)
    assert answer.status_code == 401
    assert answer.json() == {"code": 401, "message": "Invalid or missing API Key", "data": None}


@pytest.mark.parametrize(
    "path, body, message",
    [
        (
            "/task/tts/create",
            {"data": [{"text": "x", "voiceId": "sv_s1_en_us_clear_f"}] * 51},
            "invalid request: data: at most 50 items, got 51",
        ),
        (
            "/task/translate/create",
            {"language": LANG, "segments": [{"text": "x"}] * 51},
            "invalid request: segments: at most 50 items, got 51",
        ),
        (
            "/task/translate/create",
            {
                "language": LANG,
                "segments": [{"text": "x"}],
                "options": {"sourceContext": {"contextWindow": 21}},
            },
            "invalid request: options.sourceContext.contextWindow: at most 20, got 21",
        ),
    ],
)
@pytest.mark.sends_invalid_requests
def test_a_limit_error_states_the_limit_and_the_value_received(sandbox, path, body, message):
    answer = raw_post(sandbox, path, body)
    assert answer.status_code == 400 and answer.json()["message"] == message


def test_extra_data_with_nan_or_infinity_is_a_400_naming_the_field(sandbox):
    before = sandbox.credits()
    for constant in (b"NaN", b"Infinity", b"-Infinity"):
        body = (
            b'{"language":{"source":"en-US","target":"fr-FR"},"segments":[{"text":"x"}],'
            b'"extraData":{"score":[1,' + constant + b"]}}"
        )
        answer = api_post(sandbox, "/task/translate/create-async", body)
        message = answer.json()["message"]
        assert answer.status_code == 400 and message.startswith(
            "invalid request: extraData.score[1]"
        )
    assert sandbox.credits() == before


def test_answers_carry_only_documented_fields_and_the_extras_beside_them(sandbox, client):
    """The sandbox's labelled extras (here a line's delivery) are not in the body; they come
    in the extras header, and dubkit's result has them back."""
    body = {"data": [{"text": "Hi", "voiceId": "sv_s1_en_us_clear_f", "emoPrompt": "happy"}]}
    answer = raw_post(sandbox, "/task/tts/create", body)
    assert set(answer.json()["data"]["results"][0]) == {"uri", "duration"}
    assert extras_header.decode(answer.headers[extras_header.HEADER]) == {
        "data": {"results": [{"emotion": "happy x0.60"}]}
    }
    assert not contract.check_answer("tts.create", 200, answer.json())
    spoken = client.tts.create(["Hi"], voice="sv_s1_en_us_clear_f", emo_prompt="happy")
    assert spoken[0].extra == {"emotion": "happy x0.60"}
    leaked = {"code": 200, "data": {"taskId": "t", "results": [], "engine": "x"}}
    assert contract.check_answer("tts.create", 200, leaked) == [
        contract.Problem("data.engine", "undocumented field")
    ]


def test_post_without_idempotency_key_names_the_header(sandbox):
    answer = raw_post(
        sandbox, "/task/translate/create", {"language": LANG, "segments": SEGMENTS}, idem=None
    )
    assert answer.status_code == 400
    assert "X-Idempotency-Key" in answer.json()["message"]


def test_malformed_json_is_a_400_envelope(sandbox):
    answer = raw_post(sandbox, "/task/translate/create", None, data=b"{not json")
    assert answer.status_code == 400
    assert answer.json()["message"].startswith("malformed JSON")


def test_validation_failure_names_the_field_never_a_framework_body(sandbox):
    answer = raw_post(
        sandbox,
        "/task/translate/create",
        {"language": LANG, "segments": [{"text": "a", "start": 2, "end": 1}]},
    )
    body = answer.json()
    assert answer.status_code == 400 and set(body) == {"code", "message", "data"}
    assert "segments[0]" in body["message"] and "end" in body["message"]


def test_unknown_path_and_method_get_envelopes(sandbox):
    auth = {"Authorization": f"Bearer {sandbox.api_key}"}
    answer = requests.get(f"{sandbox.url}/openapi/v1/no/such/thing", headers=auth, timeout=10)
    assert answer.status_code == 404 and answer.json()["code"] == 404
    answer = requests.get(
        f"{sandbox.url}/openapi/v1/task/translate/create", headers=auth, timeout=10
    )
    assert answer.status_code == 405 and answer.json()["code"] == 405
    # Without a key, auth comes first, as on the service: nothing is revealed about paths.
    answer = requests.get(f"{sandbox.url}/openapi/v1/no/such/thing", timeout=10)
    assert answer.status_code == 401


def test_body_over_the_limit_is_413(client, sandbox):
    sandbox.set_limits(body_limit=2000)
    try:
        with pytest.raises(dubkit.PayloadTooLargeError):
            client.translate.create(["x" * 3000], source="en-US", target="fr-FR")
    finally:
        sandbox.set_limits(body_limit=8 * 1024 * 1024)


def test_reused_key_is_409_with_retry_after(sandbox):
    body = {"language": LANG, "segments": SEGMENTS}
    first = raw_post(sandbox, "/task/translate/create", body, idem="same-key-1")
    again = raw_post(sandbox, "/task/translate/create", body, idem="same-key-1")
    assert first.json()["code"] == 200
    assert again.status_code == 409 and again.headers["Retry-After"] == "2"
    assert "Idempotency key already used" in again.json()["message"]
    # Scope is key + path: the same key on another path is a different submission.
    other = raw_post(sandbox, "/task/translate/create-async", body, idem="same-key-1")
    assert other.json()["code"] == 200


def test_refused_request_does_not_burn_its_key(sandbox):
    bad = raw_post(
        sandbox,
        "/task/translate/create",
        {"language": LANG, "segments": [{"text": 5}]},
        idem="fix-and-retry",
    )
    good = raw_post(
        sandbox,
        "/task/translate/create",
        {"language": LANG, "segments": SEGMENTS},
        idem="fix-and-retry",
    )
    assert bad.json()["code"] == 400 and good.json()["code"] == 200


@pytest.mark.parametrize("method, path, body", ADMIN_CALLS)
def test_admin_routes_need_the_admin_token(sandbox, method, path, body):
    key, secret = sandbox.api_key, sandbox.webhook_secret
    for token in (None, "not-the-token"):
        answer = requests.request(
            method,
            f"{sandbox.url}/_sandbox{path}",
            json=body,
            headers={ADMIN_HEADER: token} if token else {},
            timeout=10,
        )
        assert answer.status_code == 401 and answer.json()["code"] == 401
        assert answer.json()["data"] is None
        assert key not in answer.text and secret not in answer.text
    assert sandbox.api_key == key and sandbox.credits() > 0  # nothing was reset or changed


def test_a_web_page_cannot_reconfigure_the_sandbox_even_with_the_token(sandbox):
    token = read_admin_token(sandbox.data_dir)
    port = urlsplit(sandbox.url).port
    before = sandbox.credits()
    attempts = [
        {"Content-Type": "text/plain"},  # a page's simple POST
        {"Content-Type": "application/x-www-form-urlencoded"},  # an HTML form
        {"Content-Type": "application/json", "Origin": "https://evil.example"},
        {"Content-Type": "application/json", "Host": f"evil.example:{port}"},  # rebinding
    ]
    for headers in attempts:
        answer = requests.post(
            f"{sandbox.url}/_sandbox/credits",
            data=b'{"credits": 1}',
            headers={ADMIN_HEADER: token, **headers},
            timeout=10,
        )
        assert answer.status_code == 403 and answer.json()["code"] == 403, headers
    assert sandbox.credits() == before
    same_site = requests.post(
        f"{sandbox.url}/_sandbox/credits",
        json={"credits": before},
        headers={ADMIN_HEADER: token, "Origin": sandbox.url},
        timeout=10,
    )
    assert same_site.status_code == 200


def test_the_data_dir_database_and_token_are_private(sandbox):
    def mode(path: Path) -> int:
        return stat.S_IMODE(path.stat().st_mode)

    assert mode(sandbox.data_dir) == 0o700
    assert mode(sandbox.data_dir / "sandbox.sqlite3") == 0o600
    assert mode(sandbox.data_dir / "admin-token") == 0o600
    listed = sandbox.admin("GET", "/keys")
    assert listed and all("…" in k["apiKey"] for k in listed)  # lists never show a key


def test_a_chunked_body_is_refused_at_the_limit_while_it_arrives(sandbox):
    """8 MB limit, 64 MB sent in chunks: the 413 must come before the body is all there."""
    host, port = urlsplit(sandbox.url).hostname, urlsplit(sandbox.url).port
    sock = socket.create_connection((host, port), timeout=30)
    head = (
        f"POST /openapi/v1/task/translate/create HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Authorization: Bearer {sandbox.api_key}\r\nX-Idempotency-Key: {uuid.uuid4().hex}"
        f"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    sock.sendall(head.encode())
    chunk = b"%x\r\n%s\r\n" % (MiB, b" " * MiB)
    sent = 0
    try:
        while sent < 64 * MiB and not select.select([sock], [], [], 0.05)[0]:
            sock.sendall(chunk)
            sent += MiB
    except (BrokenPipeError, ConnectionResetError):
        pass
    answer = sock.recv(65536).decode(errors="replace")
    sock.close()
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert sent < 16 * MiB, f"{sent / MiB:.0f} MiB were taken before the refusal"


@pytest.mark.parametrize(
    "text, problem", [("\ud800 alone", "lone surrogate"), ("nul \x00 here", "NUL")]
)
def test_text_no_store_can_hold_is_refused_before_anything_is_charged(sandbox, text, problem):
    before = sandbox.credits()
    body = json.dumps({"language": LANG, "segments": [{"text": text}]}).encode()
    answer = api_post(sandbox, "/task/translate/create", body)
    assert answer.status_code == 400 and problem in answer.json()["message"]
    assert "segments[0].text" in answer.json()["message"]
    assert sandbox.credits() == before


def test_deep_json_is_a_400_envelope_naming_where(sandbox):
    nested: dict = {}
    node = nested
    for _ in range(100):
        node["a"] = {}
        node = node["a"]
    answer = api_post(
        sandbox,
        "/task/translate/create-async",
        {"language": LANG, "segments": [{"text": "Hi"}], "extraData": nested},
    )
    assert answer.status_code == 400 and "nested deeper than" in answer.json()["message"]
    assert answer.json()["message"].startswith("invalid request: extraData.a.a")
    very_deep = api_post(sandbox, "/task/translate/create", b"[" * 200_000 + b"]" * 200_000)
    assert very_deep.status_code == 400 and very_deep.json()["code"] == 400


def test_an_over_long_query_string_is_a_400_envelope(sandbox):
    answer = requests.get(
        f"{sandbox.url}/openapi/v1/tasks/list",
        params={"status": "x" * 6000},
        headers={"Authorization": f"Bearer {sandbox.api_key}"},
        timeout=10,
    )
    assert answer.status_code == 400 and answer.json()["code"] == 400
    assert "query string" in answer.json()["message"]


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_each_operation_has_a_handler_typed_with_its_request_model(op):
    handler = HANDLERS[op.name]
    first = next(iter(inspect.signature(handler).parameters))
    annotation = typing.get_type_hints(handler)[first]
    assert typing.get_origin(annotation) is Call, f"{handler.__qualname__}: {annotation}"
    (body,) = typing.get_args(annotation)
    model = op.body or op.query
    assert body is model, (
        f"{op.name}: {handler.__module__}.{handler.__qualname__} takes "
        f"Call[{body.__name__}], but the operation carries {model.__name__}"
    )


def test_the_table_holds_exactly_the_operations_each_with_its_own_handler():
    assert sorted(HANDLERS) == sorted(op.name for op in OPERATIONS)
    assert len(set(HANDLERS.values())) == len(OPERATIONS)


def test_a_replayed_file_is_served_where_it_was_recorded_and_nowhere_else(sandbox):
    url = sandbox.serve_file("media/recorded-task/dubbed.mp4", b"recorded bytes", "video/mp4")
    assert url == f"{sandbox.url}/files/media/recorded-task/dubbed.mp4"
    got = requests.get(url, timeout=10)
    assert got.content == b"recorded bytes" and got.headers["Content-Type"] == "video/mp4"
    assert got.headers["X-Content-Type-Options"] == "nosniff"
    page = sandbox.serve_file("replay/host/page.html", b"<script>alert(1)</script>", "text/html")
    assert requests.get(page, timeout=10).headers["Content-Type"] == "application/octet-stream"
    stored = requests.get(
        f"{sandbox.url}/files/replayed/{hashlib.sha256(b'recorded bytes').hexdigest()}", timeout=10
    )
    assert stored.status_code == 404  # the store itself is not served
    token = read_admin_token(sandbox.data_dir)
    for bad in ("../outside.wav", "replayed/abc"):
        refused = requests.put(
            f"{sandbox.url}/_sandbox/replayed-files/{bad}",
            data=b"x",
            headers={ADMIN_HEADER: token, "Content-Type": "application/octet-stream"},
            timeout=10,
        )
        assert refused.status_code in (400, 403), bad  # 403: the URL was normalised first
        if refused.status_code == 400:
            assert "path:" in refused.json()["message"]
    assert requests.get(f"{sandbox.url}/files/outside.wav", timeout=10).status_code == 404
    page = requests.put(  # a web page's simple request cannot publish bytes either
        f"{sandbox.url}/_sandbox/replayed-files/replay/y.wav",
        data=b"x",
        headers={ADMIN_HEADER: token, "Content-Type": "text/plain"},
        timeout=10,
    )
    assert page.status_code == 403


class _Jobs:
    """Jobs that note when they start and run until released (each by name, or all)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.seen = threading.Condition()
        self.release: dict[str, threading.Event] = {}
        self.all_done = threading.Event()

    def job(self, name: str):
        self.release[name] = threading.Event()

        def run() -> None:
            with self.seen:
                self.started.append(name)
                self.seen.notify_all()
            while not (self.release[name].wait(0.05) or self.all_done.is_set()):
                pass

        return run

    def wait_started(self, count: int) -> bool:
        with self.seen:
            return self.seen.wait_for(lambda: len(self.started) >= count, PATIENCE)


def test_the_pipeline_takes_keys_in_turn_not_first_come():
    """Six long jobs of one key, then one of another, on two workers: the other key's job
    starts as soon as a worker frees up, not after the first key's whole queue."""
    from dubkit.sandbox.work_pool import FairWorkPool

    pool, jobs = FairWorkPool(2), _Jobs()
    try:
        for i in range(6):
            pool.submit("key-a", jobs.job(f"a{i}"))
        pool.submit("key-b", jobs.job("b0"))
        assert jobs.wait_started(2)
        assert jobs.started == ["a0", "a1"]  # a key alone gets every worker
        jobs.release["a0"].set()
        assert jobs.wait_started(3)
        assert jobs.started[2] == "b0"  # first come would have been a2
        assert pool.queued() == {"key-a": 4}
    finally:
        jobs.all_done.set()
        pool.shutdown()


def test_a_spare_worker_starts_another_keys_job_at_once():
    """The sandbox's pool keeps one worker more than a key may use: the next key's job
    starts while the first key's long jobs all still run."""
    from dubkit.sandbox.work_pool import FairWorkPool

    pool, jobs = FairWorkPool(3, per_key=2), _Jobs()
    try:
        for i in range(6):
            pool.submit("key-a", jobs.job(f"a{i}"))
        pool.submit("key-b", jobs.job("b0"))
        assert jobs.wait_started(3)
        assert sorted(jobs.started) == ["a0", "a1", "b0"]
        assert pool.queued() == {"key-a": 4}
    finally:
        jobs.all_done.set()
        pool.shutdown()


def test_admin_routes_answer_without_a_warning():
    """The admin routes' body models are built when defined: FastAPI wraps each in an adapter of
    its own, and a deferred one built at the first request warned (and was a 500 under -W error).
    An embedded sandbox runs in the user's kernel, where that warning would show in a cell."""
    probe = (
        "import warnings\n"
        "from pydantic.warnings import UnsupportedFieldAttributeWarning\n"
        "warnings.simplefilter('error', UnsupportedFieldAttributeWarning)\n"
        "import dubkit\n"
        "box = dubkit.start_sandbox()\n"
        "try:\n"
        "    key = box.create_key(name='probe', credits=5)\n"
        "    box.update_key(key, credits=7)\n"
        "    box.set_credits(9)\n"
        "    box.set_timing('immediate')\n"
        "    box.set_throttle(rate=0, concurrency=0)\n"
        "    box.set_limits()\n"
        "    box.set_faults()\n"
        "    box.set_delivery()\n"
        "    box.reset_key(key)\n"
        "    box.remove_key(key)\n"
        "finally:\n"
        "    box.stop()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
