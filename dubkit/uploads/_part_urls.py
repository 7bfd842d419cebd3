"""Presigned part URLs of a multipart upload, fetched in batches ahead of use."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from .._util.masking import mask_secrets
from .._util.urls import is_web_url
from .._wire import answer_as
from ..errors import UnexpectedAnswerError
from ..schema import PresignParts, PresignPartsAnswer
from .state import UploadState

PRESIGN_BATCH = 100


def presigned(url: str | None, operation: str, answered: dict[str, Any]) -> str:
    """``url`` if it is an absolute http(s) URL to PUT to; else what ``operation`` answered
    cannot upload anything: an :class:`UnexpectedAnswerError` saying so."""
    if not is_web_url(url):
        shown = mask_secrets(url or "")[:60]
        raise UnexpectedAnswerError(
            f"the answer's upload URL {shown!r} is not an absolute http(s) URL",
            operation=operation,
            **answered,
        )
    return url or ""


class PartUrls:
    """Presigned part URLs, fetched in batches ahead of use and again when they expire.

    ``call(op, payload)`` sends an API call (the upload's, which asks again after a lost
    answer); ``missing`` is the order in which parts will be sent.
    """

    def __init__(
        self,
        call: Callable[[str, Any], Any],
        state: UploadState,
        missing: list[int],
        answered: Callable[[], dict[str, Any]],
    ) -> None:
        self._call, self._state, self._order, self._answered = call, state, missing, answered
        self._urls: dict[int, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def get(self, number: int) -> str:
        with self._lock:
            url, expires = self._urls.get(number, ("", 0.0))
            if time.monotonic() < expires:
                return url
            start = self._order.index(number)
            batch = self._order[start : start + PRESIGN_BATCH]
            request = PresignParts(**self._state.ref().model_dump(), part_numbers=batch)
            answer = answer_as(
                PresignPartsAnswer,
                self._call("materials.multipart_presign", request),
                operation="materials.multipart_presign",
                context=self._answered(),
            )
            # Renew a little before the service's expiry, never after it.
            expires = time.monotonic() + float(answer.expires_in_seconds or 3600) * 0.9
            for item in answer.urls:
                if item.part_number is not None and item.url:
                    self._urls[item.part_number] = (item.url, expires)
            if number in self._urls:
                presigned(self._urls[number][0], "materials.multipart_presign", self._answered())
            if number not in self._urls:
                raise UnexpectedAnswerError(
                    f"asked for the URLs of parts {batch[0]}-{batch[-1]}, the answer has none "
                    f"for part {number}",
                    operation="materials.multipart_presign",
                    **self._answered(),
                )
            return self._urls[number][0]

    def forget(self, number: int) -> None:
        with self._lock:
            self._urls.pop(number, None)
