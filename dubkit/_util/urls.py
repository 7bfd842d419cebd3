"""What counts as a URL dubkit may send a request to."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit


def is_web_url(url: Any) -> bool:
    """Whether ``url`` is an absolute http(s) URL with a host (not a path, ``s3://``, ``''``)."""
    if not isinstance(url, str):
        return False
    parts = urlsplit(url.strip())
    return parts.scheme in ("http", "https") and bool(parts.hostname)
