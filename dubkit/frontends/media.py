"""Media a view shows but does not embed: keyed here, reached by the browser through the channel.

A view writes each player (and picture, and download link) through :func:`element_source`.
What the element gets depends only on what the bytes are, never on the front end:

* bytes the result holds, up to :data:`EMBED_LIMIT`: a ``data:`` URI (plays anywhere, also in
  a saved notebook on GitHub or nbviewer, with no kernel);
* a URL every browser reaches (the service's https files): that URL;
* a file on this machine's loopback (the local sandbox's): no source at all, and a note
  "plays while the notebook runs". Its URL never enters the output, so a saved notebook holds
  no address of the machine that ran it.

Every element also carries a key (``data-dubkit-media``) naming its file in this kernel's
registry, so the live channel (:mod:`dubkit.frontends.channel`) can give it a source the front
end reaches, or a rendition its browser decodes. The registry only holds what dubkit's own
views wrote: a browser can ask for a key, never for an address.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from ..media.mime import codecs_hint

Kind = Literal["audio", "video", "image", "file"]

EMBED_LIMIT = 1_500_000  # bytes; about a minute of compressed speech, 30 s of WAV
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
_KEEP = 4096  # registry entries kept (oldest forgotten first): far more than a page shows
LIVE_NOTE = "plays while the notebook runs"
KEY_ATTRIBUTE = "data-dubkit-media"
_KEYS = re.compile(KEY_ATTRIBUTE + r"='([0-9a-f]{20})'")
_LIVE = re.compile(r"data-dubkit-live='1'")


@dataclass(frozen=True)
class Media:
    """One file a view showed: where it is, and its bytes when the result held them."""

    key: str
    url: str | None
    mime: str
    kind: Kind
    data: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def codecs(self) -> str:
        return codecs_hint(self.mime, self.url or "")


@dataclass(frozen=True)
class Source:
    """What one element gets: its ``src`` in the HTML (``None`` when only the channel can play
    it) and its key for the channel."""

    src: str | None
    media: Media

    @property
    def live(self) -> bool:
        return self.src is None

    def attributes(self, attribute: str = "src") -> str:
        """The element's attributes: its source (when it has one), key and codecs hint."""
        parts = [f"{KEY_ATTRIBUTE}='{self.media.key}'"]
        if self.src is not None:
            parts.insert(0, f"{attribute}='{html.escape(self.src)}'")
        else:
            parts.append("data-dubkit-live='1'")
        if self.media.codecs and self.media.kind in ("audio", "video"):
            parts.append(f"data-dubkit-codecs='{html.escape(self.media.codecs)}'")
        return " ".join(parts)


_registry: OrderedDict[str, Media] = OrderedDict()
_lock = threading.Lock()


def is_loopback(url: str | None) -> bool:
    """True for an ``http(s)://127.0.0.1:…`` (or localhost) URL: the local sandbox's files."""
    if not url or url.startswith("data:"):
        return False
    return (urlsplit(url).hostname or "") in _LOOPBACK


def data_uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def element_source(
    url: str | None, mime: str, *, data: bytes | None = None, kind: Kind = "audio"
) -> Source:
    """The source of an element showing ``url`` (see the module docstring)."""
    if url and url.startswith("data:"):  # embedded already: kept as it is, keyed by its bytes
        header, _, payload = url.partition(",")
        if data is None and header.endswith(";base64"):
            data = base64.b64decode(payload)
        mime = header[5:].split(";")[0] or mime
        return Source(url, register(None, mime, kind=kind, data=data))
    media = register(url, mime, kind=kind, data=data)
    if data is not None and len(data) <= EMBED_LIMIT:
        return Source(data_uri(data, mime), media)
    if url and not is_loopback(url):  # the service's files, or a data: URI made already
        return Source(url, media)
    return Source(None, media)


def register(url: str | None, mime: str, *, kind: Kind, data: bytes | None = None) -> Media:
    """Key ``url`` (or held bytes) for this kernel's channel; the same file, the same key."""
    name = url if url and not url.startswith("data:") else None
    basis = name.encode() if name else b"bytes\0" + hashlib.sha256(data or b"").digest()
    key = hashlib.sha256(basis).hexdigest()[:20]
    with _lock:
        known = _registry.get(key)
        held = data if data is not None else (known.data if known else None)
        media = Media(key, name, mime, kind, held)
        _registry[key] = media
        _registry.move_to_end(key)
        while len(_registry) > _KEEP:
            _registry.popitem(last=False)
    return media


def lookup(key: str) -> Media | None:
    with _lock:
        return _registry.get(key)


def keys_in(page: str) -> list[str]:
    """The media keys an HTML page holds, in order, each once."""
    return list(dict.fromkeys(_KEYS.findall(page)))


def has_live(page: str) -> bool:
    """True when the page shows media only the channel can play."""
    return bool(_LIVE.search(page))
