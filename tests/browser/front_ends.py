"""Front ends for the browser suite: the ones that run here for real, and faithful stand-ins for
the two that cannot (Google Colab, VS Code).

Real: Notebook 7 (``jupyter notebook``), standalone Voila, marimo (``marimo run`` of the
notebook as ``marimo convert`` makes it) and a static HTML export (nbconvert, opened with no
network).

Emulated, from the documented facts (``shared/frontends.md``):

* **Colab**: a kernel with Colab's marks (``google.colab`` imported from the start, a stand-in
  package; ``COLAB_RELEASE_TAG``) and no Jupyter server's environment, in a venv that has
  ipywidgets 7.7.1 as Colab does; a browser that reaches no kernel port and no ``/proxy/``,
  whose only way to a kernel port is ``google.colab.kernel.proxyPort(port)``, answered by
  :class:`ColabProxy` (a stand-in for Colab's ``*-colab.googleusercontent.com`` proxy).
  The page around the outputs is JupyterLab's, so core ipywidgets 7 controls do not draw (its
  widget manager speaks ipywidgets 8); Colab's own manager draws them.
* **VS Code**: a kernel with VS Code's marks (``VSCODE_PID``, ``__vsc_ipynb_file__``) and no
  Jupyter server's environment; a browser that reaches no kernel port and no ``/proxy/``, with
  no IOPub rate limit in the way (VS Code talks to its kernels directly), and a media stack
  that answers ``canPlayType`` "no" for AAC and Opus. The emulation cannot make Chromium's
  decoder silent for AAC as VS Code's is, so each player's bytes are read back and probed
  with ffmpeg instead: none may hold AAC or Opus.
"""

from __future__ import annotations

import base64
import http.client
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests
from jupyter_servers import REPO, KernelSpec, Server, free_port, spawn, wait_until_up
from page_checks import DEEP, loopback_except, refuse

MARKS = Path(__file__).with_name("front_end_marks")

# Colab's page: the one way to a kernel port, resolved in the browser.
COLAB_PAGE = """(proxy) => {
    window.google = window.google || {};
    window.google.colab = {kernel: {accessAllowed: true,
        proxyPort: (port, options) => Promise.resolve(`http://127.0.0.1:${proxy}/${port}/`)}};
}"""

# VS Code's webview: no AAC, no Opus (it plays H.264, VP8, MP3, Vorbis, FLAC and PCM WAV).
VSCODE_PAGE = """() => {
    const refused = (type) => /mp4a\\.40|mp4a\\.67|opus|audio\\/aac|audio\\/x-m4a/i.test(type || '');
    const can = HTMLMediaElement.prototype.canPlayType;
    HTMLMediaElement.prototype.canPlayType = function (type) {
        return refused(type) ? '' : can.call(this, type); };
    if (window.MediaSource) {
        const is = MediaSource.isTypeSupported.bind(MediaSource);
        MediaSource.isTypeSupported = (type) => !refused(type) && is(type);
    }
}"""

# Every player's bytes as the browser has them: a data: URI, a blob: URL or the page's own
# server's URL read in the page, another origin's URL (Colab's proxy) read again from here (a
# page may not fetch another origin's files).
PLAYED_BYTES = f"""async (sel) => {{
    const out = [];
    for (const el of ({DEEP})(document, sel)) {{
        const src = el.currentSrc || el.src || '';
        const here = src.startsWith('blob:') || src.startsWith('data:')
            || (src && new URL(src).origin === location.origin);
        if (!here) {{ out.push({{src, data: null}}); continue; }}
        const bytes = new Uint8Array(await (await fetch(src)).arrayBuffer());
        let text = '';
        for (let i = 0; i < bytes.length; i += 0x8000)
            text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
        out.push({{src: src.slice(0, 60), data: btoa(text)}});
    }}
    return out;
}}"""


def played_bytes(page, selector: str) -> list[tuple[str, bytes]]:
    """(where from, bytes) of each player matching ``selector``."""
    found = []
    for item in page.evaluate(PLAYED_BYTES, selector):
        if item["data"] is not None:
            found.append((item["src"], base64.b64decode(item["data"])))
        elif item["src"]:
            got = requests.get(item["src"], timeout=60)
            got.raise_for_status()
            found.append((item["src"][:60], got.content))
        else:
            found.append(("", b""))
    return found


def init_page(page, script: str, arg: object = None) -> None:
    """Run ``script`` in every frame of ``page`` before its own scripts (a front end's page)."""
    page.add_init_script(f"({script})({'' if arg is None else repr(arg)})")


def block_proxy_paths(page, allowed: set[int]) -> list[str]:
    """A browser with no way to a kernel port but the ones ``allowed``, and no ``/proxy/``:
    Colab's and VS Code's, which have no Jupyter server in front of their kernels."""

    def refused(url: str) -> bool:
        parts = url.split("/", 3)
        host = parts[2] if len(parts) > 2 else ""
        port = int(host.rsplit(":", 1)[1]) if ":" in host else 80
        local = host.startswith(("127.0.0.1", "localhost", "[::1]"))
        return (local and port not in allowed) or "/proxy/" in url

    return refuse(page, f"{loopback_except(allowed)}|/proxy/", refused)


class ColabProxy:
    """Colab's port proxy, standing in: ``http://127.0.0.1:<its port>/<kernel port>/<path>``
    is that kernel port's ``/<path>``, Range requests passed through. Counts what it served."""

    def __init__(self) -> None:
        self.served: Counter[int] = Counter()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server name
                proxy.forward(self)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def forward(self, request: BaseHTTPRequestHandler) -> None:
        _, port, rest = request.path.split("/", 2)
        headers = {k: v for k, v in request.headers.items() if k.lower() in ("range", "accept")}
        upstream = http.client.HTTPConnection("127.0.0.1", int(port), timeout=60)
        upstream.request("GET", "/" + rest, headers=headers)
        answer = upstream.getresponse()
        request.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() in ("content-type", "content-length", "content-range", "accept-ranges"):
                request.send_header(name, value)
        request.end_headers()
        while chunk := answer.read(1 << 16):
            request.wfile.write(chunk)
        upstream.close()
        self.served[int(port)] += 1

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def colab_kernel(python: str) -> KernelSpec:
    return KernelSpec(
        python=python,
        module="colab_kernel",
        env=(("PYTHONPATH", str(MARKS)), ("COLAB_RELEASE_TAG", "release-colab-emulated")),
    )


def vscode_kernel() -> KernelSpec:
    return KernelSpec(
        module="vscode_kernel",
        env=(("PYTHONPATH", str(MARKS)), ("VSCODE_PID", "4242"), ("VSCODE_CWD", "/home/student")),
    )


def colab_venv(folder: Path) -> Path:
    """A venv as Colab's: a full set of preinstalled packages with ipywidgets 7.7.1 among
    them, then dubkit installed beside it the way its first-cell recipe says. Its Python.

    The preinstalled set is this test environment's, seen through a ``.pth`` after the venv's
    own packages (Colab too has numpy, pandas, requests, pydantic... before the first cell), so
    pip resolves dubkit against a full environment rather than downloading it all again: what
    it installs into the venv, and whether it keeps 7.7.1, is pip's own verdict."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(own, "preinstalled.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "ipywidgets==7.7.1"], check=True)
    subprocess.run([*pip, "-e", str(REPO)], check=True)
    return python


def start_voila(notebook: Path, home: Path, log: Path) -> Server:
    """Standalone Voila serving one notebook, as a person runs it (``voila nb.ipynb``)."""
    from jupyter_servers import private_jupyter_env

    port = free_port()
    env = private_jupyter_env(home, home / "sandbox")
    command = [
        sys.executable,
        "-m",
        "voila",
        str(notebook),
        "--no-browser",
        f"--port={port}",
        "--Voila.ip=127.0.0.1",
        "--show_tracebacks=True",
    ]
    server = spawn("Voila", command, env, log, f"http://127.0.0.1:{port}", "", home)
    wait_until_up(server, None)
    return server


def start_marimo(notebook: Path, home: Path, log: Path) -> Server:
    """``marimo run`` of ``notebook`` (a marimo .py) on a free port, headless, no token; its own
    config, cache and state dirs under ``home``."""
    from jupyter_servers import private_jupyter_env

    port = free_port()
    env = private_jupyter_env(home, home / "sandbox")
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        env[name] = str(home / name.lower())
    marimo = shutil.which("marimo", path=os.path.dirname(sys.executable)) or "marimo"
    command = [
        marimo,
        "-y",
        "run",
        str(notebook),
        "--headless",
        "--host=127.0.0.1",
        f"--port={port}",
        "--no-token",
    ]
    server = spawn("marimo", command, env, log, f"http://127.0.0.1:{port}", "", home)
    wait_until_up(server, "/health")
    return server


def marimo_copy(notebook: Path, folder: Path) -> Path:
    """The notebook as marimo's own converter makes it (what a marimo user runs), with one last
    cell that marks the end of the run for the test."""
    marimo = shutil.which("marimo", path=os.path.dirname(sys.executable)) or "marimo"
    target = folder / f"{notebook.stem}.py"
    subprocess.run([marimo, "-y", "convert", str(notebook), "-o", str(target)], check=True)
    text = target.read_text()
    end = text.rindex('\nif __name__ == "__main__":')
    sentinel = (
        "\n\n@app.cell\ndef _(mo):\n"
        "    mo.Html(\"<div id='dubkit-run-ended'>end of the notebook</div>\")\n    return\n"
    )
    target.write_text(text[:end] + sentinel + text[end:])
    return target


def wait_for_marimo_run(page, timeout: float) -> None:
    """Until every cell of a ``marimo run`` page has run: the last cell's mark is shown and
    marimo's running indicator is gone (marimo runs cells in dependency order, so the last
    cell of the file may run before others)."""
    page.wait_for_selector("#dubkit-run-ended", timeout=timeout * 1000)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"loading-indicator\"]')",
        timeout=timeout * 1000,
    )
