"""Run the sandbox: in a background thread of this process, or standalone (``dubkit sandbox``).

>>> box = dubkit.sandbox.start()          # ephemeral data dir, free port
>>> box.url, box.admin_token              # the client's SandboxHandle(box.url, server=box)
>>> box.stop()
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path

import uvicorn

from .._util.masking import mask_key
from .admin_token import ADMIN_HEADER, TOKEN_ENV, TOKEN_FILE
from .app import create_app
from .backend import Backend
from .contract_log import LOG_ENV, ContractLog, strict_from_env
from .delivery import Deliverer
from .guard import sandbox_hosts


class _QuietDrops(logging.Filter):
    """The dropAfterCommit fault makes uvicorn log an error by design; keep logs readable."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "without completing response" not in record.getMessage()


class RunningSandbox:
    """A sandbox this process runs: its ``url`` and ``admin_token``; :meth:`stop` ends it.

    The client's :class:`dubkit.sandbox_handle.SandboxHandle` wraps one for admin calls over
    HTTP. ``backend`` and ``deliverer`` are the live objects, for white-box tests.
    """

    def __init__(
        self,
        url: str,
        backend: Backend,
        server: uvicorn.Server,
        thread: threading.Thread,
        deliverer: Deliverer,
        tmp: tempfile.TemporaryDirectory[str] | None,
    ) -> None:
        self.url, self.backend, self.deliverer = url, backend, deliverer
        self._server: uvicorn.Server | None = server
        self._thread, self._tmp = thread, tmp

    def __repr__(self) -> str:
        return f"RunningSandbox(url={self.url!r})"

    @property
    def admin_token(self) -> str:
        return self.backend.admin_token

    @property
    def running(self) -> bool:
        return self._server is not None and self._thread.is_alive()

    def stop(self) -> None:
        """Stop the server and its threads; a temporary data dir is removed."""
        if self._server is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self.deliverer.stop()
        self.backend.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
        self._server = None


def _serve_config(
    backend: Backend, sock: socket.socket, log_level: str, hosts: set[str]
) -> uvicorn.Server:
    logging.getLogger("uvicorn.error").addFilter(_QuietDrops())
    config = uvicorn.Config(
        create_app(backend, hosts),
        log_level=log_level,
        access_log=False,
        timeout_keep_alive=30,
        limit_concurrency=512,
        http="h11",
    )
    return uvicorn.Server(config)


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted sockets inherit this: without it Nagle + delayed ACK add ~40 ms per answer.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(512)
    return sock


def _bind_preferred(host: str, port: int | None, remembered: int | None) -> socket.socket:
    if port is not None:
        return _bind(host, port)
    if remembered:
        try:
            return _bind(host, remembered)
        except OSError:  # taken by someone else now: any port will do
            pass
    return _bind(host, 0)


def start(
    data_dir: str | Path | None = None,
    *,
    port: int | None = None,
    host: str = "127.0.0.1",
    log_level: str = "warning",
    strict: bool | None = None,
    allow_hosts: Sequence[str] = (),
) -> RunningSandbox:
    """Start a sandbox in a background thread and return once it answers.

    ``data_dir=None`` uses a temporary directory removed on :meth:`RunningSandbox.stop`; give a
    directory to keep keys, tasks and files across restarts. ``port=None`` reuses the port this
    data dir served on last time when it is free (so file URLs stored in its records, like a
    CDN's, keep working after a restart), else any free port. ``strict`` turns on strict
    contract mode (default: ``DUBKIT_CONTRACT=strict``; see :mod:`dubkit.sandbox.contract_log`).
    ``allow_hosts`` are further names (``host`` or ``host:port``) the sandbox answers admin
    calls under, e.g. the name a class uses to reach it (see :mod:`dubkit.sandbox.guard`).
    """
    tmp = tempfile.TemporaryDirectory(prefix="dubkit-sandbox-") if data_dir is None else None
    log = ContractLog(strict_from_env() if strict is None else strict, os.environ.get(LOG_ENV))
    backend = Backend(
        Path(tmp.name if tmp else data_dir),  # type: ignore[arg-type]
        contract_log=log,
    )
    sock = _bind_preferred(host, port, backend.setting("port"))
    url = f"http://{host}:{sock.getsockname()[1]}"
    backend.set_setting("port", sock.getsockname()[1])
    backend.base_url = url
    server = _serve_config(
        backend, sock, log_level, sandbox_hosts(host, sock.getsockname()[1], allow_hosts)
    )
    deliverer = Deliverer(backend)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="dubkit-sandbox", daemon=True
    )
    backend.start()
    deliverer.start()
    thread.start()
    _ends_with_interpreter(backend, deliverer)
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the sandbox server did not start")
        time.sleep(0.01)
    return RunningSandbox(url, backend, server, thread, deliverer, tmp)


def _ends_with_interpreter(backend: Backend, deliverer: Deliverer) -> None:
    """As the interpreter ends, before it waits for the worker threads: stop the webhook
    scheduler (the outbox keeps what it did not send, for the next start) and run
    :meth:`Backend.end_with_interpreter`. ``threading._register_atexit`` is the hook
    concurrent.futures uses; the last registered runs first, so this runs before the pools
    stop taking work, which a scheduler still dispatching would otherwise hit."""
    backend_ref, deliverer_ref = weakref.ref(backend), weakref.ref(deliverer)

    def ending() -> None:
        if (alive_deliverer := deliverer_ref()) is not None:
            alive_deliverer.stop()
        if (alive_backend := backend_ref()) is not None:
            alive_backend.end_with_interpreter()

    threading._register_atexit(ending)  # type: ignore[attr-defined]


def serve_forever(
    data_dir: str | Path,
    *,
    port: int,
    host: str = "127.0.0.1",
    log_level: str = "info",
    strict: bool | None = None,
    allow_hosts: Sequence[str] = (),
) -> None:
    """Run in the foreground until interrupted (the ``dubkit sandbox`` command)."""
    box = start(
        data_dir, port=port, host=host, log_level=log_level, strict=strict, allow_hosts=allow_hosts
    )
    # The credentials stay off the terminal (and out of logs): the admin token is a file only
    # this user can read; dubkit.connect() with DUBKIT_BASE_URL finds it there.
    token_file = box.backend.data_dir / TOKEN_FILE
    print(
        f"dubkit sandbox listening on {box.url}\n"
        f"  API key (default):  {mask_key(box.backend.default_key)}\n"
        f"  data dir:           {box.backend.data_dir}\n"
        f"  admin token:        in {token_file} (readable by you only); send it as "
        f"{ADMIN_HEADER}, or set {TOKEN_ENV} for another account\n"
        f"  connect with:       DUBKIT_BASE_URL={box.url} python -c 'import dubkit; dubkit.connect()'",
        flush=True,
    )
    try:
        while box.running:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        box.stop()
