"""The Client: configuration, the one transport, and one resource object per product.

>>> client = dubkit.connect()                       # sandbox unless DUBKIT_API_KEY is set
>>> client.translate.create(["Hello"], source="en-US", target="fr-FR").to_frame()
>>> client.request("GET", "/tasks/list", params={"pageSize": 5})   # the escape hatch
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import cassette, frontends
from ._transport import AsyncTransport, Budget, RetryPolicy, Timeout, Transport, is_read
from ._util.deprecation import warn_renamed
from ._util.masking import mask_key
from ._util.urls import is_web_url
from .batch import start_batch
from .errors import APIConnectionError, DubkitError, ValidationError, origin_of
from .resources import (
    AsyncCloneResource,
    AsyncDubbingResource,
    AsyncMaterialsResource,
    AsyncTasksResource,
    AsyncTranslateResource,
    AsyncTTSResource,
    AsyncVoicesResource,
    CloneResource,
    DubbingResource,
    MaterialsResource,
    TasksResource,
    TranslateResource,
    TTSResource,
    VoicesResource,
)
from .sandbox_handle import SandboxHandle, embedded
from .schema import OPERATIONS_BY_PATH
from .schema.prices import PRICES, PRICES_READ_ON
from .uploads import UploadProgress

if TYPE_CHECKING:
    import pandas as pd

    from .cassette import Cassette, Replayer


class _Common:
    """What both clients tell of themselves, from their one transport."""

    _transport: Transport | AsyncTransport
    sandbox: SandboxHandle | None

    @property
    def base_url(self) -> str:
        """Where this client sends its calls (the service, or a sandbox's address)."""
        return self._transport.base_url

    @property
    def is_sandbox(self) -> bool:
        """True when this client talks to a sandbox (``self.sandbox`` is its handle)."""
        return self.sandbox is not None

    @property
    def budget(self) -> Budget | None:
        """The budget guard (``spent``, ``left``), when the client was given ``budget=``."""
        return self._transport.budget


class Client(_Common):
    """Talks to the service (or a sandbox) at ``base_url`` with ``api_key``.

    The key is sent only in the ``Authorization`` header, only to ``base_url`` (redirects are
    not followed); reprs and errors show it masked. A key with whitespace or a control
    character (a newline read from a file) is refused with a ValidationError that omits it.
    """

    _transport: Transport

    def __init__(
        self,
        api_key: str,
        base_url: str,
        *,
        timeout: Timeout | None = None,
        retry: RetryPolicy | None = None,
        sandbox: SandboxHandle | None = None,
        budget: float | None = None,
    ) -> None:
        self._set_up(Transport(api_key, base_url, timeout=timeout, retry=retry), sandbox, budget)

    @classmethod
    def _over(
        cls, transport: Transport, sandbox: SandboxHandle | None, budget: float | None
    ) -> Client:
        """A client on an existing transport (the async client's sync twin, see
        :class:`AsyncClient`)."""
        client = cls.__new__(cls)
        client._set_up(transport, sandbox, budget)
        return client

    def _set_up(
        self, transport: Transport, sandbox: SandboxHandle | None, budget: float | None
    ) -> None:
        self._transport = transport
        self.sandbox = sandbox  # the SandboxHandle when this client talks to the sandbox
        transport.talks_to_sandbox = sandbox is not None
        # Each resource gets the siblings it uses, so none of them needs the client.
        self.tasks = TasksResource(transport)
        self.voices = VoicesResource(transport)
        self.materials = MaterialsResource(transport, progress_display=_upload_progress)
        self.translate = TranslateResource(transport)
        self.tts = TTSResource(transport, self.voices, self.materials)
        self.clones = CloneResource(transport, self.voices, self.materials, self.tts)
        self.dubbing = DubbingResource(
            transport,
            self.voices,
            self.materials,
            self.tts,
            batches=functools.partial(start_batch, self),
        )
        if budget is not None:  # quotes each paid call before it is sent (see Budget)
            transport.budget = Budget(budget, self.dubbing.material_facts)
        self.recording: Cassette | None = None  # the cassette this client records into
        self.replaying: Replayer | None = None  # the replay answering this client

    def __repr__(self) -> str:
        if self.replaying is not None:
            return (
                f"Client(replaying {self.replaying.cassette.path.name!r}, recorded from "
                f"{origin_of(self.base_url)}; calls it lacks: "
                f"{'the sandbox on this machine' if self.replaying.strays == 'sandbox' else 'an error'}"
                f"; players: {frontends.current().describe()})"
            )
        recording = f", recording to {self.recording.path.name!r}" if self.recording else ""
        return f"{self._where()}{recording}, players: {frontends.current().describe()})"

    def _where(self) -> str:
        # A sandbox on this machine is not named by its loopback address: a repr printed
        # into a notebook must still make sense opened elsewhere (base_url has it).
        where = (
            "sandbox on this machine"
            if self.is_sandbox and urlsplit(self.base_url).hostname in ("127.0.0.1", "localhost")
            else f"{'sandbox' if self.is_sandbox else 'service'}, base_url={self.base_url!r}"
        )
        return f"Client({where}, api_key={self._transport.masked_key!r}"

    @property
    def media(self) -> DubbingResource:
        """``client.dubbing`` under its old name."""
        warn_renamed("client.media", "client.dubbing")
        return self.dubbing

    @property
    def prices(self) -> pd.DataFrame:
        """The service's published prices, the table quotes and the sandbox's charges use."""
        import pandas as pd

        frame = pd.DataFrame([vars(price) for price in PRICES])
        frame.attrs["read_on"] = PRICES_READ_ON
        return frame

    @property
    def transport(self) -> Transport:
        """The one transport every call of this client goes through (retries, keys, errors)."""
        return self._transport

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """Send any call as is and return the envelope's ``data`` (errors still typed).

        A path of the operation table is retried like that operation (a read-only POST like a
        GET); any other POST is treated as a change that may be charged.
        """
        op = OPERATIONS_BY_PATH.get((method.upper(), self._transport.api_path(path)))
        return self._transport.request(
            method,
            path,
            params=params,
            body=json,
            idempotency_key=idempotency_key,
            read=is_read(op) if op else None,
        )

    def call(
        self,
        name: str,
        payload: Any = None,
        *,
        idempotency_key: str | None = None,
        deadline: float | None = None,
    ) -> Any:
        """Validate ``payload`` against operation ``name`` and send it (see
        :meth:`Transport.call`); ``deadline`` (``time.monotonic()`` value) bounds the call."""
        return self._transport.call(
            name, payload, idempotency_key=idempotency_key, deadline=deadline
        )

    def close(self) -> None:
        """Close the client's connections (``with dubkit.Client(...) as client`` does it)."""
        self._transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def connect(
    api_key: str | None = None,
    base_url: str | None = None,
    *,
    quiet: bool = False,
    record: str | os.PathLike[str] | None = None,
    replay: str | os.PathLike[str] | None = None,
    record_mode: str | None = None,
    strays: str | None = None,
    **options: Any,
) -> Client:
    """A ready Client: the real service with a key, else the embedded sandbox.

    ``record="lesson.dubkit"`` (or ``DUBKIT_RECORD``) also records every call and the media
    its answers point to into that cassette; ``record_mode`` (or ``DUBKIT_RECORD_MODE``) says
    what to do with an existing one: ``"new"`` (the default) refuses it, ``"overwrite"``
    replaces it, ``"append"`` adds to it. ``replay="lesson.dubkit"`` (or ``DUBKIT_REPLAY``) needs
    no key and reaches no network: the cassette answers, and a call it lacks goes to the
    sandbox with a one-line note (``strays="error"`` or ``DUBKIT_REPLAY_STRAYS=error``
    raises :class:`ReplayMissError` instead). See :mod:`dubkit.cassette`.

    * ``DUBKIT_API_KEY`` (or ``api_key=``) set: the service at ``DUBKIT_BASE_URL``/``base_url``.
    * only ``DUBKIT_BASE_URL`` set: a standalone sandbox there (``dubkit sandbox``); its default
      key is read from its admin endpoint (the admin token from ``admin-token`` in the default
      data dir, or ``DUBKIT_SANDBOX_ADMIN_TOKEN``).
    * neither: this process's embedded sandbox, started in the background (said in one line).

    Set-up problems are dubkit errors that say how to fix them: :class:`APIConnectionError`
    when nothing answers at the URL, :class:`ValidationError` for a URL that is not usable.

    >>> client = dubkit.connect()
    """
    if record and replay:
        raise ValidationError("replay", "a client records or replays, not both")
    if not (record or replay):  # the environment's, when the call names neither
        record = os.environ.get("DUBKIT_RECORD") or None
        replay = os.environ.get("DUBKIT_REPLAY") or None
        if record and replay:
            raise ValidationError("DUBKIT_REPLAY", "set it or DUBKIT_RECORD, not both")
    if replay:
        return _replaying(replay, strays or os.environ.get("DUBKIT_REPLAY_STRAYS"), quiet, options)
    client = _connected(api_key, base_url, quiet, options)
    if record:
        mode = record_mode or os.environ.get("DUBKIT_RECORD_MODE") or "new"
        client.recording = cassette.record(client.transport, record, mode=mode)
        if client.is_sandbox and not quiet:  # a lesson of made-up words is rarely the intent
            print(
                f"dubkit: recording the local sandbox's answers into {Path(record).name} "
                f"(set DUBKIT_API_KEY and DUBKIT_BASE_URL to record the service)."
            )
    return client


def _replaying(path: Any, strays: str | None, quiet: bool, options: dict[str, Any]) -> Client:
    """A client the cassette at ``path`` answers, with this process's sandbox for strays."""
    if strays not in (None, *cassette.STRAYS):
        raise ValidationError("strays", f"must be one of {cassette.STRAYS}, got {strays!r}")
    handle, _ = embedded()
    key = handle.api_key
    replayer = cassette.replay(
        path,
        sandbox_url=handle.url,
        sandbox_key=key,
        serve_file=handle.serve_file,
        strays=strays or "sandbox",
    )
    service = replayer.cassette.service
    client = Client(key, service, sandbox=handle, **options)
    replayer.serve(client.transport)
    client.replaying = replayer
    if not quiet:
        print(
            f"dubkit: replaying {Path(path).name}, recorded from {origin_of(service)}; "
            f"calls it lacks go to "
            f"{'the local sandbox' if client.replaying.strays == 'sandbox' else 'an error'}."
        )
    return client


def _connected(
    api_key: str | None, base_url: str | None, quiet: bool, options: dict[str, Any]
) -> Client:
    key, url, handle = _where(api_key, base_url, quiet)
    return Client(key, url, sandbox=handle, **options)


def _where(
    api_key: str | None, base_url: str | None, quiet: bool
) -> tuple[str, str, SandboxHandle | None]:
    """The key, the base URL and the sandbox (None for the service) ``connect`` chose."""
    url_field = "base_url" if base_url else "DUBKIT_BASE_URL"
    api_key = api_key or os.environ.get("DUBKIT_API_KEY") or None
    base_url = base_url or os.environ.get("DUBKIT_BASE_URL") or None
    if base_url:
        base_url = _checked_url(base_url, url_field)
    if api_key:
        if not base_url:
            raise ValidationError(
                "DUBKIT_BASE_URL",
                "is required with an API key (or pass "
                "base_url=): the service's host is "
                "configuration",
            )
        return api_key, base_url, None
    if base_url:
        handle = SandboxHandle(base_url)
        key = _sandbox_key(handle, url_field)
        note = f"using the dubkit sandbox at {origin_of(handle.url)}"  # no user info
    else:
        handle, note = embedded()
        key = handle.api_key
    if not quiet:
        print(f"dubkit: no DUBKIT_API_KEY set, {note}. Key {mask_key(key)}.")
    return key, handle.url, handle


def _checked_url(url: str, field: str) -> str:
    """An http(s) URL with a host, without the trailing slash; never echoed whole (a query or
    user info may hold a secret)."""
    if not is_web_url(url):
        raise ValidationError(
            field,
            "must be an http(s) URL with a host, like "
            "http://127.0.0.1:8765 (a dubkit sandbox) or the "
            "service's https address",
        )
    parts = urlsplit(url.strip())
    try:
        _ = parts.port  # urlsplit checks the port only when asked
    except ValueError:
        raise ValidationError(
            field,
            f"has a port that is not a number: {parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}",
        ) from None
    return url.strip().rstrip("/")


def _sandbox_key(handle: SandboxHandle, field: str) -> str:
    """The default key of the sandbox at ``handle.url``, or an error that says what is there
    and what to set instead."""
    where = origin_of(handle.url)
    no_key = "no DUBKIT_API_KEY is set, so dubkit.connect() looked for a dubkit sandbox"
    try:
        return handle.api_key
    except APIConnectionError:
        # Refused, unreachable, or no answer in time: nothing usable listens there.
        raise APIConnectionError(
            f"cannot connect to {where} ({field}): nothing answered "
            f"there. For a local sandbox, run `dubkit sandbox --port "
            f"PORT` and point {field} at it; for the service, set "
            f"DUBKIT_API_KEY too"
        ) from None
    except (DubkitError, ValueError, KeyError, TypeError):
        pass  # it answered, but not with a sandbox's default key: find out why below
    if _is_sandbox(handle.url):
        raise ValidationError(
            field,
            (
                f"{no_key} at {where}: one answers there, but its admin token is not available "
                f"here to read its default key. Set DUBKIT_SANDBOX_ADMIN_TOKEN to the contents "
                f"of the admin-token file in its data dir (`dubkit sandbox` prints where), or "
                f"set DUBKIT_API_KEY to one of its keys"
            ),
        )
    raise ValidationError(
        field,
        (
            f"{no_key} at {where}, but what answers there is not a dubkit sandbox. To use the "
            f"service at that address, set DUBKIT_API_KEY; for a local sandbox, run "
            f"`dubkit sandbox --port PORT` and point {field} at it"
        ),
    )


def _is_sandbox(url: str) -> bool:
    """Whether a dubkit sandbox answers at ``url`` (its contract document needs no token)."""
    probe = Transport(
        None, url, timeout=Timeout(connect=5, read=10), retry=RetryPolicy(max_retries=0)
    )
    try:
        return "openapi" in probe.send("GET", f"{url}/_sandbox/openapi.json").json()
    except (DubkitError, ValueError, TypeError):
        return False
    finally:
        probe.close()


# --------------------------------------------------------------------------- the async client


class AsyncClient(_Common):
    """The client for asyncio code (FastAPI, a notebook's top-level ``await``): the same
    calls under the same names, awaited, on one :class:`~dubkit._transport.AsyncTransport`
    (httpx). Every call is checked before the network as the sync client's is, with the same
    retries, idempotency keys, typed errors, quotes and budget; results are the same objects
    with the same views and players.

    >>> client = await dubkit.connect_async()
    >>> speech = await client.tts.create(["Hello there!"], voice="sv_s1_en_us_clear_f")
    >>> task = await client.translate.create_async(["Hi"], source="en-US", target="fr-FR")
    >>> await task.wait()

    ``tts``, ``translate``, ``voices`` and ``tasks`` await the sync client's plans on the
    event loop; ``materials``, ``clones`` and ``dubbing`` (file and media work as much as
    HTTP) run the sync client's calls in a worker thread. Any operation by name: :meth:`call`.
    """

    _transport: AsyncTransport

    def __init__(
        self,
        api_key: str,
        base_url: str,
        *,
        timeout: Timeout | None = None,
        retry: RetryPolicy | None = None,
        sandbox: SandboxHandle | None = None,
        budget: float | None = None,
    ) -> None:
        transport = self._transport = AsyncTransport(
            api_key, base_url, timeout=timeout, retry=retry
        )
        self.sandbox = sandbox
        transport.talks_to_sandbox = sandbox is not None
        # Uploads, clones and dubs are the sync client's calls run off the loop, on a twin
        # over the same place with the same budget (which prices dubs by their materials).
        twin = self._twin = Client._over(transport.blocking, sandbox, budget)
        transport.budget = twin.budget
        # The Async resources hand their plans to this transport (Resource types the sync one).
        self.tasks = AsyncTasksResource(transport)  # type: ignore[arg-type]
        self.voices = AsyncVoicesResource(transport)
        self.translate = AsyncTranslateResource(transport)  # type: ignore[arg-type]
        self.materials = AsyncMaterialsResource(transport, twin.materials)
        self.tts = AsyncTTSResource(transport, self.voices, twin.materials)  # type: ignore[arg-type]
        self.clones = AsyncCloneResource(transport, twin.clones)
        self.dubbing = AsyncDubbingResource(transport, twin.dubbing)

    def __repr__(self) -> str:
        where = "sandbox" if self.sandbox is not None else "service"
        return (
            f"AsyncClient({where}, base_url={self.base_url!r}, "
            f"api_key={self._transport.masked_key!r})"
        )

    @property
    def transport(self) -> AsyncTransport:
        """The one async transport every call of this client goes through."""
        return self._transport

    @property
    def blocking(self) -> Client:
        """This client's sync twin: the same place, key and budget, for code that calls from
        threads of its own (the widgets: ``dubkit.VoiceBrowser(client)`` takes either)."""
        return self._twin

    async def call(
        self,
        name: str,
        payload: Any = None,
        *,
        idempotency_key: str | None = None,
        deadline: float | None = None,
    ) -> Any:
        """Validate ``payload`` against operation ``name`` and send it; the envelope's data."""
        return await self._transport.call(
            name, payload, idempotency_key=idempotency_key, deadline=deadline
        )

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """Send any call as is (see :meth:`Client.request`); the envelope's ``data``."""
        op = OPERATIONS_BY_PATH.get((method.upper(), self._transport.api_path(path)))
        return await self._transport.request(
            method,
            path,
            params=params,
            body=json,
            idempotency_key=idempotency_key,
            read=is_read(op) if op else None,
        )

    async def aclose(self) -> None:
        """Close the client's connections (``async with`` does it)."""
        await self._transport.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


async def connect_async(
    api_key: str | None = None, base_url: str | None = None, *, quiet: bool = False, **options: Any
) -> AsyncClient:
    """A ready :class:`AsyncClient`, chosen as :func:`connect` chooses: the service with a key,
    else a sandbox (the embedded one starts in a thread, off the event loop).

    >>> client = await dubkit.connect_async()
    """
    for name in ("DUBKIT_RECORD", "DUBKIT_REPLAY"):
        if os.environ.get(name):
            raise ValidationError(
                name, "cassettes record and replay the sync client: use dubkit.connect()"
            )
    key, url, handle = await asyncio.to_thread(_where, api_key, base_url, quiet)
    return AsyncClient(key, url, sandbox=handle, **options)


__all__ = ["Client", "connect", "AsyncClient", "connect_async"]


def _upload_progress(name: str) -> Callable[[UploadProgress], None]:
    """The upload bar (a widget in notebooks), loaded when an upload first shows one."""
    from .widgets.uploads import upload_progress

    return upload_progress(name)
