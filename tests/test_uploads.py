"""The client's uploads: MD5 dedup, one PUT or parallel parts, progress, resume after a crash or
an edit, abort, where resume state lives."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest
import requests
from _double import STUB, Answer, answer_double, fixed, wav_bytes
from _html import plays_by_itself
from _storage_fixtures import api, storage_defaults  # noqa: F401  (fixtures)

import dubkit
from dubkit import samples
from dubkit.results import Material
from dubkit.uploads import pending_states
from dubkit.uploads.state import default_state_dir
from dubkit.widgets.uploads import UploadProgressBar

MiB = 1024 * 1024


KILLED_UPLOADER = r"""
import os, signal, sys
import dubkit

client = dubkit.Client(sys.stdin.readline().strip(), sys.argv[1])
mode = sys.argv[4]

def die(*_):
    os.kill(os.getpid(), signal.SIGKILL)

def report(progress):
    if mode.startswith("after-parts") and progress.parts_done >= int(mode.split()[1]):
        die()

def completed(response, *args, **kwargs):
    if response.request.path_url.split("?")[0].endswith("/multipart/complete") \
            and response.ok and response.json().get("code") == 200:
        die()

if mode == "after-complete":
    client.transport.session.hooks["response"].append(completed)
client.materials.upload(sys.argv[2], part_size=5 * 2**20, concurrency=1,
                        multipart_threshold=2**20, state_dir=sys.argv[3], progress=report)
print("finished", flush=True)
"""


@pytest.fixture
def state_dir(tmp_path):
    return tmp_path / "upload-state"


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def live_ids_with_hash(api, file_hash: str) -> list[str]:
    return [m.material_id for m in api.materials.list() if m.file_hash == file_hash]


def sessions(api, sandbox) -> list[dict]:
    """The key's upload sessions (gen-upload-url and initiate each open one)."""
    query = urlencode({"apiKey": api.transport._secret})
    return sandbox.admin("GET", f"/uploads?{query}")["sessions"]


def crash_while_uploading(api, path: Path, state_dir: Path, mode: str) -> None:
    """Run the uploader on ``path`` until it kills itself (``mode``, see KILLED_UPLOADER)."""
    uploader = subprocess.run(
        [sys.executable, "-c", KILLED_UPLOADER, api.base_url, str(path), str(state_dir), mode],
        input=api.transport._secret + "\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert uploader.returncode == -signal.SIGKILL, (uploader.returncode, uploader.stderr)
    assert "finished" not in uploader.stdout


def edit_in_place_keeping_size_and_mtime(path: Path, offset: int) -> str:
    """Overwrite 64 KiB at ``offset`` with other bytes, then put the mtime back; the old MD5."""
    before, old_md5 = path.stat(), md5(path)
    with open(path, "r+b") as handle:
        handle.seek(offset)
        old = handle.read(64 * 1024)
        handle.seek(offset)
        handle.write(bytes(b ^ 0xFF for b in old))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert md5(path) != old_md5
    return old_md5


def stored_md5(material) -> str:
    """MD5 of the material's file as the sandbox serves it."""
    answer = requests.get(material.address_url, timeout=30)
    answer.raise_for_status()
    return hashlib.md5(answer.content).hexdigest()


class Phases:
    def __init__(self):
        self.phases: list[str] = []
        self.last = None

    def __call__(self, progress):
        self.last = progress
        if not self.phases or self.phases[-1] != progress.phase:
            self.phases.append(progress.phase)


def live_with_hash(api, file_hash: str) -> list[Material]:
    return [m for m in api.materials.list() if m.file_hash == file_hash]


class Recorder:
    """A progress callback that keeps every phase and, while registering, the parts stored."""

    def __init__(self, sandbox=None, state_dir=None):
        self.phases: list[str] = []
        self.last = None
        self.parts_at_registering = None
        self._sandbox, self._state_dir = sandbox, state_dir

    def __call__(self, progress):
        self.last = progress
        if not self.phases or self.phases[-1] != progress.phase:
            self.phases.append(progress.phase)
            if progress.phase == "registering" and self._sandbox is not None:
                (state,) = pending_states(self._state_dir)
                self.parts_at_registering = self._sandbox.admin(
                    "GET", f"/storage/uploads/{state.data['uploadId']}"
                )["parts"]


UPLOADER = r"""
import sys
import dubkit
client = dubkit.Client(sys.argv[1], sys.argv[2])
def report(progress):
    print("parts", progress.parts_done, flush=True)
client.materials.upload(sys.argv[3], part_size=5 * 2**20, concurrency=1,
                        multipart_threshold=2**20, state_dir=sys.argv[4], progress=report)
print("finished", flush=True)
"""


def interrupted_upload(api, path, state_dir):
    """Upload ``path`` in 5 MiB parts and interrupt it (as Ctrl-C would) after the first part;
    return the resume state it left."""

    def stop_after_first_part(progress):
        if progress.parts_done >= 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        api.materials.upload(
            path,
            progress=stop_after_first_part,
            part_size=5 * MiB,
            multipart_threshold=MiB,
            concurrency=1,
            state_dir=state_dir,
        )
    (state,) = pending_states(state_dir)
    return state


def test_a_large_upload_opens_no_session_it_does_not_use(api, sandbox, tmp_path):
    path = samples.noise_wav(tmp_path / "long.wav", 3 * 2**20)
    material = api.materials.upload(
        path, progress=False, multipart_threshold=2**20, state_dir=tmp_path / "state"
    )
    sessions = sandbox.admin("GET", f"/uploads?apiKey={api.transport._secret}")["sessions"]
    assert [(s["kind"], s["state"]) for s in sessions] == [("multipart", "completed")]
    again = api.materials.upload(
        path, progress=False, multipart_threshold=2**20, state_dir=tmp_path / "state"
    )
    assert again.material_id == material.material_id
    assert len(sandbox.admin("GET", f"/uploads?apiKey={api.transport._secret}")["sessions"]) == 1


def test_upload_resume_state_follows_a_moved_sandbox_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("DUBKIT_UPLOAD_STATE_DIR", raising=False)
    monkeypatch.setenv("DUBKIT_SANDBOX_DIR", str(tmp_path / "box"))
    assert default_state_dir() == tmp_path / "box-uploads"
    monkeypatch.setenv("DUBKIT_UPLOAD_STATE_DIR", str(tmp_path / "mine"))
    assert default_state_dir() == tmp_path / "mine"
    monkeypatch.delenv("DUBKIT_UPLOAD_STATE_DIR")
    monkeypatch.delenv("DUBKIT_SANDBOX_DIR")
    assert default_state_dir() == Path.home() / ".cache" / "dubkit" / "uploads"


def test_a_file_edited_in_place_after_a_crash_is_uploaded_afresh(api, sandbox, tmp_path, state_dir):
    path = samples.noise_wav(tmp_path / "edited.wav", 16 * MiB)  # parts 5+5+5+1 MiB
    crash_while_uploading(api, path, state_dir, "after-parts 1")
    (old,) = pending_states(state_dir)
    assert 1 in old.etags and len(old.etags) < 4

    old_md5 = edit_in_place_keeping_size_and_mtime(path, offset=MiB)  # inside sent part 1
    assert old.matches(path)  # size and mtime alone cannot see the edit

    material = api.materials.upload(path, progress=False, state_dir=state_dir)
    assert material.file_hash == md5(path)
    assert stored_md5(material) == md5(path)  # the new bytes, all of them
    assert live_ids_with_hash(api, old_md5) == []
    assert sandbox.admin("GET", f"/storage/uploads/{old.data['uploadId']}")["state"] == "aborted"
    assert list(pending_states(state_dir)) == []


def test_parts_of_a_state_without_digests_are_not_trusted(api, sandbox, tmp_path, state_dir):
    # A state written before part digests were kept (or hand-made): its sent parts cannot be
    # checked, so an in-place edit must not slip through them either.
    path = samples.noise_wav(tmp_path / "legacy.wav", 12 * MiB)
    old = interrupted_upload(api, path, state_dir)
    legacy = {k: v for k, v in old.data.items() if k != "partDigests"} | {"version": 1}
    old.file.write_text(json.dumps(legacy))
    old_md5 = edit_in_place_keeping_size_and_mtime(path, offset=MiB)

    material = api.materials.upload(path, progress=False, state_dir=state_dir)
    assert material.file_hash == md5(path) and stored_md5(material) == md5(path)
    assert live_ids_with_hash(api, old_md5) == []
    assert sandbox.admin("GET", f"/storage/uploads/{old.data['uploadId']}")["state"] == "aborted"


def test_a_crash_right_after_registration_returns_the_registered_material(
    api, sandbox, tmp_path, state_dir
):
    path = samples.noise_wav(tmp_path / "registered.wav", 12 * MiB)  # parts 5+5+2 MiB
    crash_while_uploading(api, path, state_dir, "after-complete")
    (state,) = pending_states(state_dir)  # the crash left the state...
    assert sorted(state.etags) == [1, 2, 3]
    (registered,) = live_ids_with_hash(api, md5(path))  # ...and the material
    assert registered == state.data["materialId"]
    assert len(sessions(api, sandbox)) == 1

    seen = Phases()
    material = api.materials.upload(path, progress=seen, state_dir=state_dir)
    assert material.material_id == registered
    assert live_ids_with_hash(api, md5(path)) == [registered]
    assert len(sessions(api, sandbox)) == 1  # no second upload began
    assert seen.last.sent == seen.last.resumed_bytes == path.stat().st_size  # none sent now
    assert seen.last.verified == path.stat().st_size  # checked against the file first
    assert "registering" not in seen.phases and seen.phases[-1] == "done"
    assert list(pending_states(state_dir)) == []


def test_a_file_edited_after_a_crash_after_registration_is_uploaded_again(
    api, sandbox, tmp_path, state_dir
):
    path = samples.noise_wav(tmp_path / "later.wav", 12 * MiB)
    crash_while_uploading(api, path, state_dir, "after-complete")
    (registered,) = live_ids_with_hash(api, md5(path))
    old_md5 = edit_in_place_keeping_size_and_mtime(path, offset=6 * MiB)  # inside part 2

    material = api.materials.upload(path, progress=False, state_dir=state_dir)
    assert material.material_id != registered
    assert material.file_hash == md5(path) and stored_md5(material) == md5(path)
    assert live_ids_with_hash(api, old_md5) == [registered]  # the old material stays as is
    assert list(pending_states(state_dir)) == []


def test_a_small_file_is_one_put_then_a_registered_material(api, tmp_path, state_dir):
    path = samples.speech_recording(tmp_path / "hello.wav", "Hello from a small file.")
    seen = Recorder()
    material = api.materials.upload(path, progress=seen, state_dir=state_dir)
    assert isinstance(material, Material) and material.category == "audio"
    assert material.file_hash == md5(path) and material.filesize == path.stat().st_size
    assert material.name == "hello.wav" and material.duration_seconds > 1
    assert seen.phases == ["hashing", "uploading", "registering", "done"]
    assert seen.last.parts_total == 1 and seen.last.sent == path.stat().st_size
    assert api.materials.is_registered(material.material_id)
    assert [m.material_id for m in api.materials.list()] == [material.material_id]

    again = Recorder()
    same = api.materials.upload(path, progress=again, state_dir=state_dir)
    assert same.material_id == material.material_id
    assert again.last.duplicate and again.last.sent == 0 and "registering" not in again.phases


def test_bad_input_is_refused_before_any_request(tmp_path):
    offline = dubkit.Client("sk_test_never_sent", "http://127.0.0.1:9")  # nothing listens
    (tmp_path / "empty.wav").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("just some text\n" * 100)
    (tmp_path / "script.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nHello\n")
    noname = samples.noise_wav(tmp_path / "noise", 4096)
    sound = samples.noise_wav(tmp_path / "noise.wav", 4096)
    cases = [
        (tmp_path / "missing.wav", {}, "path", "no such file"),
        (tmp_path / "empty.wav", {}, "path", "empty"),
        (tmp_path / "notes.txt", {}, "path", "text file"),
        (tmp_path / "script.srt", {}, "path", "text file"),
        (tmp_path, {}, "path", "not a file"),
        (noname, {}, "fileName", "extension"),
        (sound, {"part_size": 1 * MiB}, "part_size", "5 MiB"),
        (sound, {"concurrency": 0}, "concurrency", "at least 1"),
    ]
    for path, options, field, problem in cases:
        with pytest.raises(dubkit.ValidationError, match=problem) as caught:
            offline.materials.upload(path, progress=False, **options)
        assert caught.value.field == field


def test_a_large_file_goes_in_parallel_parts_each_sent_once(api, sandbox, tmp_path, state_dir):
    path = samples.noise_wav(tmp_path / "large.wav", 21 * MiB)
    seen = Recorder(sandbox, state_dir)
    material = api.materials.upload(
        path,
        progress=seen,
        part_size=5 * MiB,
        concurrency=3,
        multipart_threshold=8 * MiB,
        state_dir=state_dir,
    )
    assert material.file_hash == md5(path) and material.filesize == 21 * MiB
    assert [(p["partNumber"], p["size"], p["puts"]) for p in seen.parts_at_registering] == [
        (1, 5 * MiB, 1),
        (2, 5 * MiB, 1),
        (3, 5 * MiB, 1),
        (4, 5 * MiB, 1),
        (5, MiB, 1),
    ]
    assert seen.last.parts_done == seen.last.parts_total == 5
    assert list(pending_states(state_dir)) == []  # nothing left to resume


def test_an_upload_killed_halfway_resumes_from_its_state_file(api, sandbox, tmp_path, state_dir):
    path = samples.noise_wav(tmp_path / "killed.wav", 27 * MiB)  # 6 parts of 5 MiB
    sandbox.admin("POST", "/storage", putLatencyMs=400)  # parts take a while
    uploader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            UPLOADER,
            api.transport._secret,
            api.base_url,
            str(path),
            str(state_dir),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        for line in uploader.stdout:  # type: ignore[union-attr]
            assert line.strip() != "finished", "the upload ended before it was killed"
            if line.startswith("parts") and int(line.split()[1]) >= 2:
                uploader.send_signal(signal.SIGKILL)
                break
    finally:
        uploader.kill()
        uploader.wait()
    sandbox.admin("POST", "/storage", putLatencyMs=0)

    (state,) = pending_states(state_dir)
    done_before = sorted(state.etags)
    assert 2 <= len(done_before) < 6
    assert live_with_hash(api, md5(path)) == []  # nothing half registered

    seen = Recorder(sandbox, state_dir)
    material = api.materials.upload(path, progress=seen, state_dir=state_dir)
    assert seen.phases[0] == "uploading"  # no second MD5 pass either
    assert seen.last.resumed_parts == len(done_before)
    puts = {p["partNumber"]: p["puts"] for p in seen.parts_at_registering}
    assert sorted(puts) == [1, 2, 3, 4, 5, 6]
    assert all(puts[n] == 1 for n in done_before)  # finished parts were not resent
    assert [m.material_id for m in live_with_hash(api, md5(path))] == [material.material_id]
    assert material.filesize == path.stat().st_size
    assert list(pending_states(state_dir)) == []


def test_an_upload_interrupted_by_the_caller_resumes(api, tmp_path, state_dir):
    path = samples.noise_wav(tmp_path / "stopped.wav", 12 * MiB)

    state = interrupted_upload(api, path, state_dir)
    assert state.etags and live_with_hash(api, md5(path)) == []
    material = api.materials.upload(path, progress=False, state_dir=state_dir)
    assert material.file_hash == md5(path)
    assert len(live_with_hash(api, md5(path))) == 1


def test_resume_false_aborts_the_old_session_and_starts_over(api, sandbox, tmp_path, state_dir):
    path = samples.noise_wav(tmp_path / "restart.wav", 12 * MiB)
    state = interrupted_upload(api, path, state_dir)
    material = api.materials.upload(
        path,
        progress=False,
        resume=False,
        part_size=5 * MiB,
        multipart_threshold=MiB,
        state_dir=state_dir,
    )
    assert sandbox.admin("GET", f"/storage/uploads/{state.data['uploadId']}")["state"] == "aborted"
    assert material.file_hash == md5(path)


def test_abort_gives_up_an_interrupted_upload(api, sandbox, tmp_path, state_dir):
    path = samples.noise_wav(tmp_path / "give-up.wav", 12 * MiB)
    state = interrupted_upload(api, path, state_dir)
    assert api.materials.abort(path, state_dir=state_dir) is True
    assert sandbox.admin("GET", f"/storage/uploads/{state.data['uploadId']}") == {
        "uploadId": state.data["uploadId"],
        "state": "aborted",
        "parts": [],
    }
    assert list(pending_states(state_dir)) == []
    assert api.materials.abort(path, state_dir=state_dir) is False


def test_expired_part_urls_are_presigned_again(api, sandbox, tmp_path, state_dir):
    # URLs live 2 s and every PUT takes 1.2 s to arrive: part 2 leaves with a URL that is
    # still valid (presigned with part 1) and arrives after it expired.
    sandbox.admin("POST", "/storage", presignTtl=2, putLatencyMs=1200)
    before = sandbox.admin("GET", "/storage")["refused"].get("expired", 0)
    path = samples.noise_wav(tmp_path / "slow.wav", 6 * MiB)
    material = api.materials.upload(
        path,
        progress=False,
        part_size=5 * MiB,
        multipart_threshold=MiB,
        concurrency=1,
        state_dir=state_dir,
    )
    assert material.file_hash == md5(path)
    assert sandbox.admin("GET", "/storage")["refused"].get("expired", 0) > before


def test_an_upload_that_cannot_finish_is_aborted(api, sandbox, tmp_path, state_dir):
    sandbox.set_limits(upload_limit=8 * MiB)
    path = samples.noise_wav(tmp_path / "toolarge.wav", 13 * MiB)
    with pytest.raises(dubkit.PayloadTooLargeError, match="aborted"):
        api.materials.upload(
            path,
            progress=False,
            part_size=5 * MiB,
            multipart_threshold=MiB,
            concurrency=1,
            state_dir=state_dir,
        )
    assert list(pending_states(state_dir)) == [] and api.materials.list() == []
    with pytest.raises(dubkit.PayloadTooLargeError, match="upload limit"):
        api.materials.upload(path, progress=False, state_dir=state_dir)  # one PUT


def test_bytes_that_are_not_media_are_aborted_not_registered(api, tmp_path, state_dir):
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(bytes(range(256)) * (24 * 1024 * 4))  # 24 MiB, binary
    with pytest.raises(dubkit.UnprocessableError, match="not audio or video"):
        api.materials.upload(
            junk, progress=False, part_size=5 * MiB, multipart_threshold=MiB, state_dir=state_dir
        )
    assert list(pending_states(state_dir)) == [] and api.materials.list() == []


def test_a_lost_answer_to_complete_still_yields_the_one_material(api, sandbox, tmp_path, state_dir):
    path = samples.noise_wav(tmp_path / "lost.wav", 64 * 1024)
    sandbox.set_faults(drop_after_commit=1.0, paths=["/assets/material/upload/complete"])
    material = api.materials.upload(path, progress=False, state_dir=state_dir)
    sandbox.set_faults()
    assert [m.material_id for m in live_with_hash(api, md5(path))] == [material.material_id]


def test_list_pages_and_ids_must_be_registered(api, client_for, new_key, tmp_path, state_dir):
    made = [
        api.materials.upload(
            samples.noise_wav(tmp_path / f"n{i}.wav", 8192 + i), progress=False, state_dir=state_dir
        )
        for i in range(3)
    ]
    listed = api.materials.list(page_size=2)
    assert [m.material_id for m in listed] == [m.material_id for m in made[::-1]]
    frame = listed.to_frame()
    assert list(frame.columns)[:3] == ["material_id", "name", "category"]
    assert list(frame["name"]) == ["n2.wav", "n1.wav", "n0.wav"]
    assert api.materials.list(limit=1)[0].material_id == made[-1].material_id

    fresh = client_for(new_key)  # no cache: the id is looked up in the list
    assert fresh.materials.is_registered(made[0].material_id)
    api.materials.delete(made[0])
    for client in (api, client_for(new_key)):  # a dub of it is refused before it is sent
        with pytest.raises(dubkit.ValidationError, match="not a registered material") as caught:
            client.dubbing.create(made[0].material_id, target="fr-FR")
        assert caught.value.field == "source.materialId"
    unfinished = api.call(
        "materials.gen_upload_url", {"fileHash": "0" * 32, "fileName": "never.wav"}
    )["materialId"]
    with pytest.raises(dubkit.ValidationError, match="unfinished upload"):
        api.dubbing.create(unfinished, target="fr-FR")
    assert api.tasks.list() == []


def test_the_progress_bar_shows_bytes_rate_and_parts(api, tmp_path, state_dir):
    path = samples.noise_wav(tmp_path / "bar.wav", 11 * MiB)
    bar = UploadProgressBar("bar.wav")
    material = api.materials.upload(
        path, progress=bar, part_size=5 * MiB, multipart_threshold=MiB, state_dir=state_dir
    )
    bundle = bar._repr_mimebundle_()
    assert f"registered as material {material.material_id}" in bundle["text/html"]
    assert "11.0 MiB" in bundle["text/html"] and "parts 3/3" in bundle["text/html"]
    assert "MiB/s" in bundle["text/html"]
    assert bundle["text/plain"] == "UploadProgressBar('bar.wav')"
    assert material.material_id in material._repr_html_()
    assert "<audio controls preload='none'" in material._repr_html_()
    assert not plays_by_itself(material._repr_html_())


# ------------------------------------------------------------- answers the service rarely gives

NOTHING_REGISTERED = {"materials.list": [fixed({"records": [], "total": 0})]}


def test_a_presign_answer_without_a_part_asked_for_aborts_and_leaves_nothing_to_resume(tmp_path):
    sample = tmp_path / "sample.wav"
    sample.write_bytes(wav_bytes())
    started = {"uploadId": "up_1", "s3Uri": "s3://b/k", "materialId": "mat_1"}
    with answer_double() as double, dubkit.Client("sk_double_0123456789", double.url) as client:
        double.script(
            {
                **NOTHING_REGISTERED,
                "materials.multipart_initiate": [fixed(started)],
                "materials.multipart_presign": [fixed({"urls": [], "expiresInSeconds": 600})],
                "materials.multipart_abort": [fixed({})],
            }
        )
        with pytest.raises(dubkit.UnexpectedAnswerError) as caught:
            client.materials.upload(
                sample, multipart_threshold=1, state_dir=tmp_path / "state", progress=False
            )
        paths = [target.split("?")[0] for _, target, _, _ in double.requests]
    error = caught.value
    assert error.operation == "materials.multipart_presign" and error.req_id
    assert "none for part 1" in str(error)
    assert paths[-1].endswith("/multipart/abort") and not list(pending_states(tmp_path / "state"))


@pytest.mark.parametrize("url", ["/files/tone.wav", "", "s3://bucket/key", "ftp://host/x"])
def test_an_upload_url_that_is_not_absolute_http_is_an_unexpected_answer(tmp_path, url):
    sample = tmp_path / "sample.wav"
    sample.write_bytes(wav_bytes())
    answer = {"uploadUrl": url, "s3Uri": "s3://b/k", "materialId": "mat_1"}
    with answer_double() as double, dubkit.Client("sk_double_0123456789", double.url) as client:
        double.script({"materials.gen_upload_url": [fixed(answer)]})
        with pytest.raises(dubkit.UnexpectedAnswerError) as caught:
            client.materials.upload(sample, state_dir=tmp_path / "state", progress=False)
    assert caught.value.operation == "materials.gen_upload_url" and caught.value.req_id
    assert f"upload URL {url!r} is not an absolute http(s) URL" in str(caught.value)


# ------------------------------------------------------------- the same bytes at the same moment


def _tone(path: Path, hertz: int) -> Path:
    """A tenth of a second of a tone: bytes of its own for each round."""
    import io
    import wave

    import numpy as np

    samples_ = (8000 * np.sin(2 * np.pi * hertz * np.arange(1600) / 16000)).astype("<i2")
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
        w.writeframes(samples_.tobytes())
    path.write_bytes(out.getvalue())
    return path


@pytest.mark.parametrize("keys", [1, 4], ids=["one key", "four keys"])
def test_concurrent_uploads_of_the_same_bytes_all_succeed_with_one_material_per_key(
    sandbox, client_for, tmp_path, keys
):
    from concurrent.futures import ThreadPoolExecutor

    threads, rounds = 8, 20
    clients = [client_for(sandbox.create_key("same-bytes")) for _ in range(keys)]
    with ThreadPoolExecutor(threads) as pool:
        for round_ in range(rounds):
            path = _tone(tmp_path / f"round{round_}.wav", 200 + 10 * round_ + keys)

            def upload(i: int, path: Path = path, round_: int = round_) -> tuple[int, str]:
                client = clients[i % keys]
                state = tmp_path / f"state-{round_}-{i}"
                return i % keys, client.materials.upload(
                    path, progress=False, state_dir=state
                ).material_id

            made = list(pool.map(upload, range(threads)))  # any failure raises here
            for k, client in enumerate(clients):
                ids = {m for key, m in made if key == k}
                assert len(ids) == 1, f"round {round_}, key {k}: {len(ids)} materials"
                file_hash = hashlib.md5(path.read_bytes()).hexdigest()
                listed = [m for m in client.materials.list() if m.file_hash == file_hash]
                assert [m.material_id for m in listed] == list(ids)


def _session(url: str, material_id: str) -> Answer:
    return fixed({"uploadUrl": url, "s3Uri": f"s3://b/{material_id}", "materialId": material_id})


def test_an_expired_upload_url_is_renewed_and_the_new_session_is_the_one_completed(tmp_path):
    sample = tmp_path / "sample.wav"
    sample.write_bytes(wav_bytes())
    with answer_double() as double, dubkit.Client("sk_double_0123456789", double.url) as client:
        first, second = (
            _session(f"{STUB}/files/expired.wav", "mat_old"),
            _session(f"{STUB}/files/tone.wav", "mat_new"),
        )
        double.script(
            {
                "materials.gen_upload_url": [first, second],
                "materials.complete": [fixed({"materialId": "mat_new", "name": "sample.wav"})],
            }
        )
        material = client.materials.upload(sample, state_dir=tmp_path / "state", progress=False)
        completed = [json.loads(b) for _, t, _, b in double.requests if "/complete" in t]
    assert material.material_id == "mat_new"
    assert [(c["materialId"], c["s3Uri"]) for c in completed] == [("mat_new", "s3://b/mat_new")]


def test_bytes_registered_by_another_upload_while_the_url_expired_are_that_material(tmp_path):
    sample = tmp_path / "sample.wav"
    sample.write_bytes(wav_bytes())
    known = {"materialId": "mat_theirs", "name": "sample.wav"}
    with answer_double() as double, dubkit.Client("sk_double_0123456789", double.url) as client:
        double.script(
            {
                "materials.gen_upload_url": [
                    _session(f"{STUB}/files/expired.wav", "mat_mine"),
                    fixed({"uploadUrl": "", "material": known}),
                ]
            }
        )
        material = client.materials.upload(sample, state_dir=tmp_path / "state", progress=False)
    assert material.material_id == "mat_theirs" and not double.unscripted


def test_each_client_uploads_lists_finds_and_deletes_a_material(each_client, tmp_path):
    path = samples.noise_wav(tmp_path / "both.wav", 20_000)
    material = each_client.materials.upload(path, progress=False, state_dir=tmp_path / "state")
    assert isinstance(material, Material) and material.category == "audio"
    assert material.file_hash == hashlib.md5(path.read_bytes()).hexdigest()
    ids = [m.material_id for m in each_client.materials.list()]
    assert material.material_id in ids
    # iterate() is an async generator on the async client, read page by page off the loop
    assert [m.material_id for m in each_client.materials.iterate(limit=1)] == ids[:1]
    assert each_client.materials.get(material.material_id).name == "both.wav"
    assert each_client.materials.find_by_hash(material.file_hash).material_id == (
        material.material_id
    )
    each_client.materials.delete(material)
    assert not each_client.materials.is_registered(material.material_id)


def test_an_async_upload_leaves_the_event_loop_running(sandbox, event_loop_thread, tmp_path):
    """Each part's progress report (from the upload's threads) waits until a coroutine on the
    client's loop has run since the last one: an upload that held the loop would never end."""
    import asyncio
    import threading

    from _waiting import PATIENCE

    path = samples.noise_wav(tmp_path / "parts.wav", 11 * MiB)
    ticked, reports = threading.Event(), []

    def report(progress):
        reports.append(progress.parts_done)
        assert ticked.wait(PATIENCE), "the event loop did not run during the upload"
        ticked.clear()

    async def ticking():
        while True:
            ticked.set()
            await asyncio.sleep(0.01)

    async def scenario():
        ticker = asyncio.get_running_loop().create_task(ticking())
        async with dubkit.AsyncClient(sandbox.api_key, sandbox.url, sandbox=sandbox) as client:
            material = await client.materials.upload(
                path,
                part_size=5 * MiB,
                multipart_threshold=MiB,
                concurrency=2,
                progress=report,
                state_dir=tmp_path / "state",
            )
            await client.materials.delete(material)
        ticker.cancel()
        return material

    material = event_loop_thread.run(scenario())
    assert material.filesize == 11 * MiB and material.category == "audio"
    assert max(reports) == 3  # three parts of 5 MiB slots, each reported
