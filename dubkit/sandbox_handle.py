"""The client's handle on a sandbox: its address, default credentials, and admin calls.

The sandbox is a separate program (:mod:`dubkit.sandbox`) that never imports the client; the
client reaches it through :func:`dubkit.connect` and this handle, over HTTP like any other
caller. Admin calls go through a :class:`~dubkit._transport.Transport` of their own whose secret
is the sandbox's admin token, sent as ``X-Sandbox-Admin-Token`` only below ``/_sandbox``.

>>> box = dubkit.connect().sandbox        # the embedded sandbox's handle
>>> box.set_faults(drop_after_commit=0.3)  # admin helpers for tests and demos
>>> box.create_key("ana")                 # a key of her own, for a class
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

from ._transport import RetryPolicy, Transport
from ._util.deprecation import renamed_keywords
from ._util.masking import mask_key
from ._wire import checked, wire_name
from .schema import Wire
from .schema.sandbox_admin import (
    ClassReport,
    Credits,
    DeliverySchedule,
    Faults,
    KeyInfo,
    KeyMade,
    KeyRef,
    KeyReset,
    KeyUpdate,
    Limits,
    NewKey,
    OutboxRow,
    Redeliver,
    SandboxInfo,
    ThrottleLimits,
    Timing,
    WebhookSecrets,
    WebhookSettings,
)

ADMIN_HEADER = "X-Sandbox-Admin-Token"
TOKEN_ENV = "DUBKIT_SANDBOX_ADMIN_TOKEN"
_SECRET_FIELDS = tuple(
    wire_name(model, name)
    for model, name in (
        (SandboxInfo, "api_key"),
        (SandboxInfo, "webhook_secret"),
        (WebhookSecrets, "secret"),
        (WebhookSecrets, "previous_secret"),
    )
)
M = TypeVar("M", bound=Wire)


def _camel(model: type[Wire]) -> dict[str, str]:
    """Each field's wire name -> its Python name, where they differ: the keywords an admin
    helper took before it took Python names (``dropAfterCommit`` -> ``drop_after_commit``)."""
    return {
        field.alias: name
        for name, field in model.model_fields.items()
        if field.alias and field.alias != name
    }


def _checked(model: type[M], **given: Any) -> M:
    """``model`` of the values given (None: not given), checked before anything is sent."""
    return checked(model, {k: v for k, v in given.items() if v is not None})


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

    def _info(self) -> SandboxInfo:
        return SandboxInfo.model_validate(self.admin("GET", "/info"))

    @property
    def api_key(self) -> str:
        return self._info().api_key

    @property
    def webhook_secret(self) -> str:
        return self._info().webhook_secret or ""

    @property
    def data_dir(self) -> Path:
        return Path(self._info().data_dir)

    # -- admin helpers (thin wrappers over /_sandbox, see dubkit.sandbox.admin)
    def admin(
        self, method: str, path: str, *, params: dict[str, Any] | None = None, **body: Any
    ) -> Any:
        """One admin call; the decoded JSON answer (errors are dubkit errors)."""
        return self._send(method, path, params=params, json=body)

    def _send(
        self,
        method: str,
        path: str,
        body: Wire | None = None,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
    ) -> Any:
        if body is not None:  # only the fields given, under their wire names
            json = body.model_dump(by_alias=True, exclude_unset=True, mode="json")
        answer = self._admin.send(
            method,
            f"{self.url}/_sandbox{path}",
            params=params,
            json=json if method.upper() != "GET" else None,
        )
        return answer.json()

    def reset(self) -> dict[str, Any]:
        return dict(self.admin("POST", "/reset"))

    def serve_file(self, path: str, data: bytes, media_type: str) -> str:
        """Serve ``data`` at ``/files/<path>`` (unless a file of the sandbox's own is there):
        how a replayed lesson's media reach a browser. Its URL."""
        quoted = quote(path, safe="/")
        self._admin.send(
            "PUT",
            f"{self.url}/_sandbox/replayed-files/{quoted}",
            data=data,
            headers={"Content-Type": "application/octet-stream", "X-Media-Type": media_type},
        )
        return f"{self.url}/files/{quoted}"

    def create_key(
        self,
        name: str = "extra",
        credits: float = 1_000_000,
        *,
        api_key: str | None = None,
        student: bool = False,
        max_tasks: int | None = None,
        max_storage: int | None = None,
    ) -> str:
        """A new key (its own account); ``student``: a class roster's, whose refusals tell
        its holder to ask the teacher; ``max_tasks``/``max_storage``: its quotas."""
        body = _checked(
            NewKey,
            name=name,
            credits=credits,
            api_key=api_key or None,
            student=student,
            max_tasks=max_tasks,
            max_storage=max_storage,
        )
        return KeyMade.model_validate(self._send("POST", "/keys", body)).api_key

    def update_key(
        self,
        api_key: str,
        *,
        credits: float | None = None,
        add_credits: float | None = None,
        disabled: bool | None = None,
        max_tasks: int | None = None,
        max_storage: int | None = None,
    ) -> KeyInfo:
        """Change a key's credits (``add_credits``: a top-up) and quotas (``0`` lifts one);
        only what is given changes. The key as it is now (masked)."""
        given = {
            "credits": credits,
            "add_credits": add_credits,
            "disabled": disabled,
            "max_tasks": max_tasks,
            "max_storage": max_storage,
        }
        body = _checked(
            KeyUpdate, api_key=api_key, **{k: v for k, v in given.items() if v is not None}
        )
        return KeyInfo.model_validate(self._send("POST", "/keys/update", body))

    def reset_key(self, api_key: str, *, credits: float | None = None) -> KeyInfo:
        """Forget one key's tasks, materials, clones and uploads; set its credits."""
        body = _checked(KeyReset, api_key=api_key, credits=credits)
        return KeyInfo.model_validate(self._send("POST", "/keys/reset", body))

    def remove_key(self, api_key: str) -> None:
        """The key stops working (401) and its work is forgotten."""
        self._send("POST", "/keys/remove", _checked(KeyRef, api_key=api_key))

    def class_report(self, *, everyone: bool = False) -> ClassReport:
        """What each student's key has done (``everyone``: every key, not only a roster's)."""
        params = {"all": "1"} if everyone else None
        return ClassReport.model_validate(self._send("GET", "/class", params=params))

    def credits(self, api_key: str | None = None) -> float:
        """The credits left on ``api_key`` (default: the sandbox's default key)."""
        query = {wire_name(Credits, "api_key"): api_key} if api_key else None
        return float(self._send("GET", "/credits", params=query)["credits"])

    def set_credits(self, credits: float, api_key: str | None = None) -> None:
        self._send("POST", "/credits", Credits(credits=credits, api_key=api_key))

    def set_webhook(
        self,
        url: str | None,
        *,
        api_key: str | None = None,
        rotate_secret: bool = False,
        overlap_seconds: float = 3600,
    ) -> Credentials:
        settings = WebhookSettings(
            url=url, api_key=api_key, rotate_secret=rotate_secret, overlap_seconds=overlap_seconds
        )
        return Credentials(self._send("POST", "/webhook", settings))

    def set_timing(self, mode: str = "immediate", value: float = 0) -> None:
        self._send("POST", "/timing", _checked(Timing, mode=mode, value=value))

    @renamed_keywords(**_camel(Faults))
    def set_faults(
        self,
        *,
        drop_after_commit: float = 0,
        error502_before: float = 0,
        error502_after: float = 0,
        latency_ms: float = 0,
        crash_after_handler: float = 0,
        error429: float = 0,
        retry_after: int = 1,
        retry_after_as_date: bool = False,
        line_gain_db: Mapping[str, float] | None = None,
        paths: Sequence[str] | None = None,
        seed: int | None = None,
    ) -> None:
        """Inject faults (rates 0..1) on the API ``paths`` (all without them); no argument
        clears them. ``drop_after_commit``: do the work, then lose the answer;
        ``error502_before``/``error502_after``: answer 502 before or after the work;
        ``latency_ms``: answer late; ``crash_after_handler``: a 500 after the work, which must
        charge nothing; ``error429``: a 429 before any work, with ``Retry-After`` of
        ``retry_after`` seconds (as an HTTP date with ``retry_after_as_date``);
        ``line_gain_db``: dubs made meanwhile lay these line ids that many dB off (``{"4":
        -15}``: a quiet take); ``seed``: repeatable runs.

        >>> sandbox.set_faults(drop_after_commit=0.3, latency_ms=200, paths=["/task/"])
        """
        faults = _checked(
            Faults,
            drop_after_commit=drop_after_commit,
            error502_before=error502_before,
            error502_after=error502_after,
            latency_ms=latency_ms,
            crash_after_handler=crash_after_handler,
            error429=error429,
            retry_after=retry_after,
            retry_after_as_date=retry_after_as_date,
            line_gain_db=dict(line_gain_db or {}),
            paths=list(paths) if paths is not None else None,
            seed=seed,
        )
        self._send("POST", "/faults", faults)

    def set_throttle(
        self, *, rate: float | None = None, burst: int | None = None, concurrency: int | None = None
    ) -> dict[str, Any]:
        """Per-key limits: ``rate`` calls a second in bursts of ``burst``, ``concurrency``
        calls in progress (0 turns one off; the ones not given stay). Answers the limits and
        the 429s each key got so far (keys masked)."""
        limits = _checked(ThrottleLimits, rate=rate, burst=burst, concurrency=concurrency)
        answer: dict[str, Any] = self._send("POST", "/throttle", limits)
        return answer

    def throttle(self) -> dict[str, Any]:
        """The per-key limits and the 429s each key got (keys masked)."""
        answer: dict[str, Any] = self._send("GET", "/throttle")
        return answer

    @renamed_keywords(**_camel(Limits))
    def set_limits(
        self,
        *,
        body_limit: int | None = None,
        idempotency_window: float | None = None,
        upload_limit: int | None = None,
    ) -> None:
        """Bytes a request body may have, seconds an idempotency key is held, bytes an upload
        may have; the ones not given stay as they are."""
        given = {
            "body_limit": body_limit,
            "idempotency_window": idempotency_window,
            "upload_limit": upload_limit,
        }
        self._send("POST", "/limits", _checked(Limits, **given))

    @renamed_keywords(**_camel(DeliverySchedule))
    def set_delivery(
        self,
        *,
        base_delay: float | None = None,
        max_delay: float | None = None,
        max_attempts: int | None = None,
        timeout: float | None = None,
        jitter: float | None = None,
    ) -> None:
        """The webhook retry schedule (seconds, attempts, jitter 0..1); the ones not given
        stay as they are (see :mod:`dubkit.sandbox.delivery`)."""
        given = {
            "base_delay": base_delay,
            "max_delay": max_delay,
            "max_attempts": max_attempts,
            "timeout": timeout,
            "jitter": jitter,
        }
        self._send("POST", "/delivery", _checked(DeliverySchedule, **given))

    def deliveries(
        self, *, task_id: str | None = None, state: str | None = None, api_key: str | None = None
    ) -> dict[str, Any]:
        """The outbox: each webhook, its state and attempts (rows of
        :class:`dubkit.schema.sandbox_admin.OutboxRow`, as JSON)."""
        query = {"task_id": task_id, "state": state, "api_key": api_key}
        wire = {OutboxRow.model_fields[k].alias or k: v for k, v in query.items() if v}
        return dict(self._send("GET", "/deliveries", params=wire))

    def contract_mismatches(self) -> list[dict[str, Any]]:
        """What strict contract mode recorded (empty when strict mode is off)."""
        return list(self.admin("GET", "/contract")["mismatches"])

    def redeliver(self, task_id: str) -> dict[str, Any]:
        """Send a task's webhook again with the same body: what a replay looks like."""
        return dict(self._send("POST", "/deliveries/redeliver", Redeliver(task_id=task_id)))

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
