"""Recording: a ``requests`` adapter on the client's own session that keeps what came back.

Mounted on one Transport's session (nothing process-wide is patched, other sessions and
threads are untouched). Each answer is kept under its request (see
:mod:`dubkit.cassette.matching`); every URL an answer holds is fetched at once, since service
URLs expire, and its bytes stored by hash. Passing failures (429, 5xx) are not kept: the
client retried them, and the lesson is what came after.
"""

from __future__ import annotations

import hashlib
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from .._util import extras_header
from ..webhooks.events import WebhookEvent
from .matching import PLACEHOLDER, Matcher, bare, replace_urls, token_of, urls_in
from .store import Cassette

log = logging.getLogger("dubkit")
PASSING = frozenset({429, 500, 502, 503, 504})
KEPT_HEADERS = ("Content-Type", "ETag", "Retry-After")  # nothing that names who asked
FETCHERS = 4  # media fetched side by side when an answer names many (a page of voices)


def kept_headers(response: requests.Response) -> dict[str, str]:
    return {name: response.headers[name] for name in KEPT_HEADERS if name in response.headers}


def body_bytes(request: requests.PreparedRequest) -> bytes | None:
    """The request's body as bytes; a streamed one (an upload's file slice) is read here once
    and put back as bytes, so it can be hashed and still sent."""
    body: Any = request.body
    if hasattr(body, "read"):
        chunks = []
        while chunk := body.read(1 << 20):
            chunks.append(chunk)
        request.body = body = b"".join(chunks)
    if isinstance(body, str):
        return body.encode("utf-8")
    return body if isinstance(body, bytes) else None


def is_json(headers: Any) -> bool:
    return "json" in (headers.get("Content-Type") or "").lower()


class RecordingAdapter(HTTPAdapter):
    """Sends as usual, then keeps the answer and the media it points to in ``cassette``."""

    def __init__(self, cassette: Cassette, matcher: Matcher, pool_size: int = 16) -> None:
        super().__init__(pool_connections=pool_size, pool_maxsize=pool_size)
        self.cassette = cassette
        self.matcher = matcher
        # What was uploaded, so a file an answer names that is one is not stored: the sha256
        # of each storage PUT's body, and each upload's announced MD5 (``fileHash``, which
        # covers a multipart upload's whole file).
        self._uploaded: set[str] = set()
        self._file_hashes: set[str] = set()

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        body_bytes(request)  # a streamed upload read now, to be hashed once sent
        response = super().send(request, **kwargs)
        if response.status_code not in PASSING and not response.is_redirect:
            if not self._held(request):
                self._keep(request, response, kwargs.get("timeout"))
        return response

    def _held(self, request: requests.PreparedRequest) -> bool:
        """A download of a file already kept (fetched when an answer named it)."""
        url = request.url or ""
        if request.method != "GET" or self.matcher.is_api(url):
            return False
        known = self.cassette.url(token_of(url))
        return bool(known and known["media"])

    def _keep(
        self, request: requests.PreparedRequest, response: requests.Response, timeout: Any
    ) -> None:
        url = request.url or ""
        self._note_upload(request)
        asked = self.matcher.request(
            request.method or "GET", url, body_bytes(request), is_json(request.headers)
        )
        answer: dict[str, Any] = {"status": response.status_code, "headers": kept_headers(response)}
        if is_json(response.headers):
            try:
                payload = response.json()
            except ValueError:
                payload = None
        else:
            payload = None
        if payload is not None:
            overlay = extras_header.decode(response.headers.get(extras_header.HEADER))
            self._fetch_media(urls_in(payload) + urls_in(overlay), timeout)
            answer["json"] = replace_urls(payload, self._placeholder)
            if overlay is not None:
                answer["extras"] = replace_urls(overlay, self._placeholder)
        elif response.content:
            media_type = response.headers.get("Content-Type", "application/octet-stream")
            digest = self.cassette.put_media(response.content, media_type)
            answer["media"] = digest
            if request.method == "GET" and response.status_code == 200:
                self.cassette.add_url(token_of(url), bare(url), digest)
        self.cassette.add_answer(self.matcher.key(asked), asked, answer)

    def keep_event(self, event: WebhookEvent) -> None:
        """Keep a webhook event a receiver in this process accepted (a push listener), with
        the media it names, so replay can push it to task cells again."""
        if not event.task_id:
            return
        body = event.to_wire()
        self._fetch_media(urls_in(body), None)
        self.cassette.add_event(event.task_id, replace_urls(body, self._placeholder))

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
        return PLACEHOLDER + token_of(value) if self.cassette.url(token_of(value)) else value

    def _fetch_media(self, urls: list[str], timeout: Any) -> None:
        """Fetch each new URL (with its signed query, never the API key) and keep its bytes;
        an API URL or one that does not answer 200 is kept as a URL only."""
        new = [u for u in urls if self.cassette.url(token_of(u)) is None]
        if not new:
            return
        with ThreadPoolExecutor(min(FETCHERS, len(new))) as pool:
            list(pool.map(lambda u: self._fetch_one(u, timeout), new))

    def _fetch_one(self, url: str, timeout: Any) -> None:
        digest, upload = None, None
        if not self.matcher.is_api(url):
            fetch = requests.Request("GET", url).prepare()  # a bare request: no session auth
            try:
                got = super().send(fetch, timeout=timeout or 60)
                if got.status_code == 200:
                    kind = got.headers.get("Content-Type", "application/octet-stream")
                    sha = hashlib.sha256(got.content).hexdigest()
                    if sha in self._uploaded or (
                        hashlib.md5(got.content).hexdigest() in self._file_hashes  # noqa: S324
                    ):
                        upload = {"sha256": sha, "type": kind}  # the user's own file: not kept
                    else:
                        digest = self.cassette.put_media(got.content, kind)
            except requests.RequestException as exc:
                log.warning("dubkit: could not record the file an answer named: %s", exc)
        self.cassette.add_url(token_of(url), bare(url), digest, upload)
