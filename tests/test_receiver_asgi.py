"""The Receiver as an ASGI app, served by a real uvicorn: mounted in a FastAPI app, and alone
(with its lifespan). The same rules as behind WSGI: a signed event runs once however often it
is delivered, bad signatures and oversized bodies are refused, ``async def`` handlers are
awaited by the receiver's workers; on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests
import uvicorn
from _postgres import pg_url, postgres  # noqa: F401  (fixtures)
from _receiving import SECRET, envelope, post, store  # noqa: F401  (store: a fixture)
from _waiting import PATIENCE, wait_for
from fastapi import FastAPI

import dubkit
from dubkit.webhooks import Receiver


@contextmanager
def served(app: Any) -> Iterator[str]:
    """``app`` under uvicorn on a free loopback port, in a thread; yields its base URL. The
    server's lifespan runs as it would in production (startup before the first request,
    shutdown on exit)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="auto")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    assert wait_for(lambda: server.started or not thread.is_alive()), "uvicorn did not start"
    assert thread.is_alive(), "uvicorn stopped at start-up"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(PATIENCE)


def fastapi_app(receiver: Receiver) -> FastAPI:
    app = FastAPI()

    @app.get("/health")
    def health() -> dict[str, bool]:
        return {"ok": True}

    app.mount("/webhooks", receiver.asgi_app)
    return app


def test_a_fastapi_app_mounts_the_receiver_and_runs_a_signed_event_once(store: Path):
    receiver = Receiver(SECRET, store=store, retry_delay=0.01)
    ran: list[str] = []

    @receiver.on("openapi-translate")
    async def translated(event) -> None:  # an async def handler
        await asyncio.sleep(0)
        ran.append(event.task_id)

    body = envelope("t-asgi")
    try:
        with served(fastapi_app(receiver)) as url:
            assert requests.get(f"{url}/health", timeout=PATIENCE).json() == {"ok": True}
            answers = [post(f"{url}/webhooks/", body) for _ in range(3)]  # the service retries
            assert receiver.wait_idle(PATIENCE)
    finally:
        receiver.stop()
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert [a.json().get("duplicate", False) for a in answers] == [False, True, True]
    assert ran == ["t-asgi"]


def test_the_asgi_app_refuses_what_the_wsgi_app_refuses(store: Path):
    receiver = Receiver(SECRET, store=store, max_body=1000)
    receiver.on("openapi-translate", lambda event: None)
    try:
        with served(fastapi_app(receiver)) as url:
            forged = post(f"{url}/webhooks/", envelope("t-forged"), tamper=True)
            unsigned = requests.post(f"{url}/webhooks/", data=envelope("t-x"), timeout=PATIENCE)
            big = post(f"{url}/webhooks/", b"{" + b" " * 5000 + b"}")
            fetched = requests.get(f"{url}/webhooks/", timeout=PATIENCE)
    finally:
        receiver.stop()
    assert forged.status_code == 401 and "signature" in forged.json()["error"]
    assert unsigned.status_code == 401
    assert big.status_code == 413 and fetched.status_code == 405
    assert fetched.headers["allow"] == "POST"
    assert SECRET not in forged.text + unsigned.text + big.text


def test_served_alone_it_starts_and_stops_with_the_server_and_retries_a_failing_handler(
    store: Path,
):
    receiver = Receiver(SECRET, store=store, retry_delay=0.01)
    tries: list[str] = []

    @receiver.on("openapi-translate")
    async def flaky(event) -> None:
        tries.append(event.task_id)
        if len(tries) == 1:
            raise RuntimeError("the database blinked")

    with served(receiver.asgi_app) as url:
        assert receiver.running  # the lifespan's startup started its workers
        assert post(url, envelope("t-alone")).status_code == 200
        assert wait_for(lambda: len(tries) == 2)
    assert not receiver.running  # the lifespan's shutdown stopped them
    assert tries == ["t-alone", "t-alone"] and receiver.store.counts() == {"done": 1}


def test_a_transactional_handler_must_be_a_plain_def(pg_url):
    receiver = Receiver(SECRET, store=pg_url)

    async def in_transaction(event, connection) -> None:
        pass

    with pytest.raises(dubkit.ValidationError) as info:
        receiver.on("openapi-translate", in_transaction, transaction=True)
    assert info.value.field == "transaction"
    receiver.stop()


@pytest.mark.heavy
def test_on_postgresql_two_asgi_receivers_run_a_redelivered_event_once(pg_url):
    """Two apps (two receivers, as two hosts would run) on one PostgreSQL store: the event is
    delivered to each, twice, and runs once."""
    ran: list[str] = []
    receivers = [Receiver(SECRET, store=pg_url, retry_delay=0.01) for _ in range(2)]
    for receiver in receivers:
        receiver.on("openapi-translate", lambda event: ran.append(event.task_id))
    body = envelope("t-pg")
    try:
        with served(fastapi_app(receivers[0])) as one, served(fastapi_app(receivers[1])) as two:
            answers = [post(f"{url}/webhooks/", body) for url in (one, two, one, two)]
            assert all(r.wait_idle(PATIENCE) for r in receivers)
    finally:
        for receiver in receivers:
            receiver.stop()
    assert [a.status_code for a in answers] == [200] * 4
    assert sum(not a.json().get("duplicate") for a in answers) == 1
    assert ran == ["t-pg"]
