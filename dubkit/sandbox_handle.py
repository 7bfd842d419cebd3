"""The client's handle on a sandbox: its address, default credentials, and admin calls.

The sandbox is a separate program (:mod:`dubkit.sandbox`) that never imports the client; the
client reaches it through :func:`dubkit.connect` and this handle, over HTTP like any other
caller. Admin calls go through a :class:`~dubkit._transport.Transport` of their own whose secret
is the sandbox's admin token, sent as ``X-Sandbox-Admin-Token`` only below ``/_sandbox``.

>>> box = dubkit.connect().sandbox        # the embedded sandbox's handle
>>> box.set_faults(dropAfterCommit=0.3)   # admin helpers for tests and demos
>>> box.create_key("ana")                 # a key of her own, for a class
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from ._transport import RetryPolicy, Transport
from ._util.masking import mask_key

ADMIN_HEADER = "X-Sandbox-Admin-Token"
TOKEN_ENV = "DUBKIT_SANDBOX_ADMIN_TOKEN"
_SECRET_FIELDS = ("apiKey", "webhookSecret", "secret", "previousSecret")


class Server(Protocol):
    """A sandbox this process runs (what :func:`dubkit.sandbox.start` returns)."""

    @property
    def url(self) -> str: ...

    @property
    def admin_token(self) -> str: ...

    def stop(self) -> None: ...


class Credentials(dict):  # type: ignore[type-arg]
    """An admin answer that holds a key or secret: readable by index, masked when shown.

    Returned by :meth:`SandboxHandle.info` and :meth:`SandboxHandle.set_webhook`, so leaving
    one as a cell's last line never saves a credential into the notebook.
    """

    def _masked(self) -> dict[str, Any]:
        return {k: mask_key(v) if k in _SECRET_FIELDS and v else v for k, v in self.items()}

    def __repr__(self) -> str:
        return repr(self._masked())

    __str__ = __repr__

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


class SandboxHandle:
    """A sandbox: its ``url``, default ``api_key`` and ``webhook_secret``, and admin calls.

    The key and secret are real credentials for this sandbox, so the repr masks them. Admin
    calls carry the sandbox's admin token: a sandbox this process runs (``server``) knows it;
    for another one it comes from ``admin_token=``, ``$DUBKIT_SANDBOX_ADMIN_TOKEN``, or the
    default data dir's ``admin-token`` file (a ``dubkit sandbox`` of the same user).
    """

    def __init__(
        self, url: str, *, admin_token: str | None = None, server: Server | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self.server = server
        token = admin_token or (server.admin_token if server else _known_admin_token())
        # One quick retry: a sandbox answers at once or is not there.
        self._admin = Transport(
            token,
            self.url,
            header=ADMIN_HEADER,
            scheme="",
            scope="/_sandbox",
            retry=RetryPolicy(max_retries=1, backoff=0.1),
        )

    def __repr__(self) -> str:
        return f"SandboxHandle(url={self.url!r}, api_key={mask_key(self.api_key)!r})"

    # -- facts
    def info(self) -> Credentials:
        return Credentials(self.admin("GET", "/info"))

    @property
    def api_key(self) -> str:
        return str(self.info()["apiKey"])

    @property
    def webhook_secret(self) -> str:
        return str(self.info()["webhookSecret"])

    @property
    def data_dir(self) -> Path:
        return Path(self.info()["dataDir"])

    # -- admin helpers (thin wrappers over /_sandbox, see dubkit.sandbox.admin)
    def admin(
        self, method: str, path: str, *, params: dict[str, Any] | None = None, **body: Any
    ) -> Any:
        """One admin call; the decoded JSON answer (errors are dubkit errors)."""
        answer = self._admin.send(
            method,
            f"{self.url}/_sandbox{path}",
            params=params,
            json=body if method.upper() != "GET" else None,
        )
        return answer.json()

    def reset(self) -> dict[str, Any]:
        return dict(self.admin("POST", "/reset"))

    def create_key(
        self, name: str = "extra", credits: float = 1_000_000, *, api_key: str | None = None
    ) -> str:
        body: dict[str, Any] = {"name": name, "credits": credits}
        if api_key:
            body["apiKey"] = api_key
        return str(self.admin("POST", "/keys", **body)["apiKey"])

    def credits(self, api_key: str | None = None) -> float:
        """The credits left on ``api_key`` (default: the sandbox's default key)."""
        return float(
            self.admin("GET", "/credits", params={"apiKey": api_key} if api_key else None)[
                "credits"
            ]
        )

    def set_credits(self, credits: float, api_key: str | None = None) -> None:
        self.admin("POST", "/credits", credits=credits, apiKey=api_key)

    def set_webhook(
        self,
        url: str | None,
        *,
        api_key: str | None = None,
        rotate_secret: bool = False,
        overlap_seconds: float = 3600,
    ) -> Credentials:
        return Credentials(
            self.admin(
                "POST",
                "/webhook",
                url=url,
                apiKey=api_key,
                rotateSecret=rotate_secret,
                overlapSeconds=overlap_seconds,
            )
        )

    def set_timing(self, mode: str = "immediate", value: float = 0) -> None:
        self.admin("POST", "/timing", mode=mode, value=value)

    def set_faults(self, **faults: Any) -> None:
        """e.g. ``set_faults(dropAfterCommit=0.3, latencyMs=200, paths=["/task/"])``; none clears."""
        self.admin("POST", "/faults", **faults)

    def set_limits(self, **limits: Any) -> None:
        self.admin("POST", "/limits", **limits)

    def set_delivery(self, **schedule: Any) -> None:
        self.admin("POST", "/delivery", **schedule)

    def deliveries(
        self, *, task_id: str | None = None, state: str | None = None, api_key: str | None = None
    ) -> dict[str, Any]:
        query = {k: v for k, v in (("taskId", task_id), ("state", state), ("apiKey", api_key)) if v}
        return dict(self.admin("GET", "/deliveries", params=query))

    def contract_mismatches(self) -> list[dict[str, Any]]:
        """What strict contract mode recorded (empty when strict mode is off)."""
        return list(self.admin("GET", "/contract")["mismatches"])

    def redeliver(self, task_id: str) -> dict[str, Any]:
        """Send a task's webhook again with the same body: what a replay looks like."""
        return dict(self.admin("POST", "/deliveries/redeliver", taskId=task_id))

    # -- lifecycle
    def stop(self) -> None:
        """Stop the server and its threads (a sandbox this process runs; else nothing)."""
        if self.server is not None:
            self.server.stop()
        self._admin.close()

    def __enter__(self) -> SandboxHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def start(data_dir: str | Path | None = None, **options: Any) -> SandboxHandle:
    """Start a sandbox in this process (see :func:`dubkit.sandbox.start`) and return its
    handle; ``stop()`` ends it.

    >>> with dubkit.start_sandbox() as box:
    ...     client = dubkit.Client(box.api_key, box.url)
    """
    from . import sandbox

    server = sandbox.start(data_dir, **options)
    return SandboxHandle(server.url, server=server)


def embedded() -> tuple[SandboxHandle, str]:
    """This process's sandbox (started on first use) and a one-line note for the banner."""
    from . import sandbox

    server, note = sandbox.embedded()
    return SandboxHandle(server.url, server=server), note


def _known_admin_token() -> str | None:
    """The token for a sandbox this process did not start: the environment, else the default
    data dir's file (the same user's ``dubkit sandbox``)."""
    from .sandbox import default_data_dir, read_admin_token

    return os.environ.get(TOKEN_ENV) or read_admin_token(default_data_dir())
