"""The local sandbox: a faithful emulator of the service that does real work, offline.

``dubkit.connect()`` starts one in the background when no API key is set. Start your own with
:func:`start` (tests, benchmarks) or run ``dubkit sandbox --port 8765`` in a terminal.

Security: what the sandbox protects, and what it does not
---------------------------------------------------------
It runs on other people's machines (laptops, Binder, a shared JupyterHub, a class's server), so:

* **Its admin routes are a credential.** ``/_sandbox/...`` needs the admin token in
  ``<data dir>/admin-token`` (mode 0600); a web page in the user's browser cannot use them either
  (form content types, foreign ``Origin`` and foreign ``Host`` are refused). See
  :mod:`dubkit.sandbox.guard`.
* **Its files are its owner's.** The data dir is 0700 and the database 0600; keys and secrets
  never appear in an answer without the admin token (lists mask them).
* **It reads only what it should.** Reference URLs that point at its own files stay inside its
  files directory; other hosts are fetched only as its fetch policy allows (https of public
  hosts by default, never loopback or private addresses unless named). See
  :mod:`dubkit.sandbox.references`.
* **Limits hold while bytes arrive**: bodies are refused at the limit without being buffered;
  deep JSON, NUL and lone surrogates, long query strings are refused before any work.
* **Keys are accounts.** Each API key sees only its own tasks, materials, clones and files.

Not protected: the API itself is plain HTTP on the address it listens on (loopback by default);
anyone who holds an API key can spend its credits; file links are capability URLs (unguessable,
working until their owner is deleted) that anyone holding them can open. It is an emulator:
do not put real secrets in it.

For a class: run ``dubkit sandbox --host 0.0.0.0 --port 8765`` (add ``--allow-host NAME`` for
the name students use), keep the admin token to yourself, and give each student a key of their
own: ``dubkit.SandboxHandle("http://HOST:8765", admin_token=...).create_key("ana")``. Students set
``DUBKIT_API_KEY`` and ``DUBKIT_BASE_URL`` and never see each other's work.
"""

from __future__ import annotations

import atexit
import os
import threading
from pathlib import Path
from typing import Any

from .admin_token import ADMIN_HEADER, TOKEN_ENV, read_admin_token
from .server import RunningSandbox, start

__all__ = [
    "RunningSandbox",
    "start",
    "embedded",
    "default_data_dir",
    "read_admin_token",
    "ADMIN_HEADER",
    "TOKEN_ENV",
]

_embedded: RunningSandbox | None = None
_embedded_lock = threading.Lock()
_dir_lock_file = None


def default_data_dir() -> Path:
    """``$DUBKIT_SANDBOX_DIR``, else ``~/.cache/dubkit/sandbox``."""
    return Path(
        os.environ.get("DUBKIT_SANDBOX_DIR") or Path.home() / ".cache" / "dubkit" / "sandbox"
    )


def embedded() -> tuple[RunningSandbox, str]:
    """This process's sandbox, started on first use; returns it and a one-line note.

    It keeps its state in :func:`default_data_dir` so tasks survive a kernel restart. When
    another live process already holds that directory, this one uses a temporary directory
    rather than share SQLite and webhook delivery between two servers.
    """
    global _embedded, _dir_lock_file
    with _embedded_lock:
        # The note names no address or path: it is printed into notebooks, which must still
        # make sense when opened elsewhere (client.sandbox has both).
        if _embedded is not None:
            return _embedded, "reusing this kernel's local sandbox"
        folder = default_data_dir()
        folder.mkdir(parents=True, exist_ok=True)
        lock = open(folder / "lock", "w")
        data_dir: Path | None = folder
        if _try_lock(lock):
            _dir_lock_file = lock
        else:
            lock.close()
            data_dir = None
        _embedded = start(data_dir)
        atexit.register(_embedded.stop)
        where = (
            "its data kept for next time"
            if data_dir
            else "its data in a temporary directory, as another process uses the default one"
        )
        return _embedded, (
            f"started the local sandbox (an offline emulator, {where}; "
            f"client.sandbox has its address)"
        )


def _try_lock(handle: Any) -> bool:
    """An exclusive, non-blocking lock on an open file (POSIX or Windows)."""
    try:
        import fcntl

        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
            return True
        except OSError:
            return False
    except OSError:
        return False
