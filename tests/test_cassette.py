"""Cassettes: a lesson recorded once with a key, replayed offline with none.

Notebooks 00, 02 and 06 are recorded unchanged against a standalone sandbox used with its key
(as a teacher uses the service), the server is stopped, and the same notebooks replay with no
key inside a network namespace of their own: every checked output the same, every media
file the same bytes, nothing secret in the cassette. Strays, strict mode, overwriting and
the teacher's ``dubkit cassette show`` are tried on a recorded cassette in this process.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import uuid
from contextlib import redirect_stdout

import pytest
from _cassettes import LESSONS, data_uris, files_shown, recorded_once, replay, served_media
from _waiting import PATIENCE, wait_for
from test_notebooks import checked, comparable, first_difference

import dubkit
from dubkit.cassette import ANSWERED_BY, Cassette
from dubkit.cassette import record as record_into
from dubkit.cli import main as cli_main
from dubkit.webhooks import Receiver, push

pytestmark = pytest.mark.heavy  # a costly set-up: the quick loop leaves it out (README)


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    return recorded_once(tmp_path_factory)


@pytest.fixture(scope="module")
def replays(recording, tmp_path_factory):
    student = tmp_path_factory.mktemp("student")
    runs = {lesson: replay(recording, lesson, student) for lesson in LESSONS}
    return student, runs


def _connects(cell) -> bool:
    """The cell that shows the client itself, which says whether it records or replays."""
    return any("Client(" in str(o.get("data", {}).get("text/plain", "")) for o in cell.outputs)


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_replayed_lesson_shows_what_the_recording_showed(recording, replays, lesson):
    _, runs = replays
    recorded, replayed = recording.runs[lesson].notebook, runs[lesson].notebook
    compared, differ = 0, []
    for before, after in zip(recorded.cells, replayed.cells):
        if before.cell_type != "code" or not checked(before):
            continue
        if _connects(before):
            shown = str(comparable(after.outputs).get("text/plain"))
            assert f"replaying '{lesson}.dubkit'" in shown, shown
            continue
        compared += 1
        if comparable(before.outputs) != comparable(after.outputs):
            recorded_shown, replayed_shown = comparable(before.outputs), comparable(after.outputs)
            differ += [
                f"{before.source[:60]!r}, {kind}: "
                f"{first_difference(recorded_shown.get(kind), replayed_shown.get(kind))}"
                for kind in sorted(set(recorded_shown) | set(replayed_shown))
                if recorded_shown.get(kind) != replayed_shown.get(kind)
            ]
    assert compared >= 5
    assert differ == []
    text = json.dumps(replayed.dict())
    assert "the local sandbox answered" not in text  # no stray: the cassette held every call
    assert "Traceback" not in text


@pytest.mark.parametrize("lesson", LESSONS)
def test_replayed_media_are_the_recorded_bytes(recording, replays, lesson):
    student, runs = replays
    recorded, replayed = recording.runs[lesson].notebook, runs[lesson].notebook
    assert data_uris(replayed) == data_uris(recorded)  # embedded players, unsanitized
    paths = files_shown(replayed)
    assert paths == files_shown(recorded)
    served = served_media(student / "sandbox", paths)
    assert served == {path: recording.media[path] for path in paths}
    if lesson != "00_quickstart":
        assert data_uris(recorded) or paths, "a lesson with players shows media"


def test_a_cassette_holds_no_secret(recording):
    secrets = {
        "API key": recording.key,
        "webhook secret": recording.webhook_secret,
        "admin token": recording.admin_token,
    }
    signed = re.compile(rb"(signature|expires|X-Amz-[A-Za-z]+)=|Bearer ")
    for lesson in LESSONS:
        for path in recording.cassette(lesson).rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                for name, secret in secrets.items():
                    assert secret.encode() not in data, f"{name} in {path}"
                assert not signed.search(data), f"a signed query or header in {path}"
    # The recording had signed URLs to leave out: the upload went to a presigned URL.
    dub = recording.cassette("06_translate_and_dub")
    index = json.loads((dub / "index.json").read_text())
    assert any(call["method"] == "PUT" for call in index["calls"])
    # The uploaded clip is known by its hash only, though an answer named its file, and the
    # files made from it (its audio track, a thumbnail) are not kept at all.
    uploaded = [sha for path, sha in recording.media.items() if path.startswith("materials/")]
    assert uploaded and not any((dub / "media" / sha).exists() for sha in uploaded)
    owned = [u for u in index["urls"].values() if "/materials/" in u["url"]]
    assert len(owned) >= 3 and all(u["media"] is None for u in owned)
    assert any(u.get("upload", {}).get("sha256") == uploaded[0] for u in owned)


def test_the_teacher_sees_what_a_cassette_holds(recording):
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli_main(["cassette", "show", str(recording.cassette("06_translate_and_dub"))]) == 0
    shown = out.getvalue()
    assert "POST /openapi/v1/task/media-translation/create-async" in shown
    summary = Cassette.load(recording.cassette("06_translate_and_dub")).summary()
    assert f"{len(summary['media'])} media files" in shown
    assert f"{summary['total_bytes'] / 1e6:.1f} MB" in shown


def test_recording_never_writes_over_a_cassette_unasked(recording, sandbox, tmp_path):
    taken = shutil.copytree(recording.cassette("00_quickstart"), tmp_path / "taken.dubkit")
    before = json.loads((taken / "index.json").read_text())
    with pytest.raises(dubkit.ValidationError) as refused:
        Cassette.new(taken, before["service"], overwrite=False)
    assert refused.value.field == "record" and "record_mode='overwrite'" in str(refused.value)
    assert json.loads((taken / "index.json").read_text()) == before
    with pytest.raises(dubkit.ValidationError, match="was recorded from"):  # another service
        record_into(dubkit.Client(sandbox.api_key, sandbox.url).transport, taken, mode="append")
    assert Cassette.new(taken, "http://127.0.0.1:1", overwrite=True).calls() == []


def test_a_second_notebook_appends_to_a_lesson(sandbox, tmp_path):
    """Each notebook is its own process recording into one course cassette."""
    lesson = tmp_path / "course.dubkit"
    script = (
        "import sys, dubkit; dubkit.connect(quiet=True).translate.create("
        "[sys.argv[1]], source='en-US', target='fr-FR')"
    )
    for line, mode in (("First notebook.", "new"), ("Second notebook.", "append")):
        env = {
            **os.environ,
            "DUBKIT_API_KEY": sandbox.api_key,
            "DUBKIT_BASE_URL": sandbox.url,
            "DUBKIT_RECORD": str(lesson),
            "DUBKIT_RECORD_MODE": mode,
        }
        subprocess.run([sys.executable, "-c", script, line], env=env, check=True, timeout=PATIENCE)
    texts = [c["body"]["segments"][0]["text"] for c in Cassette.load(lesson).calls()]
    assert texts == ["First notebook.", "Second notebook."]


@pytest.fixture(autouse=True)
def _own_sandbox_dir(tmp_path_factory, monkeypatch):
    """Replay in this process starts this process's embedded sandbox: on a data dir of its
    own, never the one the notebooks under nbval share (it would hold that dir's lock)."""
    monkeypatch.setenv("DUBKIT_SANDBOX_DIR", str(tmp_path_factory.getbasetemp() / "replays"))


@pytest.fixture
def student(recording, tmp_path):
    """Lesson 00's cassette, to replay in this process (strays: the embedded sandbox)."""
    return shutil.copytree(recording.cassette("00_quickstart"), tmp_path / "lesson.dubkit")


def test_a_stray_goes_to_the_sandbox_with_a_note(student):
    out = io.StringIO()
    with redirect_stdout(out):
        client = dubkit.connect(replay=student, quiet=True)
        same = client.translate.create(
            ["Welcome to the dubbing studio.", "Today we translate a short film.", "2024"],
            source="en-US",
            target="fr-FR",
        )
        strayed = client.translate.create(
            ["A line nobody recorded."], source="en-US", target="fr-FR"
        )
    assert client.replaying is not None
    assert client.replaying.answered == {"cassette": 1, "sandbox": 1}
    assert client.replaying.answered_by(same) == "cassette"
    assert client.replaying.answered_by(strayed) == "sandbox"
    assert client.replaying.strayed == ["POST /openapi/v1/task/translate/create"]
    assert out.getvalue().count("not in lesson.dubkit; the local sandbox answered") == 1
    assert strayed.texts and same.texts and same.texts[0] != strayed.texts[0]
    raw = client.transport.session.post(
        client.transport.url("/task/translate/create"),
        json={"segments": [{"text": "Hello"}], "language": {"source": "en-US", "target": "fr-FR"}},
        headers={"X-Idempotency-Key": uuid.uuid4().hex},
    )
    assert raw.headers[ANSWERED_BY] == "sandbox"


def test_strict_replay_names_the_closest_recorded_call(student):
    client = dubkit.connect(replay=student, quiet=True, strays="error")
    with pytest.raises(dubkit.ReplayMissError) as missed:
        client.translate.create(
            ["Welcome to the dubbing studio.", "Today we translate a short film.", "2025"],
            source="en-US",
            target="fr-FR",
        )
    said = str(missed.value)
    assert missed.value.call == "POST /openapi/v1/task/translate/create"
    assert "differs at body.segments[2].text" in said, said


def test_replay_sends_nothing_to_any_other_address(student, monkeypatch):
    """Not even through the proxy a hub's environment names: the recorded service is a
    public host here, so the client would send to it through the proxy; the cassette's
    calls, a stray and a file all stay on this machine, and a URL elsewhere is refused."""
    index = json.loads((student / "index.json").read_text())
    index["service"] = "https://api.service.example"
    (student / "index.json").write_text(json.dumps(index))
    proxy = socket.socket()
    proxy.bind(("127.0.0.1", 0))
    proxy.listen()
    proxy.settimeout(0.5)
    address = f"http://127.0.0.1:{proxy.getsockname()[1]}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, address)
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    try:
        client = dubkit.connect(replay=student, quiet=True)
        assert client.transport.session.proxies  # the client would use it for the service
        client.translate.create(
            ["Welcome to the dubbing studio.", "Today we translate a short film.", "2024"],
            source="en-US",
            target="fr-FR",
        )
        client.translate.create(["Never recorded either."], source="en-US", target="de-DE")
        assert client.replaying is not None and client.replaying.answered == {
            "cassette": 1,
            "sandbox": 1,
        }
        with pytest.raises(dubkit.ReplayMissError, match="replay reaches no network"):
            client.transport.download("https://example.com/elsewhere.wav")
        with pytest.raises(OSError):  # nothing came to the proxy
            proxy.accept()
    finally:
        proxy.close()


def test_a_base_url_credential_never_reaches_the_cassette(sandbox, tmp_path):
    host = sandbox.url.split("://", 1)[1]
    with dubkit.Client(sandbox.api_key, f"http://alice:hunter2@{host}") as teacher:
        record_into(teacher.transport, tmp_path / "lesson.dubkit")
        teacher.translate.create(["Hello."], source="en-US", target="fr-FR")
    index = (tmp_path / "lesson.dubkit" / "index.json").read_text()
    assert "hunter2" not in index and "alice" not in index
    assert json.loads(index)["calls"][0]["url"] == "/openapi/v1/task/translate/create"


def test_a_url_sent_in_a_body_is_matched_with_its_query():
    """Two videos that differ only in their query are two requests (the query itself is
    written down as a hash: it may be a signature)."""
    from dubkit.cassette.matching import Matcher

    matcher = Matcher("https://api.example.com")

    def key(url: str) -> str:
        body = json.dumps({"source": {"url": url}}).encode()
        return matcher.key(
            matcher.request("POST", "https://api.example.com/openapi/v1/x", body, True)
        )

    assert key("https://video.example/watch?v=AAA") != key("https://video.example/watch?v=BBB")
    shown = matcher.request(
        "POST", "https://api.example.com/openapi/v1/x", b'{"u": "https://s.example/a?sig=1"}', True
    )
    assert "sig=1" not in json.dumps(shown)


@pytest.fixture
def pushed(sandbox, tmp_path):
    """What a receiver in this process accepts from the session sandbox, as pushed events."""
    receiver = Receiver(sandbox.webhook_secret, store=tmp_path / "events.sqlite3")
    sandbox.set_webhook(receiver.serve(port=0))
    got: list = []
    unsubscribe = push.subscribe(got.append)
    yield got
    unsubscribe()
    receiver.stop()
    sandbox.set_webhook(None)


def test_an_event_that_beats_its_tasks_answer_is_still_recorded(sandbox, pushed, tmp_path):
    """A quick task's webhook can reach this process's receiver before the recording client
    has read the answer that names the task (seen on a busy machine): the recorder keeps the
    event until an answer names its task, then records it."""
    lesson = tmp_path / "early.dubkit"
    with dubkit.Client(sandbox.api_key, sandbox.url) as other:  # not recorded: its event
        task = other.translate.create_async(["Early."], source="en-US", target="de-DE")
        assert wait_for(lambda: [e for e in pushed if e.task_id == task.task_id])
    with dubkit.Client(sandbox.api_key, sandbox.url) as teacher:
        record_into(teacher.transport, lesson)  # listening from now on
        push.publish(next(e for e in pushed if e.task_id == task.task_id))  # arrives first
        assert not Cassette.load(lesson).events(task.task_id)  # no answer named it yet
        teacher.tasks.get(task.task_id)  # now one does
    recorded = Cassette.load(lesson).events(task.task_id)
    assert [json.dumps(e).count(task.task_id) > 0 for e in recorded] == [True]


def test_webhook_events_recorded_are_pushed_to_task_cells_in_replay(sandbox, pushed, tmp_path):
    """A receiver accepted the task's event while recording; in replay, with a receiver
    running, task cells get the same event pushed after the replayed create."""
    lesson = tmp_path / "pushed.dubkit"
    with dubkit.Client(sandbox.api_key, sandbox.url) as teacher:  # as the service is used
        record_into(teacher.transport, lesson)
        task = teacher.translate.create_async(["The tide turns."], source="en-US", target="de-DE")
        assert wait_for(lambda: [e for e in pushed if e.task_id == task.task_id])
    recorded = [e.to_wire() for e in pushed if e.task_id == task.task_id]
    assert wait_for(lambda: Cassette.load(lesson).events(task.task_id))  # its own listener
    pushed.clear()
    student = dubkit.connect(replay=lesson, quiet=True)
    again = student.translate.create_async(["The tide turns."], source="en-US", target="de-DE")
    assert again.task_id == task.task_id
    again_pushed = wait_for(lambda: [e for e in pushed if e.task_id == task.task_id])
    assert [e.to_wire() for e in again_pushed] == recorded
    for path in lesson.rglob("*"):  # the receiver verified with it; it is not kept
        if path.is_file():
            assert sandbox.webhook_secret.encode() not in path.read_bytes()
