"""Which notebook front end shows this kernel's output, from the marks each one leaves.

plotly's renderer detection is the model: one function reads the marks, in a fixed order, and
a user can force the answer (``DUBKIT_FRONTEND`` or :func:`dubkit.configure`). What each front
end allows (how a player's bytes reach its browser, which codecs it decodes, which widgets it
renders) is a row of :data:`FRONTENDS`; nothing else in dubkit branches on a front end's name.

=========  =======================================================  ========  ============
name       marks                                                    media     codecs
=========  =======================================================  ========  ============
colab      ``google.colab`` imported, or ``COLAB_RELEASE_TAG``      colab     all
vscode     ``__vsc_ipynb_file__`` in the user namespace, or         comm      no AAC/Opus
           ``VSCODE_PID``/``VSCODE_CWD`` (VS Code's webview)
marimo     a marimo runtime is running this code                    comm      all
voila      ``SERVER_SOFTWARE=voila/...`` (Voilà's kernels)          proxy**   all
jupyter    ``JPY_SESSION_NAME`` or ``JUPYTERHUB_SERVICE_PREFIX``    proxy*    all
           (JupyterLab, Notebook 7, JupyterHub, Binder)
plain      none of these: a script, IPython in a terminal,          direct    all
           nbconvert/nbclient, a kernel with no server in front
=========  =======================================================  ========  ============

\\* through the Jupyter server's ``/proxy/PORT/`` below its base URL (read from the server's own
runtime file, found by the kernel's ``JPY_PARENT_PID``; a hub's prefix otherwise) when
jupyter-server-proxy is installed where the kernel runs, else ``direct``: the browser is taken
to be on the kernel's machine.

\\** Voilà inside a Jupyter server (``/voila/render/...``) has that server's proxy; standalone
Voilà (``voila app.ipynb``, ``dubkit studio``) serves no ``/proxy/``, so its players take the
comm path, which reaches a browser on any machine.

Media paths (what :mod:`dubkit.frontends.channel` does with a live player):

* ``proxy``: ``<base_url>proxy/PORT/path`` below the server's base URL, which a remote browser
  shares with the kernel (seeking works: Range requests pass through);
* ``colab``: the port's URL from ``google.colab.kernel.proxyPort(port)``, asked in the browser
  (never ``eval_js`` from the kernel, which blocks it and is absent outside Colab's page);
* ``comm``: the bytes themselves over the widget's comm, in chunks, at a pace the front end's
  output limits allow; the browser plays them from a ``blob:`` URL (seekable once loaded);
* ``direct``: the sandbox's loopback URL as it is.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Literal

MediaPath = Literal["proxy", "colab", "comm", "direct"]
MEDIA_PATHS: tuple[MediaPath, ...] = ("proxy", "colab", "comm", "direct")

# Bytes per second the comm path may send where a Jupyter server stands between the kernel and
# the browser: jupyter_server's IOPub data rate limit is 1,000,000 B/s over 3 s windows (Colab
# has the same limit), and going over it drops output. Kept below it with room for the rest.
SERVER_RATE = 800_000


@dataclass(frozen=True)
class Frontend:
    """One front end and what it allows; :func:`current` says which one runs this kernel."""

    name: str
    label: str
    media: MediaPath
    aac: bool = True  # its browser decodes AAC and Opus (VS Code's webview does not)
    ipywidgets: bool = True  # it renders ipywidgets (marimo renders only anywidget)
    base_url: str = "/"  # the Jupyter server's base URL, for the proxy path
    rate: int = 0  # bytes/s the comm path may send (0: no limit stands in the way)
    forced: str = ""  # what forced it ("DUBKIT_FRONTEND", "configure"), else ""

    def describe(self) -> str:
        """How its players get their bytes, in a few words (a client's repr says it).

        >>> FRONTENDS["vscode"].describe()
        'VS Code, over the widget channel, AAC and Opus as MP3'
        """
        how = {
            "proxy": f"via {self.base_url}proxy/PORT/",
            "colab": "via Colab's port proxy",
            "comm": "over the widget channel",
            "direct": "from the sandbox's own address",
        }[self.media]
        codecs = "" if self.aac else ", AAC and Opus as MP3"
        forced = f" (set by {self.forced})" if self.forced else ""
        return f"{self.label}, {how}{codecs}{forced}"


FRONTENDS: dict[str, Frontend] = {
    f.name: f
    for f in (
        Frontend("jupyter", "Jupyter", "proxy"),
        Frontend("voila", "Voilà", "proxy"),
        Frontend("colab", "Google Colab", "colab", rate=SERVER_RATE),
        Frontend("vscode", "VS Code", "comm", aac=False),
        Frontend("marimo", "marimo", "comm", ipywidgets=False),
        Frontend("plain", "no notebook server", "direct"),
    )
}

_configured: dict[str, str] = {}


def configure(frontend: str | None = None, *, media: str | None = None) -> Frontend:
    """Force the front end, or only the media path, for this process; ``None`` detects again.

    >>> dubkit.configure(frontend="vscode")    # as if in VS Code: comm path, no AAC/Opus
    >>> dubkit.configure(media="comm")         # this front end, bytes over the widget channel
    >>> dubkit.configure()                     # back to detecting (DUBKIT_FRONTEND still counts)
    """
    _check(frontend, media, where="configure")
    _configured.clear()
    chosen = (("frontend", frontend), ("media", media))
    _configured.update({name: value.strip().lower() for name, value in chosen if value})
    return current()


def current() -> Frontend:
    """The front end showing this kernel's output (forced, else detected from its marks)."""
    frontend, forced = _named()
    if frontend.media == "proxy":
        frontend = _through_server(frontend)
    if frontend.name == "voila" and frontend.media == "direct" and not _server_info():
        frontend = replace(frontend, media="comm")  # standalone Voilà: no proxy, any browser
    media, media_forced = _named_media()
    if media:
        frontend = replace(frontend, media=media)
        if media == "proxy":
            frontend = _through_server(frontend, required=True)
    if frontend.media in ("comm", "colab") and (_under_server() or frontend.name == "voila"):
        frontend = replace(frontend, rate=SERVER_RATE)  # its IOPub limit stands in between
    return replace(frontend, forced=", ".join(f for f in (forced, media_forced) if f))


def _named() -> tuple[Frontend, str]:
    """The front end a user forced (and who forced it), else the detected one."""
    if "frontend" in _configured:
        return FRONTENDS[_configured["frontend"]], "configure"
    name = os.environ.get("DUBKIT_FRONTEND", "").strip().lower()
    if name:
        _check(name, None, where="DUBKIT_FRONTEND")
        return FRONTENDS[name], "DUBKIT_FRONTEND"
    return detect(), ""


def _named_media() -> tuple[MediaPath | None, str]:
    """The media path a user forced (and who forced it), if any."""
    if "media" in _configured:
        return _configured["media"], "configure"  # type: ignore[return-value]
    media = os.environ.get("DUBKIT_MEDIA", "").strip().lower()
    if media:
        _check(None, media, where="DUBKIT_MEDIA")
        return media, "DUBKIT_MEDIA"  # type: ignore[return-value]
    if os.environ.get("DUBKIT_JUPYTER_PROXY") == "1":  # the older switch, still honoured
        return "proxy", "DUBKIT_JUPYTER_PROXY"
    return None, ""


def detect() -> Frontend:
    """The front end from its marks alone (see the module's table)."""
    if "google.colab" in sys.modules or os.environ.get("COLAB_RELEASE_TAG"):
        return FRONTENDS["colab"]
    if _user_namespace().get("__vsc_ipynb_file__") or os.environ.get("VSCODE_PID"):
        return FRONTENDS["vscode"]
    if _in_marimo():
        return FRONTENDS["marimo"]
    if in_voila():
        return FRONTENDS["voila"]
    if _under_server():
        return FRONTENDS["jupyter"]
    return FRONTENDS["plain"]


def in_voila() -> bool:
    """Whether this kernel serves a Voilà app (its marks, whatever a user forced)."""
    return os.environ.get("SERVER_SOFTWARE", "").startswith("voila") or any(
        os.environ.get(name) for name in ("VOILA_KERNEL_ID", "VOILA_REQUEST_URL")
    )


def _through_server(frontend: Frontend, *, required: bool = False) -> Frontend:
    """The proxy path with the server's base URL, or ``direct`` where no proxy serves."""
    forced = os.environ.get("DUBKIT_JUPYTER_PROXY")  # the older, finer switch: 0 off, 1 on
    served = _has_server_proxy() and (_under_server() or bool(_server_info()))
    if forced == "0" or (forced != "1" and not required and not served):
        return replace(frontend, media="direct")
    base = (
        os.environ.get("DUBKIT_JUPYTER_BASE_URL")
        or _server_info().get("base_url")
        or os.environ.get("JUPYTERHUB_SERVICE_PREFIX")
        or "/"
    )
    return replace(frontend, media="proxy", base_url=base if base.endswith("/") else base + "/")


def _under_server() -> bool:
    """A Jupyter server's kernel (``JPY_PARENT_PID`` alone is any jupyter_client launch)."""
    return bool(os.environ.get("JPY_SESSION_NAME") or os.environ.get("JUPYTERHUB_SERVICE_PREFIX"))


def _server_info() -> dict[str, Any]:
    """The runtime file of the Jupyter server that started this kernel (``{}`` when none did:
    standalone Voilà writes none, nbclient and scripts have no server)."""
    parent = os.environ.get("JPY_PARENT_PID", "")
    return _server_file(parent) if parent.isdigit() else {}


@cache
def _server_file(pid: str) -> dict[str, Any]:
    try:
        from jupyter_core.paths import jupyter_runtime_dir

        path = os.path.join(jupyter_runtime_dir(), f"jpserver-{pid}.json")
        with open(path, encoding="utf-8") as file:
            info = json.load(file)
        return info if isinstance(info, dict) else {}
    except (ImportError, OSError, ValueError):
        return {}


@cache
def _has_server_proxy() -> bool:
    return importlib.util.find_spec("jupyter_server_proxy") is not None


def _user_namespace() -> dict[str, Any]:
    shell = _shell()
    return getattr(shell, "user_ns", None) or {}


def _shell() -> Any:
    if "IPython" not in sys.modules:  # nothing shows output: do not import IPython to find out
        return None
    from IPython import get_ipython

    return get_ipython()


def _in_marimo() -> bool:
    """A marimo notebook runs this process. marimo says so only on a cell's thread (its
    context is per thread), so a yes is remembered for the threads that refresh task cells."""
    if _marimo_seen:
        return True
    marimo = sys.modules.get("marimo")  # not imported to find out: its import is heavy
    try:
        found = marimo is not None and bool(marimo.running_in_notebook())
    except Exception:  # an old or partial marimo: not a marimo notebook, as far as we know
        return False
    if found:
        _marimo_seen.append(True)
    return found


_marimo_seen: list[bool] = []


def _check(frontend: str | None, media: str | None, *, where: str) -> None:
    if frontend and frontend.lower() not in FRONTENDS:
        raise ValueError(
            f"{where}: frontend={frontend!r} is not a front end dubkit knows; "
            f"use one of {', '.join(FRONTENDS)}"
        )
    if media and media.lower() not in MEDIA_PATHS:
        raise ValueError(
            f"{where}: media={media!r} is not a media path; use one of {', '.join(MEDIA_PATHS)}"
        )
