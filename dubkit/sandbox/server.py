"""Run the sandbox: in a background thread of this process, or standalone (``dubkit sandbox``).

>>> box = dubkit.sandbox.start()          # ephemeral data dir, free port
>>> box.url, box.api_key                  # talk to it with dubkit.Client(box.api_key, box.url)
>>> box.set_faults(dropAfterCommit=0.3)   # admin helpers for tests and demos
>>> box.stop()
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Sequence

import requests
import uvicorn

from .._util.masking import mask_key
from .admin_token import ADMIN_HEADER, TOKEN_ENV, TOKEN_FILE, read_admin_token
from .app import create_app
from .backend import Backend
from .contract_log import LOG_ENV, ContractLog, strict_from_env
from .guard import sandbox_hosts
from .delivery import Deliverer


class _QuietDrops(logging.Filter):
    """The dropAfterCommit fault makes uvicorn log an error by design; keep logs readable."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "without completing response" not in record.getMessage()


class Credentials(dict):
    """An admin answer that holds a key or secret: readable by index, masked when shown.

    Returned by :meth:`SandboxHandle.info` and :meth:`SandboxHandle.set_webhook`, so leaving
    one as a cell's last line never saves a credential into the notebook.
    """

    _SECRET_FIELDS = ("apiKey", "webhookSecret", "secret", "previousSecret")

    def _masked(self) -> dict[str, Any]:
        return {k: mask_key(v) if k in self._SECRET_FIELDS and v else v
                for k, v in self.items()}

    def __repr__(self) -> str:
        return repr(self._masked())

    __str__ = __repr__

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


class SandboxHandle:
    """A running sandbox: its ``url``, default ``api_key`` and ``webhook_secret``, and admin calls.

    The key and secret are real credentials for this sandbox, so the repr masks them. Admin
    calls carry the sandbox's admin token: this process's own sandbox knows it; for another one
    it comes from ``admin_token=``, ``$DUBKIT_SANDBOX_ADMIN_TOKEN``, or the default data dir's
    ``admin-token`` file (a ``dubkit sandbox`` of the same user).
    """

    def __init__(self, url: str, backend: Backend | None = None,
                 server: uvicorn.Server | None = None, thread: threading.Thread | None = None,
                 deliverer: Deliverer | None = None, tmp: tempfile.TemporaryDirectory | None = None,
                 *, admin_token: str | None = None) -> None:
        self.url = url
        self._backend, self._server, self._thread = backend, server, thread
        self._deliverer, self._tmp = deliverer, tmp
        self._admin = requests.Session()
        self._admin.trust_env = False       # the token goes to this sandbox, never to a proxy
        token = admin_token or (backend.admin_token if backend else _known_admin_token())
        if token:
            self._admin.headers[ADMIN_HEADER] = token

    def __repr__(self) -> str:
        return f"SandboxHandle(url={self.url!r}, api_key={mask_key(self.api_key)!r})"

    # -- facts
    def info(self) -> Credentials:
        return Credentials(self.admin("GET", "/info"))

    @property
    def api_key(self) -> str:
        return self.info()["apiKey"]

    @property
    def webhook_secret(self) -> str:
        return self.info()["webhookSecret"]

    @property
    def data_dir(self) -> Path:
        return Path(self.info()["dataDir"])

    # -- admin helpers (thin wrappers over /_sandbox, see dubkit.sandbox.admin)
    def admin(self, method: str, path: str, *, params: dict[str, Any] | None = None,
              **body: Any) -> Any:
        # Never redirected: the token goes to this sandbox and nowhere else.
        answer = self._admin.request(method, f"{self.url}/_sandbox{path}", params=params,
                                     json=body if method != "GET" else None, timeout=30,
                                     allow_redirects=False)
        answer.raise_for_status()
        return answer.json()

    def reset(self) -> dict[str, Any]:
        return self.admin("POST", "/reset")

    def create_key(self, name: str = "extra", credits: float = 1_000_000, *,
                   api_key: str | None = None) -> str:
        body = {"name": name, "credits": credits, **({"apiKey": api_key} if api_key else {})}
        return self.admin("POST", "/keys", **body)["apiKey"]

    def credits(self, api_key: str | None = None) -> float:
        """The credits left on ``api_key`` (default: the sandbox's default key)."""
        return self.admin("GET", "/credits", params={"apiKey": api_key} if api_key else None
                          )["credits"]

    def set_credits(self, credits: float, api_key: str | None = None) -> None:
        self.admin("POST", "/credits", credits=credits, apiKey=api_key)

    def set_webhook(self, url: str | None, *, api_key: str | None = None,
                    rotate_secret: bool = False, overlap_seconds: float = 3600) -> Credentials:
        return Credentials(self.admin("POST", "/webhook", url=url, apiKey=api_key,
                                      rotateSecret=rotate_secret,
                                      overlapSeconds=overlap_seconds))

    def set_timing(self, mode: str = "immediate", value: float = 0) -> None:
        self.admin("POST", "/timing", mode=mode, value=value)

    def set_faults(self, **faults: Any) -> None:
        """e.g. ``set_faults(dropAfterCommit=0.3, latencyMs=200, paths=["/task/"])``; none clears."""
        self.admin("POST", "/faults", **faults)

    def set_limits(self, **limits: Any) -> None:
        self.admin("POST", "/limits", **limits)

    def set_delivery(self, **schedule: Any) -> None:
        self.admin("POST", "/delivery", **schedule)

    def deliveries(self, *, task_id: str | None = None, state: str | None = None,
                   api_key: str | None = None) -> dict[str, Any]:
        query = {k: v for k, v in (("taskId", task_id), ("state", state),
                                   ("apiKey", api_key)) if v}
        return self.admin("GET", "/deliveries", params=query)

    def contract_mismatches(self) -> list[dict[str, Any]]:
        """What strict contract mode recorded (empty when strict mode is off)."""
        return self.admin("GET", "/contract")["mismatches"]

    def redeliver(self, task_id: str) -> dict[str, Any]:
        """Send a task's webhook again with the same body: what a replay looks like."""
        return self.admin("POST", "/deliveries/redeliver", taskId=task_id)

    # -- lifecycle
    def stop(self) -> None:
        """Stop the server and its threads (in-process sandboxes only)."""
        if self._server is None:
            return
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._deliverer is not None:
            self._deliverer.stop()
        if self._backend is not None:
            self._backend.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
        self._server = None

    def __enter__(self) -> "SandboxHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _known_admin_token() -> str | None:
    """The token for a sandbox this process did not start: the environment, else the default
    data dir's file (the same user's ``dubkit sandbox``)."""
    from . import default_data_dir
    return os.environ.get(TOKEN_ENV) or read_admin_token(default_data_dir())


def _serve_config(backend: Backend, sock: socket.socket, log_level: str,
                  hosts: set[str]) -> uvicorn.Server:
    logging.getLogger("uvicorn.error").addFilter(_QuietDrops())
    config = uvicorn.Config(create_app(backend, hosts), log_level=log_level, access_log=False,
                            timeout_keep_alive=30, limit_concurrency=512, http="h11")
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
        except OSError:   # taken by someone else now: any port will do
            pass
    return _bind(host, 0)


def start(data_dir: str | Path | None = None, *, port: int | None = None,
          host: str = "127.0.0.1", log_level: str = "warning",
          strict: bool | None = None, allow_hosts: Sequence[str] = ()) -> SandboxHandle:
    """Start a sandbox in a background thread and return once it answers.

    ``data_dir=None`` uses a temporary directory removed on :meth:`SandboxHandle.stop`; give a
    directory to keep keys, tasks and files across restarts. ``port=None`` reuses the port this
    data dir served on last time when it is free (so file URLs stored in its records, like a
    CDN's, keep working after a restart), else any free port. ``strict`` turns on strict
    contract mode (default: ``DUBKIT_CONTRACT=strict``; see :mod:`dubkit.sandbox.contract_log`).
    ``allow_hosts`` are further names (``host`` or ``host:port``) the sandbox answers admin
    calls under, e.g. the name a class uses to reach it (see :mod:`dubkit.sandbox.guard`).
    """
    tmp = tempfile.TemporaryDirectory(prefix="dubkit-sandbox-") if data_dir is None else None
    log = ContractLog(strict_from_env() if strict is None else strict, os.environ.get(LOG_ENV))
    backend = Backend(Path(tmp.name if tmp else data_dir),  # type: ignore[arg-type]
                      contract_log=log)
    sock = _bind_preferred(host, port, backend.setting("port"))
    url = f"http://{host}:{sock.getsockname()[1]}"
    backend.set_setting("port", sock.getsockname()[1])
    backend.base_url = url
    server = _serve_config(backend, sock, log_level,
                           sandbox_hosts(host, sock.getsockname()[1], allow_hosts))
    deliverer = Deliverer(backend)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name="dubkit-sandbox", daemon=True)
    backend.start()
    deliverer.start()
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the sandbox server did not start")
        time.sleep(0.01)
    return SandboxHandle(url, backend, server, thread, deliverer, tmp)


def serve_forever(data_dir: str | Path, *, port: int, host: str = "127.0.0.1",
                  log_level: str = "info", strict: bool | None = None,
                  allow_hosts: Sequence[str] = ()) -> None:
    """Run in the foreground until interrupted (the ``dubkit sandbox`` command)."""
    handle = start(data_dir, port=port, host=host, log_level=log_level, strict=strict,
                   allow_hosts=allow_hosts)
    info = handle.info()
    # The credentials stay off the terminal (and out of logs): the admin token is a file only
    # this user can read; dubkit.connect() with DUBKIT_BASE_URL finds it there.
    token_file = Path(info["dataDir"]) / TOKEN_FILE
    print(f"dubkit sandbox listening on {handle.url}\n"
          f"  API key (default):  {mask_key(info['apiKey'])}\n"
          f"  data dir:           {info['dataDir']}\n"
          f"  admin token:        in {token_file} (readable by you only); send it as "
          f"{ADMIN_HEADER}, or set {TOKEN_ENV} for another account\n"
          f"  connect with:       DUBKIT_BASE_URL={handle.url} python -c 'import dubkit; dubkit.connect()'",
          flush=True)
    try:
        while handle._thread is not None and handle._thread.is_alive():
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        handle.stop()
