"""dubkit.connect() and the standalone sandbox command, as a user starts them."""

from __future__ import annotations

import http.server
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

import dubkit


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connect_without_a_key_starts_the_embedded_sandbox_once(tmp_path):
    code = (
        "import dubkit; a = dubkit.connect(); b = dubkit.connect(); "
        "print(a.base_url == b.base_url, a.is_sandbox, repr(a)); "
        "print(a.translate.create(['Hi'], source='en-US', target='fr-FR').texts)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DUBKIT_SANDBOX_DIR": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("dubkit: no DUBKIT_API_KEY set, started the local sandbox")
    assert lines[1].startswith("dubkit: no DUBKIT_API_KEY set, reusing this kernel's local sandbox")
    assert "127.0.0.1" not in "".join(lines[:3]) and "/tmp" not in out.stdout  # saved notebooks
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
    proc = subprocess.Popen(
        [sys.executable, "-m", "dubkit.cli", "sandbox", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    said = ""
    try:
        url = f"http://127.0.0.1:{port}"
        while "listening on" not in said:  # it says so once it answers: wait for that
            line = proc.stdout.readline()
            assert line, f"the sandbox ended before listening: {said}"
            said += line
        client = dubkit.connect(base_url=url, quiet=True)
        assert client.is_sandbox and client.base_url == url
        assert client.translate.create(["Hi"], source="en-US", target="de-DE").texts[0]
    finally:
        proc.terminate()
        output = said + proc.communicate()[0]
    assert f"listening on http://127.0.0.1:{port}" in output
    assert "sk_sandbox_" not in output and "whsec_" not in output
    token = (tmp_path / "admin-token").read_text()
    assert f"admin token:        in {tmp_path / 'admin-token'}" in output and token not in output
    assert (tmp_path / "admin-token").stat().st_mode & 0o777 == 0o600


def test_a_dead_base_url_says_it_cannot_connect_to_that_host(monkeypatch):
    port = free_port()  # nothing listens there
    monkeypatch.setenv("DUBKIT_BASE_URL", f"http://127.0.0.1:{port}/")
    with pytest.raises(dubkit.APIConnectionError) as info:
        dubkit.connect(quiet=True)
    message = str(info.value)
    assert f"cannot connect to http://127.0.0.1:{port}" in message
    assert "DUBKIT_BASE_URL" in message and "dubkit sandbox --port" in message
    assert "not a dubkit sandbox" not in message


@pytest.fixture
def not_a_sandbox() -> Iterator[str]:
    """A web server that answers every request with a 404 page, as a wrong address would."""

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<h1>Not Found</h1>")

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_url_that_is_not_a_sandbox_says_so_and_what_to_set(not_a_sandbox, monkeypatch):
    monkeypatch.setenv("DUBKIT_BASE_URL", not_a_sandbox)
    with pytest.raises(dubkit.ValidationError) as info:
        dubkit.connect(quiet=True)
    assert info.value.field == "DUBKIT_BASE_URL"
    assert "not a dubkit sandbox" in info.value.problem and "DUBKIT_API_KEY" in info.value.problem
    assert not_a_sandbox.split("//")[1] in info.value.problem


def test_a_sandbox_whose_admin_token_is_unknown_says_how_to_give_it(sandbox, tmp_path, monkeypatch):
    monkeypatch.setenv("DUBKIT_SANDBOX_DIR", str(tmp_path))  # no admin-token file here
    monkeypatch.delenv("DUBKIT_SANDBOX_ADMIN_TOKEN", raising=False)
    with pytest.raises(dubkit.ValidationError) as info:
        dubkit.connect(base_url=sandbox.url, quiet=True)
    assert info.value.field == "base_url"
    assert "admin token" in info.value.problem
    assert "DUBKIT_SANDBOX_ADMIN_TOKEN" in info.value.problem
    token = (sandbox.data_dir / "admin-token").read_text().strip()
    assert token not in str(info.value)
    monkeypatch.setenv("DUBKIT_SANDBOX_ADMIN_TOKEN", token)  # what the message says to do
    assert dubkit.connect(base_url=sandbox.url, quiet=True).is_sandbox


@pytest.mark.parametrize(
    "url", ["localhost:8765", "ftp://127.0.0.1:21", "http://:8765", "http://127.0.0.1:port"]
)
def test_a_malformed_base_url_is_a_validation_error(url):
    with pytest.raises(dubkit.ValidationError) as info:
        dubkit.connect(base_url=url, quiet=True)
    assert info.value.field == "base_url"
    with pytest.raises(dubkit.ValidationError):
        dubkit.connect(api_key="sk_live_abcdefghijkl", base_url=url, quiet=True)


def test_set_up_errors_are_dubkit_errors(monkeypatch):
    monkeypatch.delenv("DUBKIT_BASE_URL", raising=False)
    with pytest.raises(dubkit.ValidationError) as info:
        dubkit.connect(api_key="sk_live_abcdefghijkl")
    assert info.value.field == "DUBKIT_BASE_URL"


def test_connection_errors_name_the_host_and_nothing_secret():
    port = free_port()
    key = "sk_live_abcdefghijklmnop"
    with dubkit.Client(
        key, f"http://user:hunter2@127.0.0.1:{port}/base", retry=dubkit.RetryPolicy(max_retries=0)
    ) as dead:
        with pytest.raises(dubkit.APIConnectionError) as info:
            dead.tasks.list()
    message = str(info.value)
    assert f"could not connect to http://127.0.0.1:{port}" in message
    assert "hunter2" not in message and key not in message


def test_admin_answers_show_credentials_masked(sandbox):
    info = sandbox.info()
    assert info["apiKey"] == sandbox.api_key  # usable in code
    assert sandbox.api_key not in repr(info) and sandbox.webhook_secret not in str(info)
    settings = sandbox.set_webhook(None)
    assert settings["secret"].startswith("whsec_") and settings["secret"] not in repr(settings)
