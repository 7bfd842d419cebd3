"""Resuming an upload is safe: a file edited in place (same size, same mtime) is not registered
as the bytes sent before the edit, and a run killed right after registration is finished by the
next call with the material it registered, not with an abort or a second upload.

Crashes are real: an uploader process kills itself by PID (SIGKILL, no cleanup) at the exact
moment under test; the resume then runs here, over HTTP, against the session's sandbox.
"""

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
from _storage_fixtures import api, storage_defaults  # noqa: F401  (fixtures)

from dubkit import samples
from dubkit.uploads import pending_states

MiB = 1024 * 1024

# The uploader: the key comes on stdin (never on a command line). It SIGKILLs itself after
# ``after-parts N`` parts are recorded, or ``after-complete``: when multipart/complete has
# answered success and before dubkit has read that answer (a requests response hook), so the
# material is registered and the resume state is still on disk.
UPLOADER = r"""
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


def live_with_hash(api, file_hash: str) -> list[str]:
    return [m.material_id for m in api.materials.list() if m.file_hash == file_hash]


def sessions(api, sandbox) -> list[dict]:
    """The key's upload sessions (gen-upload-url and initiate each open one)."""
    query = urlencode({"apiKey": api.transport._secret})
    return sandbox.admin("GET", f"/uploads?{query}")["sessions"]


def crash_while_uploading(api, path: Path, state_dir: Path, mode: str) -> None:
    """Run the uploader on ``path`` until it kills itself (``mode``, see UPLOADER)."""
    uploader = subprocess.run(
        [sys.executable, "-c", UPLOADER, api.base_url, str(path), str(state_dir), mode],
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
    assert live_with_hash(api, old_md5) == []
    assert sandbox.admin("GET", f"/storage/uploads/{old.data['uploadId']}")["state"] == "aborted"
    assert list(pending_states(state_dir)) == []


def test_parts_of_a_state_without_digests_are_not_trusted(api, sandbox, tmp_path, state_dir):
    # A state written before part digests were kept (or hand-made): its sent parts cannot be
    # checked, so an in-place edit must not slip through them either.
    path = samples.noise_wav(tmp_path / "legacy.wav", 12 * MiB)

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
    (old,) = pending_states(state_dir)
    legacy = {k: v for k, v in old.data.items() if k != "partDigests"} | {"version": 1}
    old.file.write_text(json.dumps(legacy))
    old_md5 = edit_in_place_keeping_size_and_mtime(path, offset=MiB)

    material = api.materials.upload(path, progress=False, state_dir=state_dir)
    assert material.file_hash == md5(path) and stored_md5(material) == md5(path)
    assert live_with_hash(api, old_md5) == []
    assert sandbox.admin("GET", f"/storage/uploads/{old.data['uploadId']}")["state"] == "aborted"


def test_a_crash_right_after_registration_returns_the_registered_material(
    api, sandbox, tmp_path, state_dir
):
    path = samples.noise_wav(tmp_path / "registered.wav", 12 * MiB)  # parts 5+5+2 MiB
    crash_while_uploading(api, path, state_dir, "after-complete")
    (state,) = pending_states(state_dir)  # the crash left the state...
    assert sorted(state.etags) == [1, 2, 3]
    (registered,) = live_with_hash(api, md5(path))  # ...and the material
    assert registered == state.data["materialId"]
    assert len(sessions(api, sandbox)) == 1

    seen = Phases()
    material = api.materials.upload(path, progress=seen, state_dir=state_dir)
    assert material.material_id == registered
    assert live_with_hash(api, md5(path)) == [registered]
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
    (registered,) = live_with_hash(api, md5(path))
    old_md5 = edit_in_place_keeping_size_and_mtime(path, offset=6 * MiB)  # inside part 2

    material = api.materials.upload(path, progress=False, state_dir=state_dir)
    assert material.material_id != registered
    assert material.file_hash == md5(path) and stored_md5(material) == md5(path)
    assert live_with_hash(api, old_md5) == [registered]  # the old material stays as is
    assert list(pending_states(state_dir)) == []
