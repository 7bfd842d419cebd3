"""Recording: a ``requests`` adapter on the client's own session that keeps what came back.

Mounted on the sessions of the clients that record into one cassette (nothing process-wide is
patched). Each answer is kept under its request (see :mod:`dubkit.cassette.matching`); every
URL an answer holds is fetched at once, since service URLs expire, and its bytes stored by
hash, except the user's own files: a material's files (any object with a ``materialId``) and
anything whose bytes are an upload's are known by hash only. Passing failures (429, 5xx) are
not kept: the client retried them, and the lesson is what came after. A failure to write the
cassette never fails the call, which may have been paid: it is logged and listed in the index
under ``problems``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from requests.utils import get_environ_proxies

from .._util import extras_header
from .._util.urls import is_web_url
from ..webhooks.events import WebhookEvent
from .matching import (
    PLACEHOLDER,
    Matcher,
    bare,
    body_bytes,
    is_json,
    replace_urls,
    token_of,
    urls_in,
)
from .store import Cassette

log = logging.getLogger("dubkit")
PASSING = frozenset({429, 500, 502, 503, 504})
KEPT_HEADERS = ("Content-Type", "ETag", "Retry-After")  # nothing that names who asked
FETCHERS = 4  # media fetched side by side when an answer names many (a page of voices)
OWNER_KEY = "materialId"  # an object with it is a material: its files are the user's own


def kept_headers(response: requests.Response) -> dict[str, str]:
    return {name: response.headers[name] for name in KEPT_HEADERS if name in response.headers}


def task_id_of(payload: Any) -> str | None:
    """The task an API answer (envelope) is about, if it names one."""
    data = payload.get("data") if isinstance(payload, dict) else None
    task_id = data.get("taskId") if isinstance(data, dict) else None
    return task_id if isinstance(task_id, str) else None


def owned_urls(value: Any, inside: bool = False) -> set[str]:
    """The URLs of every material in a JSON value (they point at the user's own files)."""
    found: set[str] = set()
    if isinstance(value, dict):
        inside = inside or OWNER_KEY in value
        for item in value.values():
            found |= owned_urls(item, inside)
    elif isinstance(value, list):
        for item in value:
            found |= owned_urls(item, inside)
    elif inside and is_web_url(value):
        found.add(value)
    return found


EARLY_TASKS = 256  # tasks whose events are held for an answer that may still name them


class RecordingAdapter(HTTPAdapter):
    """Sends as usual, then keeps the answer and the media it points to in ``cassette``.
    One per cassette, shared by every client recording into it."""

    def __init__(self, cassette: Cassette, base_url: str, pool_size: int = 16) -> None:
        super().__init__(pool_connections=pool_size, pool_maxsize=pool_size)
        self.cassette = cassette
        self.matcher = Matcher(base_url, known=self._known)
        # What was uploaded, so a file an answer names that is one is not stored: the sha256
        # of each storage PUT's body, and each upload's announced MD5 (``fileHash``, which
        # covers a multipart upload's whole file).
        self._uploaded: set[str] = set()
        self._file_hashes: set[str] = set()
        self.tasks: set[str] = set()  # the tasks these clients' answers named
        # Events for tasks no answer has named yet: a quick task's webhook can reach this
        # process's receiver before its create's answer is read. Kept until an answer names
        # the task; a bounded number of tasks (others' events are never recorded).
        self._early: dict[str, list[WebhookEvent]] = {}
        self._lock = threading.Lock()  # events arrive on the receiver's threads

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        body_bytes(request)  # a streamed upload read now, to be hashed once sent
        response = super().send(request, **kwargs)
        if response.status_code in PASSING or response.is_redirect or self._held(request):
            return response
        try:
            self._keep(request, response, kwargs)
        except (OSError, ValueError) as exc:  # the call went through: never fail it for this
            said = f"{request.method} {bare(request.url or '')}"
            log.warning("dubkit: could not record %s into %s: %s", said, self.cassette.path, exc)
            self.cassette.add_problem(f"not recorded: {said}: {type(exc).__name__}")
        return response

    def _known(self, url: str) -> str | None:
        token = token_of(url)
        return token if self.cassette.url(token) is not None else None

    def _held(self, request: requests.PreparedRequest) -> bool:
        """A download of a file already settled when an answer named it: kept, or the user's
        own (an upload, a material's file), which is never kept."""
        url = request.url or ""
        if request.method != "GET" or self.matcher.is_api(url):
            return False
        known = self.cassette.url(token_of(url))
        return bool(known and (known["media"] or known.get("owned") or known.get("upload")))

    def _keep(
        self, request: requests.PreparedRequest, response: requests.Response, sent: dict[str, Any]
    ) -> None:
        url = request.url or ""
        self._note_upload(request)
        answer: dict[str, Any] = {"status": response.status_code, "headers": kept_headers(response)}
        payload = None
        if is_json(response.headers):
            try:
                payload = response.json()
            except ValueError:
                payload = None
        if payload is not None:
            overlay = extras_header.decode(response.headers.get(extras_header.HEADER))
            self._fetch_media(payload, sent)
            self._fetch_media(overlay, sent)
            answer["json"] = replace_urls(payload, self._placeholder)
            if overlay is not None:
                answer["extras"] = replace_urls(overlay, self._placeholder)
            if task := task_id_of(payload):
                with self._lock:
                    self.tasks.add(task)
                    early = self._early.pop(task, [])
                for event in early:
                    self._add_event(event)
        elif response.content:
            media_type = response.headers.get("Content-Type", "application/octet-stream")
            answer["media"] = self.cassette.put_media(response.content, media_type)
            if request.method == "GET" and response.status_code == 200:
                self.cassette.add_url(token_of(url), bare(url), answer["media"])
        # The request is shown once its answer's URLs are known, so a URL it sends that an
        # earlier answer gave (a TTS result as a reference) is matched by that token.
        asked = self.matcher.asked(request)
        self.cassette.add_answer(self.matcher.key(asked), asked, answer)

    def keep_event(self, event: WebhookEvent) -> None:
        """Keep a webhook event a receiver in this process accepted for a task these clients
        made (a push listener), with the media it names, so replay can push it again."""
        if not event.task_id:
            return
        with self._lock:
            if event.task_id not in self.tasks:
                self._early.setdefault(event.task_id, []).append(event)
                while len(self._early) > EARLY_TASKS:
                    del self._early[next(iter(self._early))]  # the oldest task's
                return
        self._add_event(event)

    def _add_event(self, event: WebhookEvent) -> None:
        assert event.task_id is not None
        body = event.to_wire()
        try:
            self._fetch_media(body, {})
            self.cassette.add_event(event.task_id, replace_urls(body, self._placeholder))
        except (OSError, ValueError) as exc:
            log.warning("dubkit: could not record an event of task %s: %s", event.task_id, exc)
            self.cassette.add_problem(f"event not recorded: task {event.task_id}")

    def _note_upload(self, request: requests.PreparedRequest) -> None:
        body = body_bytes(request)
        if not body:
            return
        if request.method == "PUT" and not self.matcher.is_api(request.url or ""):
            self._uploaded.add(hashlib.sha256(body).hexdigest())
        elif is_json(request.headers) and b'"fileHash"' in body:
            try:
                said = json.loads(body).get("fileHash")
            except (ValueError, AttributeError):
                return
            if isinstance(said, str):
                self._file_hashes.add(said.lower())

    def _placeholder(self, value: str) -> str:
        token = self._known(value)
        return PLACEHOLDER + token if token else value

    def _fetch_media(self, value: Any, sent: dict[str, Any]) -> None:
        """Fetch each new URL in ``value`` (with its signed query, never the API key) and
        keep its bytes, but the user's own files' (known by hash); an API URL or one that
        does not answer 200 is kept as a URL only."""
        owned = owned_urls(value)
        new = [u for u in urls_in(value) if self.cassette.url(token_of(u)) is None]
        if not new:
            return
        with ThreadPoolExecutor(min(FETCHERS, len(new))) as pool:
            list(pool.map(lambda u: self._fetch_one(u, u in owned, sent), new))

    def _fetch_one(self, url: str, owned: bool, sent: dict[str, Any]) -> None:
        digest, upload = None, None
        if not self.matcher.is_api(url):
            fetch = requests.Request("GET", url).prepare()  # a bare request: no session auth
            try:
                got = super().send(
                    fetch,
                    timeout=sent.get("timeout") or 60,
                    verify=sent.get("verify", True),
                    cert=sent.get("cert"),
                    proxies=get_environ_proxies(url),  # as the client would reach that host
                )
                if got.status_code == 200:
                    kind = got.headers.get("Content-Type", "application/octet-stream")
                    sha = hashlib.sha256(got.content).hexdigest()
                    md5 = hashlib.md5(got.content).hexdigest()  # noqa: S324 - the service's
                    if sha in self._uploaded or md5 in self._file_hashes:
                        upload = {"sha256": sha, "type": kind}  # the upload itself: by hash
                    elif not owned:
                        digest = self.cassette.put_media(got.content, kind)
            except requests.RequestException as exc:
                log.warning("dubkit: could not record the file an answer named: %s", exc)
        self.cassette.add_url(token_of(url), bare(url), digest, upload, owned=owned)
