"""An independent referee: Prism, serving dubkit's own contract document, checks every request.

Prism (``@stoplight/prism-cli`` from npm; ``.ci/run`` installs it into ``.ci/node``) validates
each request against ``dubkit/contract/openapi.yaml`` and logs a ``Violation: request...`` line
for any it refuses. Two runs of dubkit's public calls:

* through ``prism proxy`` to the session sandbox: real answers, so every step of every call
  (upload, dub, wait) is sent and refereed, and the calls must succeed;
* against ``prism mock --dynamic``: answers Prism makes up from the document, so each call
  meets answers no sandbox gives; any typed dubkit error is fine there, a bare one is not.

Either way a request Prism refuses fails the test. Without Prism the module is skipped, unless
``DUBKIT_REQUIRE_PRISM`` is set (``.ci/run`` sets it): then a missing Prism fails.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
from _clients import async_client
from _waiting import PATIENCE, wait_for

import dubkit
from dubkit import samples

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "dubkit" / "contract" / "openapi.yaml"
REQUIRED = bool(os.environ.get("DUBKIT_REQUIRE_PRISM"))


def _prism() -> str | None:
    local = ROOT / ".ci" / "node" / "node_modules" / ".bin" / "prism"
    return (
        os.environ.get("DUBKIT_PRISM")
        or (str(local) if local.exists() else None)
        or (shutil.which("prism"))
    )


PRISM = _prism()
pytestmark = [
    pytest.mark.skipif(
        PRISM is None and not REQUIRED, reason="Prism is not installed (.ci/run installs it)"
    ),
    pytest.mark.heavy,  # a costly set-up: the quick loop leaves it out (README)
]
# A mock logs each violation; a proxy logs only that it refused the request (the violations
# are in the 422 it answers, which fails the dubkit call that sent it).
VIOLATION = re.compile(r"Violation: (request\S*) (.*)|(Request terminated with error): (.*)")


@dataclass
class Prism:
    """A running Prism: its URL, and everything it logged."""

    url: str
    log: list[str] = field(default_factory=list)

    def refused(self) -> list[str]:
        return [
            " ".join(filter(None, m.groups())) for line in self.log if (m := VIOLATION.search(line))
        ]

    def served(self) -> int:
        """Requests Prism received (its start-up lines list every route: they do not count)."""
        return sum("[HTTP SERVER]" in line and "Request received" in line for line in self.log)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(*args: str) -> Iterator[Prism]:
    if PRISM is None:
        pytest.fail("DUBKIT_REQUIRE_PRISM is set and no Prism was found (run .ci/run)")
    port = _free_port()
    process = subprocess.Popen(
        [PRISM, *args, "-p", str(port), "-h", "127.0.0.1", "--errors"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0"},
    )
    prism = Prism(f"http://127.0.0.1:{port}")
    listening = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            prism.log.append(line.rstrip())
            if "Prism is listening" in line:
                listening.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert listening.wait(PATIENCE), "Prism did not start:\n" + "\n".join(prism.log[-20:])
        yield prism
    finally:
        process.terminate()
        process.wait(timeout=PATIENCE)


@pytest.fixture
def proxy(sandbox) -> Iterator[Prism]:
    sandbox.set_timing("immediate")
    yield from _start("proxy", str(DOCUMENT), sandbox.url)


@pytest.fixture
def dynamic_mock() -> Iterator[Prism]:
    yield from _start("mock", "--dynamic", str(DOCUMENT))


# ------------------------------------------------------------------- the calls


@dataclass
class Made:
    """What the calls made, for the calls after them."""

    folder: Path
    patience: float = PATIENCE  # how long a wait may take: short where answers are made up
    voice: str = ""
    material: Any = None
    clone: Any = None
    task: Any = None


def _voice(c: dubkit.Client, m: Made) -> Any:
    voices = c.voices.presets(locale="en-US", limit=3)
    m.voice = voices[0].voice_id if voices else "sv_none"
    return voices


def _upload(c: dubkit.Client, m: Made) -> Any:
    clip = samples.narrated_clip(m.folder / "clip.mp4", ["Hello from the referee."])
    m.material = c.materials.upload(clip, progress=False, state_dir=m.folder / "state")
    return m.material


def _clone(c: dubkit.Client, m: Made) -> Any:
    sample = samples.speech_recording(m.folder / "me.wav", "Clone me for the referee, please.")
    m.clone = c.clones.create(sample, name="referee")
    return m.clone


def _dub(c: dubkit.Client, m: Made) -> Any:
    if m.material is None:
        return None
    m.task = c.dubbing.create(m.material, target="fr-FR").wait(timeout=m.patience)
    return m.task


Step = Callable[[dubkit.Client, Made], Any]
CALLS: list[tuple[str, Step]] = [
    ("voices.presets", _voice),
    ("voices.preset", lambda c, m: c.voices.preset(m.voice)),
    ("voices.presets_page", lambda c, m: c.voices.presets_page(page_size=2)),
    ("tts.create", lambda c, m: c.tts.create(["Hello.", "Goodbye."], voice=m.voice)),
    ("tts.create_async", lambda c, m: c.tts.create_async(["Hi."], voice=m.voice).wait(m.patience)),
    (
        "translate.create",
        lambda c, m: c.translate.create(["Hello."], source="en-US", target="fr-FR"),
    ),
    (
        "translate.create_async",
        lambda c, m: c.translate.create_async(["Hi."], source="en-US", target="de-DE").wait(
            m.patience
        ),
    ),
    ("materials.upload", _upload),
    ("materials.list", lambda c, m: c.materials.list(limit=5)),
    ("clones.create", _clone),
    ("voices.clones", lambda c, m: c.voices.clones()),
    ("voices.rename", lambda c, m: m.clone and c.voices.rename(m.clone, "referee 2")),
    ("dubbing.create", _dub),
    ("tasks.list", lambda c, m: c.tasks.list(limit=5)),
    ("tasks.get", lambda c, m: m.task and c.tasks.get(m.task.task_id)),
    ("tasks.delete", lambda c, m: m.task and c.tasks.delete(m.task.task_id)),
    ("voices.delete", lambda c, m: m.clone and c.voices.delete(m.clone)),
    ("materials.delete", lambda c, m: m.material and c.materials.delete(m.material)),
]


def _run_all(
    client: Any, folder: Path, errors_allowed: bool, calls: list[tuple[str, Step]] = CALLS
) -> dict[str, str]:
    """Each call in turn; what it gave (a typed error's class where errors are allowed)."""
    made, outcome = Made(folder, patience=2.0 if errors_allowed else PATIENCE), {}
    for name, step in calls:
        try:
            step(client, made)
            outcome[name] = "ok"
        except dubkit.DubkitError as exc:
            if not errors_allowed:
                raise
            outcome[name] = type(exc).__name__
    return outcome


def test_every_request_of_every_call_passes_prism_in_front_of_the_sandbox(proxy, sandbox, tmp_path):
    with dubkit.Client(sandbox.api_key, proxy.url) as client:
        outcome = _run_all(client, tmp_path, errors_allowed=False)
    assert set(outcome.values()) == {"ok"}
    print(f"Prism refereed {proxy.served()} requests")
    assert not proxy.refused(), "Prism refused requests:\n" + "\n".join(proxy.refused())
    assert proxy.served() >= 25, proxy.log[-20:]  # the requests went through Prism

    # The referee does refuse: a create without its idempotency key.
    refused = requests.post(
        f"{proxy.url}/openapi/v1/task/translate/create",
        json={"language": {"source": "en-US", "target": "fr-FR"}, "segments": [{"text": "Hi"}]},
        headers={"Authorization": f"Bearer {sandbox.api_key}"},
        timeout=PATIENCE,
    )
    assert refused.status_code == 422 and "x-idempotency-key" in refused.text
    assert wait_for(proxy.refused), proxy.log[-5:]


def test_every_request_passes_prism_when_it_makes_the_answers_up(dynamic_mock, tmp_path):
    no_wait = dubkit.RetryPolicy(max_retries=1, backoff=0.0, max_backoff=0.0, max_retry_after=0.0)
    with dubkit.Client("sk_referee_0123456789", dynamic_mock.url, retry=no_wait) as client:
        outcome = _run_all(client, tmp_path, errors_allowed=True)
    print("against answers Prism made up:", outcome)
    assert not dynamic_mock.refused(), "Prism refused requests:\n" + "\n".join(
        dynamic_mock.refused()
    )
    assert dynamic_mock.served() >= len(CALLS) // 2, dynamic_mock.log[-20:]


def test_the_async_client_s_requests_pass_prism_in_front_of_the_sandbox(
    proxy, sandbox, tmp_path, event_loop_thread
):
    client = async_client(sandbox.api_key, proxy.url, event_loop_thread)
    before = proxy.served()
    try:
        outcome = _run_all(client, tmp_path, errors_allowed=False)
    finally:
        event_loop_thread.run(client.unwrapped.aclose())
    assert set(outcome.values()) == {"ok"}, outcome
    assert not proxy.refused(), "Prism refused requests:\n" + "\n".join(proxy.refused())
    assert wait_for(lambda: proxy.served() - before >= 25), proxy.log[-20:]  # through Prism


def test_the_async_client_meets_prism_s_made_up_answers_with_results_or_typed_errors(
    dynamic_mock, tmp_path, event_loop_thread
):
    no_wait = dubkit.RetryPolicy(max_retries=1, backoff=0.0, max_backoff=0.0, max_retry_after=0.0)
    client = async_client(
        "sk_referee_0123456789", dynamic_mock.url, event_loop_thread, retry=no_wait
    )
    before = dynamic_mock.served()
    try:
        outcome = _run_all(client, tmp_path, errors_allowed=True)
    finally:
        event_loop_thread.run(client.unwrapped.aclose())
    print("against answers Prism made up, through the async client:", outcome)
    assert not dynamic_mock.refused(), "Prism refused requests:\n" + "\n".join(
        dynamic_mock.refused()
    )
    assert wait_for(lambda: dynamic_mock.served() - before >= len(CALLS) // 2), dynamic_mock.log[
        -20:
    ]
