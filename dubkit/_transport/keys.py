"""The secrets a request carries, and the idempotency key every changing call carries."""

from __future__ import annotations

import os
import random
from typing import Any

import requests

from ..errors import ValidationError
from ..schema import MAX_IDEMPOTENCY_KEY

# Request ids and idempotency keys need to be unique, not secret: 128 bits from a generator of
# dubkit's own, seeded from the OS and seeded afresh in a forked child (which would otherwise
# repeat its parent's keys), rather than a uuid4's system call per id, twice a call. Its own,
# because a notebook's ``random.seed(0)`` must never make a rerun repeat a key the service
# already took (it would answer the first run's task instead of starting one).
_ids = random.Random()
os.register_at_fork(after_in_child=_ids.seed)


def new_id() -> str:
    """32 hex digits, unique across calls, processes and machines (a ``uuid4().hex``'s shape)."""
    return f"{_ids.getrandbits(128):032x}"


def new_idempotency_key() -> str:
    return f"dk-{new_id()}"


def check_idempotency_key(key: str) -> str:
    if not isinstance(key, str) or not key.strip():
        raise ValidationError("X-Idempotency-Key", "must be a non-empty string")
    if len(key) > MAX_IDEMPOTENCY_KEY:
        raise ValidationError(
            "X-Idempotency-Key", f"at most {MAX_IDEMPOTENCY_KEY} characters, got {len(key)}"
        )
    if not key.isprintable() or key[0].isspace():
        # A header cannot carry them: requests would fail mid-call instead of here.
        raise ValidationError(
            "X-Idempotency-Key", "must not start with whitespace or contain control characters"
        )
    return key


def check_api_key(api_key: Any, field: str = "api_key") -> str:
    """The key as given, or a ValidationError that never quotes it (it is a secret)."""
    if not isinstance(api_key, str) or not api_key:
        raise ValidationError(field, "an API key (a non-empty string) is required")
    for position, char in enumerate(api_key):
        if not "!" <= char <= "~":  # visible ASCII only: what an HTTP header carries intact
            kind = (
                "whitespace"
                if char.isspace()
                else "a control character"
                if not char.isprintable()
                else "a non-ASCII character"
            )
            raise ValidationError(
                field,
                (
                    f"contains {kind} (U+{ord(char):04X}) at position {position + 1} of "
                    f"{len(api_key)}; a key read from a file often ends with a newline: strip it"
                ),
            )
    return api_key


def in_scope(url: str, scope: str) -> bool:
    """Whether ``url`` is below ``scope`` (a URL prefix): where a secret may go."""
    scope = scope.rstrip("/")
    return url == scope or url.startswith((scope + "/", scope + "?"))


class SecretHeader(requests.auth.AuthBase):
    """Puts a secret in one header, and only on requests below ``scope`` (a URL prefix).

    The session also downloads files and PUTs to storage, whose URLs may sit on the same host
    (the sandbox serves both): they never get the secret.
    """

    def __init__(self, header: str, value: str, scope: str) -> None:
        self.header, self._value, self.scope = header, value, scope.rstrip("/")

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        if in_scope(request.url or "", self.scope):
            request.headers[self.header] = self._value
        return request
