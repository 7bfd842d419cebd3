"""Where a player's browser gets the media, wherever that browser is.

The sandbox serves its files on the kernel machine's loopback (``http://127.0.0.1:PORT/files/``).
On Binder, JupyterHub or any remote Jupyter the browser is on another machine and cannot reach
that address. Per kind of media:

* **Service URLs** (https, a CDN) are used as they are: every browser reaches them.
* **Short audio a result holds** (a TTS line, a dubbed line, a take, a reference recording up to
  :data:`EMBED_LIMIT` bytes, fetched when the result was made) is embedded as a ``data:`` URI. It plays in any browser, and a
  saved notebook still plays it on GitHub or nbviewer with no kernel and no sandbox.
* **Everything else on loopback** (video, long audio, catalogue previews that load only when
  played) goes through the Jupyter server that serves the notebook: jupyter-server-proxy's
  ``/proxy/PORT/`` (to the server's own loopback) below the server's base URL (``JUPYTERHUB_SERVICE_PREFIX`` on a
  hub or Binder). That is the one address a remote browser shares with the kernel; big files
  stream from the server (seeking works: Range requests pass through) and stay out of the
  notebook file and the kernel's websocket. A saved notebook keeps a video's poster frame and
  facts; the stream itself needs the live sandbox.
* **Outside a Jupyter server** (a script, a local webview, Voila without the proxy) loopback URLs
  stay as they are: there the browser is on the kernel's machine.

``DUBKIT_JUPYTER_PROXY=0|1`` forces the proxy off or on; ``DUBKIT_JUPYTER_BASE_URL`` names the
server's base URL when it is neither ``/`` nor a hub's prefix.
"""

from __future__ import annotations

import base64
import importlib.util
import os
from urllib.parse import urlsplit

EMBED_LIMIT = 1_500_000  # bytes; about a minute of compressed speech, 30 s of WAV
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def is_loopback(url: str | None) -> bool:
    """True for an ``http(s)://127.0.0.1:…`` (or localhost) URL: the local sandbox's files."""
    if not url or url.startswith("data:"):
        return False
    return (urlsplit(url).hostname or "") in _LOOPBACK


def proxy_prefix() -> str | None:
    """The Jupyter server's base URL when loopback media should go through its proxy, else None."""
    forced = os.environ.get("DUBKIT_JUPYTER_PROXY")
    under_server = bool(
        os.environ.get("JPY_SESSION_NAME")  # a Jupyter server's kernel
        or os.environ.get("JUPYTERHUB_SERVICE_PREFIX")
    )
    if forced == "0" or (
        forced != "1" and not (under_server and importlib.util.find_spec("jupyter_server_proxy"))
    ):
        return None
    base = (
        os.environ.get("DUBKIT_JUPYTER_BASE_URL")
        or os.environ.get("JUPYTERHUB_SERVICE_PREFIX")
        or "/"
    )
    return base if base.endswith("/") else base + "/"


def browser_url(url: str) -> str:
    """The URL a browser should load for ``url`` (see the module docstring)."""
    if not is_loopback(url):
        return url
    prefix = proxy_prefix()
    if prefix is None:
        return url
    parts = urlsplit(url)
    query = f"?{parts.query}" if parts.query else ""
    return f"{prefix}proxy/{parts.port}{parts.path}{query}"


def data_uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def embedded(data: bytes | None, mime: str, url: str | None) -> str:
    """Bytes a result already holds, embedded when small; else ``url`` made reachable.

    Views never fetch: a result that wants its media embedded fetches it when it is made.
    """
    if data is not None and len(data) <= EMBED_LIMIT:
        return data_uri(data, mime)
    return browser_url(url or "")
