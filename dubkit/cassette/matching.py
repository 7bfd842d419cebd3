"""What makes two requests the same call, the one rule both recording and replay use.

A request is matched by its method, its URL and its content, never by its order, so cells
run out of order or twice still find their answers. What changes from run to run is left
out, and what proves who sent it is never kept:

* the ``req_id`` query parameter (a fresh trace id per call) and every header (the API key,
  the idempotency key, the user agent);
* ``extraData.dubkitIdempotencyKey``, the idempotency key dubkit echoes into task bodies;
* a file or storage URL's query (a signature that expires): such a URL, requested or sent in
  a body, is known by a token (``u`` + the start of the sha256 of the URL without its query),
  the same for the recorded URL and the one replay serves in its place. A URL in a body that
  no answer gave (a video to dub) keeps a hash of its query: another query is another video;
* a body that is not JSON (an upload's bytes): only its sha256 and size.

An API URL keeps its query (``taskId``...), in sorted order, below the service's base URL.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import requests

from .._util.urls import is_web_url

API_PREFIX = "/openapi/v1"
SCRUBBED_QUERY = frozenset({"req_id"})
ECHOED_KEY = "dubkitIdempotencyKey"
PLACEHOLDER = "dubkit-cassette:"  # an answer's URL as the index stores it: PLACEHOLDER + token


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


def bare(url: str) -> str:
    """``url`` without its query and fragment (where a signature lives)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, "", ""))


def without_query(url: str) -> str:
    """``url`` with its query replaced by a hash of it: still told apart from the same URL
    with another query, but no signature is written down."""
    query = urlsplit(url).query
    if not query:
        return bare(url)
    return f"{bare(url)}?sha256={hashlib.sha256(query.encode()).hexdigest()[:16]}"


def token_of(url: str) -> str:
    """The token a file URL is known by: the same for every query it is signed with."""
    return "u" + hashlib.sha256(bare(url).encode()).hexdigest()[:16]


class Matcher:
    """Canonical requests for a service at ``base_url``; ``known`` maps a URL (bare) to the
    token of a recorded answer's URL it is or stands for (replay's served copies)."""

    def __init__(self, base_url: str, known: Callable[[str], str | None] = lambda url: None):
        self.base_url = bare(base_url).rstrip("/")
        self.known = known

    def is_api(self, url: str) -> bool:
        return bare(url).startswith(self.base_url + API_PREFIX + "/")

    def below_base(self, url: str) -> str:
        """An API URL's path and query below the base URL (what a stray keeps)."""
        parts = urlsplit(url)
        path = parts.path[len(urlsplit(self.base_url).path) :]
        return path + (f"?{parts.query}" if parts.query else "")

    def token(self, url: str) -> str:
        return self.known(bare(url)) or token_of(url)

    def asked(self, request: requests.PreparedRequest) -> dict[str, Any]:
        """:meth:`request` of a request as ``requests`` sends it."""
        return self.request(
            request.method or "GET",
            request.url or "",
            body_bytes(request),
            is_json(request.headers),
        )

    def request(self, method: str, url: str, body: bytes | None, json_body: bool) -> dict[str, Any]:
        """The request as the index shows it (``method``, ``url``, ``body``), minus what
        changes from run to run."""
        if self.is_api(url):
            parts = urlsplit(url)
            query = sorted(
                (k, v)
                for k, v in parse_qsl(parts.query, keep_blank_values=True)
                if k not in SCRUBBED_QUERY
            )
            shown = parts.path[len(urlsplit(self.base_url).path) :]
            shown += f"?{urlencode(query)}" if query else ""
        else:
            shown = PLACEHOLDER + self.token(url)
        return {"method": method.upper(), "url": shown, "body": self._body(body, json_body)}

    def key(self, request: dict[str, Any]) -> str:
        canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()[:24]

    def _body(self, body: bytes | None, json_body: bool) -> Any:
        if not body:
            return None
        if json_body:
            try:
                return self.scrub(json.loads(body))
            except ValueError:
                pass
        return {"sha256": hashlib.sha256(body).hexdigest(), "size": len(body)}

    def scrub(self, value: Any) -> Any:
        """A JSON request body without the echoed idempotency key, its URLs as tokens."""
        if isinstance(value, dict):
            return {k: self.scrub(v) for k, v in value.items() if not (k == ECHOED_KEY)}
        if isinstance(value, list):
            return [self.scrub(v) for v in value]
        if is_web_url(value):
            token = self.known(bare(value))
            return PLACEHOLDER + token if token else without_query(value)
        return value


def urls_in(value: Any) -> list[str]:
    """Every http(s) URL in a JSON value, in order, once each."""
    found: dict[str, None] = {}

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            for v in item.values():
                walk(v)
        elif isinstance(item, list):
            for v in item:
                walk(v)
        elif is_web_url(item):
            found.setdefault(item)

    walk(value)
    return list(found)


def replace_urls(value: Any, replace: Callable[[str], str]) -> Any:
    """``value`` with each string ``replace`` maps: URLs to tokens, or tokens back to URLs."""
    if isinstance(value, dict):
        return {k: replace_urls(v, replace) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_urls(v, replace) for v in value]
    if isinstance(value, str):
        return replace(value)
    return value
