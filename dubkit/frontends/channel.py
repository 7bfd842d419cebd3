"""The live channel: a view's HTML as a widget that gives each player a source its browser reaches.

>>> LiveHTML(dubbing_html(dub))          # what a result shows where the channel is needed

Each keyed element (:mod:`dubkit.frontends.media`) gets the source its route says
(:mod:`dubkit.frontends.routes`): a ``src`` below the Jupyter server's proxy, Colab's port
proxy asked in the browser, or the bytes over this widget's comm (anywidget: JupyterLab,
Notebook 7, Voila, VS Code, Colab and marimo all render it). The comm sends a file in chunks
of :data:`CHUNK` bytes that the browser asks for, two at a time, at most ``rate`` bytes a
second where a Jupyter server's IOPub limit stands between; the browser plays the whole as a
``blob:`` URL, so seeking works. Where the browser cannot decode AAC or Opus (VS Code's
webview, or any browser whose ``canPlayType`` says no) it is sent a listening copy
(:mod:`dubkit.media.renditions`) instead; the result's file is never changed.

Files are fetched and renditions made on a worker thread, so a long dub never holds up the
kernel; what was fetched is kept (:data:`KEEP_BYTES` at most) for the next view of it.
"""

from __future__ import annotations

import queue
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anywidget
import requests
import traitlets

from ..media.renditions import listenable
from .detect import current
from .display import ShownWithFallback
from .media import keys_in, lookup
from .routes import route

CHUNK = 256 * 1024
KEEP_BYTES = 256 * 1024 * 1024
FETCH_TIMEOUT = (5, 120)  # seconds to connect, to read: files come from this machine or a CDN


@dataclass(frozen=True)
class Action:
    """A control was used: which action, its key (a row's id), its value, the value of every
    named field in the widget at that moment, and the file a file picker held (name, bytes)."""

    name: str
    key: str
    value: Any
    fields: dict[str, Any]
    file: tuple[str, bytes] | None = None

    @classmethod
    def of(cls, content: dict[str, Any], buffers: Any = None) -> Action:
        fields = content.get("fields")
        chosen = None
        if buffers and content.get("file_name"):
            chosen = (str(content["file_name"]), bytes(buffers[0]))
        return cls(
            str(content.get("action")),
            str(content.get("key") or ""),
            content.get("value"),
            dict(fields) if isinstance(fields, dict) else {},
            chosen,
        )


# anywidget types its bundle as a tuple; ours is a dict when there is no metadata (IPython
# and marimo take both).
class LiveHTML(ShownWithFallback, anywidget.AnyWidget):  # type: ignore[misc]
    """HTML whose keyed players, pictures and links get their sources in the browser.

    ``value`` is the HTML; setting it redraws only the parts that changed, so a player that is
    playing and the keyboard focus stay where they are.
    """

    _esm = Path(__file__).with_name("channel.js")
    _css = Path(__file__).with_name("channel.css")
    value = traitlets.Unicode("").tag(sync=True)
    media = traitlets.Dict().tag(sync=True)
    rate = traitlets.Int(0).tag(sync=True)

    def __init__(self, value: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._actions: dict[str, Callable[[Action], object]] = {}
        self.on_msg(self._asked)
        self.observe(lambda change: self._route(change["new"]), names="value")
        self.value = value
        self._route(value)

    def fallback_html(self) -> str:
        return self.value

    def view_bundle(self) -> tuple[dict[str, Any], dict[str, Any]]:
        shown = anywidget.AnyWidget._repr_mimebundle_(self)  # with Colab's widget manager
        data, metadata = shown if isinstance(shown, tuple) else (shown or {}, {})
        return {k: v for k, v in data.items() if k != "text/plain"}, metadata

    def _route(self, page: str) -> None:
        frontend = current()
        self.rate = frontend.rate
        routes = dict(self.media)
        for key in keys_in(page):
            if key not in routes and (found := lookup(key)) is not None:
                routes[key] = route(found, frontend)
        if routes != self.media:
            self.media = routes

    def on_action(self, name: str, handler: Callable[[Action], object]) -> None:
        """Call ``handler`` when a control with ``data-dubkit-action='name'`` is used."""
        self._actions[name] = handler

    def _asked(self, _widget: Any, content: dict[str, Any], buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if content.get("type") == "chunk":
            _serve_later(self, content)
        elif content.get("type") == "action" and (
            act := self._actions.get(str(content.get("action")))
        ):
            # Run as ipywidgets runs a click: in the kernel, between cells.
            act(Action.of(content, buffers))

    def answer(self, content: dict[str, Any]) -> None:
        """Send the chunk the browser asked for (on the server's thread)."""
        key, rendition = str(content.get("key")), bool(content.get("rendition"))
        index = int(content.get("index") or 0)
        reply: dict[str, Any] = {"type": "chunk", "key": key, "rendition": rendition}
        reply["index"] = index
        try:
            data, mime = _FILES.get(key, rendition)
        except Exception as exc:  # the player says why; the kernel carries on
            self.send({**reply, "error": f"{type(exc).__name__}: {exc}"[:300]})
            return
        count = max(1, -(-len(data) // CHUNK))
        part = data[index * CHUNK : (index + 1) * CHUNK]
        meta = {"count": count, "size": len(data), "mime": mime, "chunk": CHUNK}
        self.send({**reply, **meta}, buffers=[part])


class _Files:
    """Bytes fetched for the channel, and their listening copies, kept up to a total size."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, bool], tuple[bytes, str]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, rendition: bool) -> tuple[bytes, str]:
        with self._lock:
            if (found := self._kept.get((key, rendition))) is not None:
                self._kept.move_to_end((key, rendition))
                return found
        media = lookup(key)
        if media is None:
            raise LookupError(
                "this player's file is no longer known to the kernel; re-run the cell"
            )
        data = media.data if media.data is not None else _download(media.url or "")
        made = (data, media.mime)
        if rendition:
            copy = listenable(data, media.mime)
            made = (copy.data, copy.mime)
        with self._lock:
            self._kept[(key, rendition)] = made
            while sum(len(d) for d, _ in self._kept.values()) > KEEP_BYTES and len(self._kept) > 1:
                self._kept.popitem(last=False)
        return made


def _download(url: str) -> bytes:
    """A file a view showed (the sandbox's, or the service's signed URL): no key is sent."""
    answer = requests.get(url, timeout=FETCH_TIMEOUT)
    answer.raise_for_status()
    return answer.content


def _serve_later(widget: LiveHTML, content: dict[str, Any]) -> None:
    """Queue a chunk request for the channel's one worker (started on the first request)."""
    with _STARTING:
        if not _WORKER:
            worker = threading.Thread(target=_serve, name="dubkit-live-channel", daemon=True)
            worker.start()
            _WORKER.append(worker)
    _REQUESTS.put((widget, content))


def _serve() -> None:
    while True:
        widget, content = _REQUESTS.get()
        try:
            widget.answer(content)
        except Exception:  # a closed widget or comm: nothing to answer
            pass


_FILES = _Files()
_REQUESTS: queue.Queue[tuple[LiveHTML, dict[str, Any]]] = queue.Queue()
_STARTING = threading.Lock()
_WORKER: list[threading.Thread] = []
