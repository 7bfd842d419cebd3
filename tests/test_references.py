"""Reference audio the sandbox fetches (timbre, emotion and clone references): never a file
outside its data dir, other hosts only as its fetch policy allows."""

from __future__ import annotations

import os

import pytest
import requests
from _http import local_http
from _storage_fixtures import api, storage_defaults  # noqa: F401  (fixtures)

import dubkit
from dubkit import samples


def _wav_server(wav: bytes):
    return local_http(lambda method, headers, body: (200, {"Content-Type": "audio/wav"}, wav))


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
