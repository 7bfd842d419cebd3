"""Reference recordings the sandbox is pointed at (refAudio, timbreRefAudio, emoRefAudio).

What the sandbox reads for a reference URL, and what it never reads:

* Its own files (``<sandbox url>/files/...``) are read from disk, resolved inside the files
  directory only: a ``..``, an absolute path or a symlink that leads out of it is refused.
* Any other URL is fetched only when the fetch policy allows it (admin ``POST /_sandbox/fetch``
  ``{remote, schemes, allow}``). By default: ``https`` URLs of public hosts. Loopback, private,
  link-local and other non-public addresses are refused unless ``allow`` names the host (or a
  network such as ``10.0.0.0/8``); the address is checked on the connection actually made, so
  a DNS answer that changes between check and connect does not get through, and so is every
  redirect. ``remote: false`` turns remote fetching off. Downloads stop at
  :data:`MAX_REFERENCE_BYTES` and :data:`FETCH_SECONDS`.
* A refusal is a 400 naming the field that never shows a local path; a URL the sandbox may
  fetch but cannot use (closed port, HTTP error, too large, not audio) gets one and the same
  message, so the answers cannot be used to map the network.

Either way the audio is decoded with ffmpeg, so any container ffmpeg reads will do.
"""

from __future__ import annotations

import hashlib
import ipaddress
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np
import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from ..media import av
from . import catalogue_files
from .backend import Backend
from .service_error import ServiceError

MAX_REFERENCE_BYTES = 50 * 1024 * 1024
FETCH_SECONDS = 30.0
MAX_REDIRECTS = 3
DEFAULT_POLICY: dict[str, Any] = {"remote": True, "schemes": ["https"], "allow": []}


class UnusableAudio(Exception):
    """A reference that cannot be fetched or decoded; the message names the field."""


def fetch_policy(backend: Backend) -> dict[str, Any]:
    return {**DEFAULT_POLICY, **backend.setting("fetch", {})}


def check_reference(backend: Backend, url: str, field: str) -> None:
    """400 before anything is charged when ``url`` is one the sandbox will not read."""
    if _own_file(backend, url) is not None:
        return
    policy = fetch_policy(backend)
    parts = urlsplit(url)
    if not policy["remote"]:
        raise ServiceError(
            400,
            f"invalid request: {field}: this sandbox fetches no remote "
            f"URLs (remote fetching is off); use a file it serves",
        )
    if parts.scheme not in policy["schemes"] or not parts.hostname:
        raise ServiceError(
            400,
            f"invalid request: {field}: must be an "
            f"{' or '.join(policy['schemes'])} URL of a public host, or a "
            f"file this sandbox serves",
        )


def fetch_audio(backend: Backend, url: str, field: str) -> tuple[np.ndarray, int]:
    """Decode a reference recording: the sandbox's own file from disk, others downloaded."""
    own = _own_file(backend, url)
    if own is not None:
        path = _inside(backend.files_dir, own)
        if path is not None:
            catalogue_files.make_if_missing(backend.files_dir, own)
        if path is None or not path.is_file():
            raise UnusableAudio(f"{field}: no such file on this sandbox")
        return _decode(path, field)
    try:
        check_reference(backend, url, field)
    except ServiceError as refusal:
        raise UnusableAudio(refusal.message.removeprefix("invalid request: ")) from None
    with tempfile.NamedTemporaryFile(suffix=Path(urlsplit(url).path).suffix[:10]) as tmp:
        if _download(url, fetch_policy(backend), tmp, MAX_REFERENCE_BYTES) is not None:
            raise UnusableAudio(_UNUSABLE.format(field=field))
        return _decode(Path(tmp.name), field)


def fetch_media(backend: Backend, url: str, field: str, out: Any, limit: int) -> str:
    """Download a file to dub (``source.sourceUrl``) into ``out``, under the same fetch policy
    as references. Unlike a reference, each refusal has its own answer, since each says only
    what the caller can see for itself: a scheme or an address the policy does not allow is a
    400 before any connection is made (the host's addresses are checked first, and again on
    the connection, as for references); over ``limit`` bytes is a 413, cut off as the bytes
    arrive; a URL that cannot be fetched is a 422. Returns the MD5 of the bytes written,
    taken as they are written."""
    out = _Hashing(out)
    own = _own_file(backend, url)
    if own is not None:  # a file this sandbox serves is read from disk, as for references
        path = _inside(backend.files_dir, own)
        if path is None or not path.is_file():
            raise ServiceError(422, f"{field}: no such file on this sandbox")
        if path.stat().st_size > limit:
            raise ServiceError(
                413, f"{field}: the file is over {limit} bytes, the most this sandbox fetches"
            )
        with open(path, "rb") as source:
            shutil.copyfileobj(source, out)
        out.flush()
        return out.md5()
    check_reference(backend, url, field)
    policy = fetch_policy(backend)
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = {
            a[4][0] for a in socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
        }
    except (OSError, UnicodeError):
        raise ServiceError(422, f"{field}: the host {parts.hostname!r} does not resolve") from None
    refused = sorted(
        a for a in addresses if not _allowed(str(a), parts.hostname or "", port, policy)
    )
    if refused:
        raise ServiceError(
            400,
            f"invalid request: {field}: {parts.hostname} is a loopback, private or other "
            f"non-public address ({', '.join(map(str, refused))}), which this sandbox does not "
            f"fetch from unless its fetch policy allows it",
        )
    failure = _download(url, policy, out, limit)
    if failure == "too large":
        raise ServiceError(
            413, f"{field}: the file is over {limit} bytes, the most this sandbox fetches"
        )
    if failure is not None:
        raise ServiceError(422, f"{field}: could not fetch the file ({failure})")
    return out.md5()


class _Hashing:
    """A file-like sink that keeps the MD5 of what passes through it."""

    def __init__(self, out: Any) -> None:
        self._out, self._digest = out, hashlib.md5(usedforsecurity=False)

    def write(self, data: bytes) -> int:
        self._digest.update(data)
        return int(self._out.write(data))

    def flush(self) -> None:
        self._out.flush()

    def md5(self) -> str:
        return self._digest.hexdigest()


_UNUSABLE = (
    "{field}: could not get audio from this URL (unreachable, not allowed by the "
    "sandbox's fetch policy, an HTTP error, too large, or not audio)"
)


def _decode(path: Path, field: str) -> tuple[np.ndarray, int]:
    try:
        return av.decode_audio(path)
    except av.MediaError:
        raise UnusableAudio(_UNUSABLE.format(field=field)) from None


def _own_file(backend: Backend, url: str) -> str | None:
    """The path below ``/files/`` when ``url`` points at this sandbox's files, else None."""
    served = backend.base_url + "/files/"
    if not url.startswith(served):
        return None
    return unquote(urlsplit(url[len(served) - 1 :]).path[1:])


def _inside(root: Path, relpath: str) -> Path | None:
    """``root/relpath`` if it resolves (symlinks followed) to a place inside ``root``."""
    if not relpath or relpath.startswith(("/", "\\")) or "\x00" in relpath:
        return None
    base = root.resolve()
    path = (base / relpath).resolve()
    return path if path.is_relative_to(base) and path != base else None


# --------------------------------------------------------------------------- guarded download


def _download(url: str, policy: dict[str, Any], out: Any, limit: int) -> str | None:
    """Stream ``url`` into ``out`` within ``limit`` bytes and the time cap; None when it came
    whole, else what went wrong ("too large", "HTTP 404", ...)."""
    deadline = time.monotonic() + FETCH_SECONDS
    session = _guarded_session(policy)
    try:
        with session.get(url, stream=True, timeout=(5, 10)) as answer:
            if answer.status_code != 200:
                return f"HTTP {answer.status_code}"
            if int(answer.headers.get("Content-Length") or 0) > limit:
                return "too large"
            size = 0
            for chunk in answer.iter_content(1 << 16):
                size += len(chunk)
                if size > limit:
                    return "too large"
                if time.monotonic() > deadline:
                    return f"not done within {FETCH_SECONDS:g} s"
                out.write(chunk)
        out.flush()
        return None if size > 0 else "empty"
    except (requests.RequestException, OSError, ValueError):
        return "no answer"
    finally:
        session.close()


def _guarded_session(policy: dict[str, Any]) -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # a proxy would hide the address actually reached
    session.max_redirects = MAX_REDIRECTS
    adapter = _GuardedAdapter(policy)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


class _Refused(OSError):
    """The connection reached an address the policy does not allow."""


def _allowed(address: str, host: str, port: int, policy: dict[str, Any]) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if ip.is_global:
        return True
    for entry in policy["allow"]:
        if entry in (host, f"{host}:{port}", address, f"{address}:{port}"):
            return True
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


def _guarded(base: type) -> type:
    class Guarded(base):
        policy: dict[str, Any] = DEFAULT_POLICY

        def _new_conn(self) -> socket.socket:
            # Before connecting (no packet to a forbidden address) and on the socket made
            # (a DNS answer that changed in between does not get through).
            for *_, address in socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM):
                if not _allowed(str(address[0]), self.host, self.port, self.policy):
                    raise _Refused("address not allowed by the sandbox's fetch policy")
            sock = super()._new_conn()
            if not _allowed(sock.getpeername()[0], self.host, self.port, self.policy):
                sock.close()
                raise _Refused("address not allowed by the sandbox's fetch policy")
            return sock

    return Guarded


class _GuardedAdapter(HTTPAdapter):
    """Every connection it opens checks the peer address against the fetch policy."""

    def __init__(self, policy: dict[str, Any]) -> None:
        self._policy = policy
        super().__init__(max_retries=0)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        plain: Any = type(
            "GuardedHTTPPool", (HTTPConnectionPool,), {"ConnectionCls": _guarded(HTTPConnection)}
        )
        tls: Any = type(
            "GuardedHTTPSPool", (HTTPSConnectionPool,), {"ConnectionCls": _guarded(HTTPSConnection)}
        )
        plain.ConnectionCls.policy = tls.ConnectionCls.policy = self._policy
        self.poolmanager.pool_classes_by_scheme = {"http": plain, "https": tls}
