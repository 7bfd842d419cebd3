"""The Receiver's HTTP server when peers misbehave: an absurd ``X-Timestamp`` is a 401, never a
500; idle, half-sent and dribbled connections are closed by the server instead of each holding
a thread, and deliveries get through meanwhile; a delivery sent chunked (no Content-Length) is
read whole, by the stdlib server and behind gunicorn."""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
from _receiving import SECRET, envelope, post, store  # noqa: F401  (store: a fixture)
from _waiting import PATIENCE, wait_for

from dubkit.webhooks import Receiver, WebhookVerificationError, sign, verify


@pytest.fixture
def receiver(store: Path):
    made = Receiver(SECRET, store=store, retry_delay=0.01)
    ran: list[str] = []
    made.on("openapi-translate", lambda event: ran.append(event.task_id))
    made.ran = ran  # type: ignore[attr-defined]
    made.serve()
    yield made
    made.stop()


ABSURD_TIMESTAMPS = {
    "10,000 digits": "9" * 10_000,  # int() refuses more than 4300 digits
    "4301 digits": "1" * 4301,
    "400 digits": "1" * 400,  # int() takes it, but now_ms - int overflows a float
    "21 digits": "1" * 21,
    "1e400": "1e400",  # float("1e400") is inf
    "-5": "-5",
    "NaN": "NaN",
    "Arabic-Indic digits": "١٧٠٠٠٠٠٠٠٠٠٠٠",
    "full-width digits": "１７００００００００００００",
}


STALLS = {
    "nothing": (b"", b""),
    "half a request line": (b"POST /hooks HT", b""),
    "headers without the blank line": (b"POST / HTTP/1.1\r\nHost: x\r\nX-Timestamp: 1\r\n", b""),
    "half a body": (
        b'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"code":',
        b" 408 ",
    ),
}


def connection_threads() -> set[threading.Thread]:
    """Threads of the stdlib threaded servers: one per connection being served."""
    return {t for t in threading.enumerate() if t.name.endswith("(process_request_thread)")}


def port_of(url: str) -> int:
    return int(url.rstrip("/").rsplit(":", 1)[1])


def read_until_closed(sock: socket.socket, deadline: float) -> tuple[bool, bytes]:
    """Everything the server sends until it closes; (False, ...) if it never did by deadline."""
    data = b""
    sock.settimeout(max(0.1, deadline - time.monotonic()))
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        return False, data
    except ConnectionResetError:
        return True, data
    return True, data


@pytest.mark.parametrize("case", list(ABSURD_TIMESTAMPS))
def test_an_absurd_timestamp_is_a_401_over_http_and_nothing_runs(receiver, case, caplog):
    stamp = ABSURD_TIMESTAMPS[case]
    with caplog.at_level(logging.DEBUG, logger="dubkit.webhooks"):
        answer = post(receiver.url, envelope("t-absurd"), timestamp=stamp.encode("utf-8"))
    assert answer.status_code == 401, answer.text
    assert answer.json()["error"].startswith("bad-timestamp")
    last = receiver.deliveries[-1]
    assert (last.outcome, last.http_status) == ("rejected", 401)
    assert not any(r.exc_info for r in caplog.records)  # no "webhook receiver failed" trace
    assert not any(SECRET in r.getMessage() for r in caplog.records)
    assert post(receiver.url, envelope("t-fine")).status_code == 200
    assert receiver.wait_idle(10) and receiver.ran == ["t-fine"]


@pytest.mark.parametrize("case", list(ABSURD_TIMESTAMPS))
def test_an_absurd_timestamp_is_refused_by_verify_and_handle_as_text(store, case):
    """The framework-neutral paths get the header as text, unicode digits included."""
    stamp, body = ABSURD_TIMESTAMPS[case], envelope("t-text")
    with pytest.raises(WebhookVerificationError) as refused:
        verify(SECRET, stamp, body, sign(SECRET, stamp, body))
    assert refused.value.reason == "bad-timestamp" and SECRET not in str(refused.value)
    receiver = Receiver(SECRET, store=store)
    try:
        answer = receiver.handle(
            {"X-Timestamp": stamp, "X-Signature": sign(SECRET, stamp, body)}, body
        )
    finally:
        receiver.stop()
    assert answer.status == 401 and answer.body["error"].startswith("bad-timestamp")


def test_idle_connections_are_closed_by_the_server_and_deliveries_get_through_meanwhile(receiver):
    before = connection_threads()
    port = port_of(receiver.url)
    idle = []
    for stall, (sent, _) in STALLS.items():
        for _ in range(20):
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            sock.sendall(sent)
            idle.append((stall, sock))
    try:
        # 80 connections are held, a thread each: the state that used to last forever
        assert wait_for(lambda: len(connection_threads() - before) >= len(idle))
        held = connection_threads() - before
        answer = post(receiver.url, envelope("t-meanwhile"))
        assert answer.status_code == 200 and answer.json() == {"received": True}
        assert receiver.wait_idle(10) and receiver.ran == ["t-meanwhile"]
        deadline = time.monotonic() + PATIENCE  # generous: the server's idle timeout is 10 s
        for stall, sock in idle:
            closed, data = read_until_closed(sock, deadline)
            assert closed, f"the server never closed a connection that sent {stall}"
            expected = STALLS[stall][1]
            assert (expected in data.split(b"\r\n", 1)[0]) if expected else data == b"", data
        assert wait_for(lambda: not any(t.is_alive() for t in held))
        assert len(connection_threads()) <= len(before)
    finally:
        for _, sock in idle:
            sock.close()


def test_connections_beyond_the_limit_are_answered_503_at_once_and_later_ones_served(receiver):
    before = connection_threads()
    port = port_of(receiver.url)
    idle = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(100)]
    try:
        assert wait_for(lambda: len(connection_threads() - before) >= len(idle))
        held = connection_threads() - before
        with socket.create_connection(("127.0.0.1", port), timeout=30) as extra:
            closed, data = read_until_closed(extra, time.monotonic() + PATIENCE)
        assert closed, "a connection over the limit was held instead of answered"
        assert data.startswith(b"HTTP/1.0 503 "), data
        assert b"Retry-After: 10" in data and b"too many open connections" in data
        assert len(connection_threads() - before) <= len(idle)  # no thread for the extra one
        # once the server drops the idle ones, deliveries are served again
        assert wait_for(lambda: not any(t.is_alive() for t in held))
        assert post(receiver.url, envelope("t-after-flood")).status_code == 200
        assert receiver.wait_idle(10) and receiver.ran == ["t-after-flood"]
    finally:
        for sock in idle:
            sock.close()


def test_a_client_dribbling_bytes_is_cut_off_at_the_request_deadline(store):
    receiver = Receiver(SECRET, store=store)
    # pauses (0.2 s) stay well under the idle timeout: only the whole-request deadline ends it
    url = receiver.serve(idle_timeout=2.0, request_timeout=4.0)
    before = connection_threads()
    sock = socket.create_connection(("127.0.0.1", port_of(url)), timeout=30)
    stop = threading.Event()

    def dribble() -> None:
        for byte in b"POST /hooks HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 400:
            if stop.wait(0.2):
                return
            try:
                sock.sendall(bytes([byte]))
            except OSError:  # the server hung up
                return

    sender = threading.Thread(target=dribble, daemon=True)
    sender.start()
    try:
        assert wait_for(lambda: len(connection_threads() - before) >= 1)
        held = connection_threads() - before
        closed, _ = read_until_closed(sock, time.monotonic() + PATIENCE)
        assert closed, "a client sending a byte every 0.2 s held its connection for 60 s"
        assert wait_for(lambda: not any(t.is_alive() for t in held))
    finally:
        stop.set()
        sender.join(10)
        sock.close()
        receiver.stop()


def _chunked(body: bytes, size: int = 7):
    """``body`` as a generator: requests sends it with Transfer-Encoding: chunked."""
    return (body[i : i + size] for i in range(0, len(body), size))


def _signed_headers(body: bytes) -> dict[str, str]:
    stamp = str(int(time.time() * 1000))
    return {"X-Timestamp": stamp, "X-Signature": sign(SECRET, stamp, body)}


def test_a_signed_delivery_sent_chunked_is_accepted_once(receiver):
    """No Content-Length: the body is read whole from its chunks, then verified."""
    body = envelope("t-chunked")
    answer = requests.post(
        receiver.url, data=_chunked(body), headers=_signed_headers(body), timeout=30
    )
    assert answer.request.headers.get("Transfer-Encoding") == "chunked"
    assert "Content-Length" not in answer.request.headers
    assert answer.status_code == 200, answer.text
    assert wait_for(lambda: receiver.ran == ["t-chunked"])


def test_a_chunked_delivery_over_the_size_limit_is_413(store):
    made = Receiver(SECRET, store=store, max_body=1000)
    made.serve()
    try:
        body = envelope("t-big") + b" " * 2000
        answer = requests.post(
            made.url, data=_chunked(body, 500), headers=_signed_headers(body), timeout=30
        )
        assert answer.status_code == 413
    finally:
        made.stop()


GUNICORN_APP = """
import os
from pathlib import Path
from dubkit.webhooks import Receiver

receiver = Receiver(os.environ["SECRET"], store=os.environ["STORE"])
receiver.on("openapi-translate", lambda e: Path(os.environ["RAN"]).open("a").write(e.task_id + "\\n"))
app = receiver.wsgi_app
"""


def test_a_chunked_delivery_through_gunicorn_is_accepted_once(store, tmp_path):
    """gunicorn decodes the chunks itself (wsgi.input_terminated): the bytes are read to EOF."""
    import shutil
    import subprocess

    (tmp_path / "receiver_app.py").write_text(GUNICORN_APP)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ran = tmp_path / "ran.txt"
    server = subprocess.Popen(
        [
            shutil.which("gunicorn", path=str(Path(sys.executable).parent)) or "gunicorn",
            "-w",
            "1",
            "-b",
            f"127.0.0.1:{port}",
            "receiver_app:app",
        ],
        cwd=tmp_path,
        env={**os.environ, "SECRET": SECRET, "STORE": str(store), "RAN": str(ran)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/"

        def up() -> bool:
            try:
                requests.get(url, timeout=5)
                return True
            except requests.ConnectionError:
                return False

        assert wait_for(up)
        body = envelope("t-gunicorn")
        answer = requests.post(url, data=_chunked(body), headers=_signed_headers(body), timeout=30)
        assert answer.status_code == 200, answer.text
        assert wait_for(lambda: ran.exists() and ran.read_text() == "t-gunicorn\n")
    finally:
        server.terminate()
        server.wait(60)
