"""How each keyed file reaches this front end's browser, and whether a page needs the channel.

>>> route(media.lookup(key), current())   # {'how': 'src', 'src': '/proxy/8765/files/...'}
>>> needs_channel(html)                     # True: a file only the channel can play here

The one place that turns a front end (:func:`dubkit.frontends.current`) into a source per file;
the channel's module (``channel.js``) only carries the answer out.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from .detect import Frontend, current
from .media import Media, has_live, is_loopback, keys_in, lookup


def route(media: Media, frontend: Frontend) -> dict[str, Any]:
    """How the browser gets one file on this front end (what the channel's module reads)."""
    entry: dict[str, Any] = {"mime": media.mime, "codecs": media.codecs, "kind": media.kind}
    entry["rendition"] = (
        media.kind in ("audio", "video") and not frontend.aac and _aac_or_opus(media.codecs)
    )
    if media.url is None:  # bytes the kernel holds: embedded when small, else sent
        entry["how"] = "comm"
        return entry
    if not is_loopback(media.url):  # the service's URL: every browser reaches it
        entry.update(how="src", src=media.url)
        return entry
    url = urlsplit(media.url)
    path = url.path + (f"?{url.query}" if url.query else "")
    if frontend.media == "proxy":
        entry.update(how="src", src=f"{frontend.base_url}proxy/{url.port}{path}")
    elif frontend.media == "colab":
        entry.update(how="colab", port=url.port, path=path)
    elif frontend.media == "comm":
        entry.update(how="comm")
    else:
        entry.update(how="src", src=media.url)
    return entry


def needs_channel(page: str, frontend: Frontend | None = None) -> bool:
    """True when ``page`` plays only through the channel here: loopback files, or sound this
    front end's browser cannot decode."""
    if has_live(page):
        return True
    frontend = frontend or current()
    if frontend.aac:
        return False
    return any(
        (found := lookup(key)) is not None and route(found, frontend)["rendition"]
        for key in keys_in(page)
    )


def _aac_or_opus(codecs: str) -> bool:
    """Whether a file may hold AAC or Opus: by its hint; with no hint, it may (the kernel reads
    the bytes before sending and sends them unchanged when they have neither)."""
    return not codecs or "mp4a" in codecs or "opus" in codecs
