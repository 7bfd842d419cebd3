"""dubkit.connect() and the standalone sandbox command, as a user starts them."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time

import pytest
import requests

import dubkit


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connect_without_a_key_starts_the_embedded_sandbox_once(tmp_path):
    code = ("import dubkit; a = dubkit.connect(); b = dubkit.connect(); "
            "print(a.base_url == b.base_url, a.is_sandbox, repr(a)); "
            "print(a.translate.create(['Hi'], source='en-US', target='fr-FR').texts)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "DUBKIT_SANDBOX_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("dubkit: no DUBKIT_API_KEY set, started the local sandbox")
    assert lines[1].startswith("dubkit: no DUBKIT_API_KEY set, reusing the local sandbox")
    assert lines[2].startswith("True True Client(sandbox")
    key = re.search(r"sk_sandbox_[0-9a-f]{32}", out.stdout + out.stderr)
    assert key is None, "the full key must never be printed"
    assert (tmp_path / "sandbox.sqlite3").exists()


def test_connect_with_a_key_needs_a_base_url(monkeypatch):
    monkeypatch.delenv("DUBKIT_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="DUBKIT_BASE_URL"):
        dubkit.connect(api_key="sk_live_abcdefghijkl")


def test_connect_with_a_key_talks_to_that_service(sandbox, monkeypatch, capsys):
    monkeypatch.setenv("DUBKIT_API_KEY", sandbox.api_key)
    monkeypatch.setenv("DUBKIT_BASE_URL", sandbox.url)
    client = dubkit.connect()
    assert not client.is_sandbox and capsys.readouterr().out == ""
    assert client.translate.create(["Hi"], source="en-US", target="fr-FR").texts[0]
    assert sandbox.api_key not in repr(client)


def test_standalone_sandbox_command_and_connect_by_url(tmp_path, monkeypatch):
    """``dubkit sandbox`` in a terminal, ``DUBKIT_BASE_URL`` in the notebook: connect() finds the
    admin token in the (same user's) default data dir and reads the key through it."""
    monkeypatch.setenv("DUBKIT_SANDBOX_DIR", str(tmp_path))
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "dubkit.cli", "sandbox", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                requests.get(f"{url}/_sandbox/info", timeout=1)
                break
            except requests.ConnectionError:
                time.sleep(0.1)
        client = dubkit.connect(base_url=url, quiet=True)
        assert client.is_sandbox and client.base_url == url
        assert client.translate.create(["Hi"], source="en-US", target="de-DE").texts[0]
    finally:
        proc.terminate()
        output = proc.communicate(timeout=15)[0]
    assert f"listening on http://127.0.0.1:{port}" in output
    assert "sk_sandbox_" not in output and "whsec_" not in output
    token = (tmp_path / "admin-token").read_text()
    assert f"admin token:        in {tmp_path / 'admin-token'}" in output and token not in output
    assert (tmp_path / "admin-token").stat().st_mode & 0o777 == 0o600


def test_base_url_that_is_not_a_sandbox_is_a_clear_error():
    with pytest.raises(ConnectionError, match="not a dubkit sandbox"):
        dubkit.connect(base_url="http://127.0.0.1:9", quiet=True)


def test_admin_answers_show_credentials_masked(sandbox):
    info = sandbox.info()
    assert info["apiKey"] == sandbox.api_key                      # usable in code
    assert sandbox.api_key not in repr(info) and sandbox.webhook_secret not in str(info)
    settings = sandbox.set_webhook(None)
    assert settings["secret"].startswith("whsec_") and settings["secret"] not in repr(settings)
