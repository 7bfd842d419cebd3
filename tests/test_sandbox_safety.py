"""The sandbox as a guest on someone's machine (issue 11): admin behind a token, no file or
address its caller should not reach, limits that hold while bytes arrive, no race that loses
or corrupts data, links that die with what they belong to, private files.

Every test here failed on the sandbox before these protections (see the issue's notes).
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import socket
import stat
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from _http import local_http
from _storage_fixtures import api, storage_defaults  # noqa: F401  (fixtures)

import dubkit
from dubkit import samples
from dubkit import start_sandbox as start
from dubkit.sandbox.admin_token import ADMIN_HEADER, read_admin_token

MiB = 1024 * 1024
LANG = {"source": "en-US", "target": "fr-FR"}


def api_post(box, path: str, body: bytes | dict, key: str | None = None) -> requests.Response:
    headers = {
        "Authorization": f"Bearer {key or box.api_key}",
        "X-Idempotency-Key": uuid.uuid4().hex,
        "Content-Type": "application/json",
    }
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return requests.post(f"{box.url}/openapi/v1{path}", data=data, headers=headers, timeout=60)


# --------------------------------------------------------------------------- admin token

ADMIN_CALLS = [
    ("GET", "/info", None),
    ("GET", "/keys", None),
    ("POST", "/reset", {}),
    ("POST", "/credits", {"credits": 0}),
    ("POST", "/webhook", {"url": None}),
    ("GET", "/deliveries", None),
    ("GET", "/storage", None),
    ("POST", "/fetch", {"remote": True, "schemes": ["http"], "allow": ["0.0.0.0/0"]}),
]


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


# --------------------------------------------------------------------------- reference audio


def test_references_never_read_a_file_outside_the_data_dir(api, sandbox, tmp_path):
    """``..``, an absolute path or a symlink below /files must not reach the host's files."""
    outside = samples.speech_recording(tmp_path / "private.wav", "This file is not yours.")
    files = sandbox.data_dir / "files"
    link = files / "link.wav"
    link.symlink_to(outside)
    relative = os.path.relpath(outside, files)
    try:
        for url in (
            f"{sandbox.url}/files/{relative}",
            f"{sandbox.url}/files/{relative.replace('..', '%2e%2e')}",
            f"{sandbox.url}/files/{outside}",
            f"{sandbox.url}/files/link.wav",
        ):
            with pytest.raises(dubkit.UnprocessableError) as refused:
                api.clones.create(url, provider="V1")
            assert (
                str(tmp_path) not in refused.value.message and "refAudio" in refused.value.message
            )
        assert len(api.voices.clones()) == 0
        assert requests.get(f"{sandbox.url}/files/link.wav", timeout=10).status_code == 404
    finally:
        link.unlink()


def _wav_server(wav: bytes):
    return local_http(lambda method, headers, body: (200, {"Content-Type": "audio/wav"}, wav))


def test_other_hosts_are_fetched_only_when_the_policy_names_them(api, sandbox, tmp_path):
    wav = samples.speech_recording(tmp_path / "ref.wav", "Hello from another host.").read_bytes()
    try:
        with _wav_server(wav) as url:
            with pytest.raises(dubkit.BadRequestError, match="refAudio: must be an https"):
                api.clones.create(f"{url}/ref.wav")  # plain http: refused
            sandbox.admin("POST", "/fetch", schemes=["http", "https"])
            with pytest.raises(dubkit.UnprocessableError) as loopback:  # loopback: refused
                api.clones.create(f"{url}/ref.wav")
            with pytest.raises(dubkit.UnprocessableError) as closed:  # a closed port
                api.clones.create("http://127.0.0.1:9/ref.wav")
            with pytest.raises(dubkit.UnprocessableError) as metadata:  # link-local
                api.clones.create("http://169.254.169.254/latest/meta-data/")
            assert loopback.value.message == closed.value.message == metadata.value.message
            sandbox.admin("POST", "/fetch", allow=["127.0.0.1"])
            assert api.clones.create(f"{url}/ref.wav").voice_id.startswith("cv_")
    finally:
        sandbox.admin("POST", "/fetch", remote=True, schemes=["https"], allow=[])


# --------------------------------------------------------------------------- limits


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


def test_presign_parts_has_a_maximum(api):
    started = api.call(
        "materials.multipart_initiate", {"fileHash": "0" * 32, "fileName": "big.wav"}
    )
    with pytest.raises(dubkit.BadRequestError, match="partNumbers: at most 1000"):
        api.call(
            "materials.multipart_presign",
            {
                "materialId": started["materialId"],
                "uploadId": started["uploadId"],
                "fileHash": "0" * 32,
                "fileName": "big.wav",
                "partNumbers": list(range(1, 10_001)),
            },
        )


# --------------------------------------------------------------------------- races


def test_a_part_still_arriving_cannot_write_into_the_registered_file(api, sandbox, tmp_path):
    sandbox.admin("POST", "/storage", recommendedPartSize=5 * MiB)
    path = samples.noise_wav(tmp_path / "three.wav", 12 * MiB)
    data, md5 = path.read_bytes(), hashlib.md5(path.read_bytes()).hexdigest()
    ref = {"fileHash": md5, "fileName": "three.wav"}
    started = api.call("materials.multipart_initiate", ref)
    ref |= {"materialId": started["materialId"], "uploadId": started["uploadId"]}
    urls = {
        u["partNumber"]: u["url"]
        for u in api.call("materials.multipart_presign", {**ref, "partNumbers": [1, 2, 3, 4]})[
            "urls"
        ]
    }
    parts = []
    for number, piece in (
        (1, data[: 5 * MiB]),
        (2, data[5 * MiB : 10 * MiB]),
        (3, data[10 * MiB :]),
    ):
        answer = requests.put(urls[number], data=piece, timeout=60)
        parts.append({"partNumber": number, "eTag": answer.headers["ETag"]})
    # Part 4 (not part of the file) starts arriving, slowly...
    target = urlsplit(urls[4])
    late = socket.create_connection((target.hostname, target.port), timeout=30)
    late.sendall(
        (
            f"PUT {target.path}?{target.query} HTTP/1.1\r\nHost: {target.netloc}\r\n"
            f"Content-Length: {5 * MiB}\r\n\r\n"
        ).encode()
        + b"\xff" * MiB
    )
    time.sleep(0.5)  # let the first bytes reach the server (not an assertion on time)
    material = api.call("materials.multipart_complete", {**ref, "parts": parts})
    try:  # ...and keeps coming after
        late.sendall(b"\xff" * (4 * MiB))
        reply = late.recv(65536).decode(errors="replace")
    except (BrokenPipeError, ConnectionResetError):
        reply = ""
    late.close()
    assert not reply.startswith("HTTP/1.1 200"), reply[:200]
    served = requests.get(material["addressUrl"], timeout=60).content
    assert len(served) == material["filesize"] == len(data)
    assert hashlib.md5(served).hexdigest() == md5


def test_concurrent_uploads_of_the_same_bytes_make_one_material(api, tmp_path):
    path = samples.speech_recording(tmp_path / "same.wav", "Eight uploads, one material.")
    with ThreadPoolExecutor(8) as pool:
        made = list(
            pool.map(
                lambda i: api.materials.upload(
                    path, progress=False, state_dir=tmp_path / f"state{i}"
                ),
                range(8),
            )
        )
    assert len({m.material_id for m in made}) == 1
    assert [m.material_id for m in api.materials.list()] == [made[0].material_id]


def test_tasks_cut_short_by_a_restart_are_refunded(tmp_path):
    """Kill a standalone sandbox (by PID) with async work in flight; after the restart every
    unfinished task has failed and what it was charged is back on the key."""
    data_dir = tmp_path / "box"
    port = _free_port()
    proc = _standalone(data_dir, port)
    try:
        box = dubkit.SandboxHandle(
            f"http://127.0.0.1:{port}", admin_token=(data_dir / "admin-token").read_text()
        )
        client = dubkit.Client(box.api_key, box.url)
        start_credits = box.credits()
        long_line = "This is a long line spoken many times over. " * 200
        tasks = [
            client.tts.create_async([long_line + str(i)], voice="sv_s1_en_us_clear_f")
            for i in range(6)
        ]
        assert start_credits - box.credits() == sum(len(long_line + str(i)) for i in range(6))
    finally:
        proc.kill()
        proc.wait(10)
    restarted = start(data_dir)
    try:
        client = dubkit.Client(restarted.api_key, restarted.url)
        ended = [client.tasks.get(t.task_id) for t in tasks]
        cut_short = [t for t in ended if t.status == "failed"]
        assert cut_short, "every task finished before the kill; the test proved nothing"
        spent = sum(len(long_line + str(i)) for i, t in enumerate(ended) if t.status == "finished")
        assert restarted.credits() == start_credits - spent
        assert all("restarted" in (t.error_message or "") for t in cut_short)
    finally:
        restarted.stop()


def test_a_restart_removes_the_scratch_files_of_a_dub_the_process_died_in(tmp_path):
    """A dub keeps its decoded audio in the data dir's scratch folder; when the process dies
    mid-dub, the next start removes them along with failing the task."""
    data_dir = tmp_path / "box"
    script = [f"Line {i} of a dub that will not finish." for i in range(24)]
    clip = samples.narrated_clip(tmp_path / "long.mp4", script, width=160, height=90)
    proc = _standalone(data_dir, port := _free_port())
    try:
        box = dubkit.SandboxHandle(
            f"http://127.0.0.1:{port}", admin_token=(data_dir / "admin-token").read_text()
        )
        client = dubkit.Client(box.api_key, box.url)
        task = client.dubbing.create(clip, target="fr-FR", source="en-US")
        deadline = time.monotonic() + 120
        while not list((data_dir / "scratch").glob(f"{task.task_id}-*/original.f32")):
            assert time.monotonic() < deadline, "the dub never decoded its audio to scratch"
            assert client.tasks.get(task.task_id).status == "running", "it ended too soon"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait(10)
    restarted = start(data_dir)
    try:
        ended = dubkit.Client(restarted.api_key, restarted.url).tasks.get(task.task_id)
        assert ended.status == "failed" and "restarted" in (ended.error_message or "")
        assert list((data_dir / "scratch").iterdir()) == []
    finally:
        restarted.stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _standalone(data_dir: Path, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dubkit.cli",
            "sandbox",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    for line in proc.stdout:  # type: ignore[union-attr]
        if "listening on" in line:
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # type: ignore
            return proc
    raise RuntimeError(f"the sandbox did not start (exit {proc.wait()})")


# --------------------------------------------------------------------------- links


def test_file_links_stop_working_when_their_owner_is_deleted(api, sandbox, tmp_path):
    material = api.materials.upload(
        samples.speech_recording(tmp_path / "m.wav", "Delete me."), progress=False
    )
    line = api.tts.speak("Soon gone.", "sv_s1_en_us_clear_f", output_format="wav")
    wav = samples.speech_recording(tmp_path / "ref.wav", "A voice to copy.").read_bytes()
    sandbox.admin("POST", "/fetch", schemes=["http", "https"], allow=["127.0.0.1"])
    try:
        with _wav_server(wav) as url:
            clone = api.clones.create(f"{url}/ref.wav")
    finally:
        sandbox.admin("POST", "/fetch", remote=True, schemes=["https"], allow=[])
    (record,) = api.voices.clones(voice=clone.voice_id)
    links = {"material": material.address_url, "speech": line.uri, "clone": record.audio}
    assert all(requests.get(u, timeout=10).status_code == 200 for u in links.values())
    api.materials.delete(material)
    api.tasks.delete(api.tasks.list(task_type="tts")[0].task_id)
    api.voices.delete(clone.voice_id)
    for name, link in links.items():
        assert requests.get(link, timeout=10).status_code == 404, name
