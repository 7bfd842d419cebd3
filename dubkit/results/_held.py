"""Media a result keeps in memory so its views can embed them without fetching.

Only the local sandbox's files (loopback URLs) are fetched, and only the first few: a remote
browser cannot reach them, while it reaches the service's URLs itself. A failed fetch is not an
error: the view falls back to the URL.
"""

from __future__ import annotations

from collections.abc import Iterable

from .._transport import Transport
from ..errors import DubkitError
from ..frontends.media import is_loopback

PREFETCH = 20  # as many clips as a speech table shows


def fetch_held(
    transport: Transport, urls: Iterable[str | None], limit: int = PREFETCH
) -> dict[str, bytes]:
    """The bytes of the first ``limit`` distinct loopback URLs among ``urls``."""
    held: dict[str, bytes] = {}
    for url in urls:
        if len(held) >= limit:
            break
        if url and url not in held and is_loopback(url):
            try:
                held[url] = transport.download(url)
            except DubkitError:
                continue
    return held
