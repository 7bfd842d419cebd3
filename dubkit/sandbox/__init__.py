"""The local sandbox: a faithful emulator of the service that does real work, offline.

``dubkit.connect()`` starts one in the background when no API key is set. Start your own with
:func:`start` (tests, benchmarks) or run ``dubkit sandbox --port 8765`` in a terminal.
"""

from __future__ import annotations

import atexit
import os
import threading
from pathlib import Path
from typing import Any

from .server import SandboxHandle, start

__all__ = ["SandboxHandle", "start", "embedded", "default_data_dir"]

_embedded: SandboxHandle | None = None
_embedded_lock = threading.Lock()
_dir_lock_file = None


def default_data_dir() -> Path:
    """``$DUBKIT_SANDBOX_DIR``, else ``~/.cache/dubkit/sandbox``."""
    return Path(os.environ.get("DUBKIT_SANDBOX_DIR")
                or Path.home() / ".cache" / "dubkit" / "sandbox")


def embedded() -> tuple[SandboxHandle, str]:
    """This process's sandbox, started on first use; returns it and a one-line note.

    It keeps its state in :func:`default_data_dir` so tasks survive a kernel restart. When
    another live process already holds that directory, this one uses a temporary directory
    rather than share SQLite and webhook delivery between two servers.
    """
    global _embedded, _dir_lock_file
    with _embedded_lock:
        if _embedded is not None:
            return _embedded, f"reusing the local sandbox at {_embedded.url}"
        data_dir: Path | None = default_data_dir()
        data_dir.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
        lock = open(data_dir / "lock", "w")  # type: ignore[operator]
        if _try_lock(lock):
            _dir_lock_file = lock
        else:
            lock.close()
            data_dir = None
        _embedded = start(data_dir)
        atexit.register(_embedded.stop)
        where = data_dir if data_dir else "a temporary directory (the default one is in use)"
        return _embedded, (f"started the local sandbox at {_embedded.url} (offline emulator; "
                           f"data in {where})")


def _try_lock(handle: Any) -> bool:
    """An exclusive, non-blocking lock on an open file (POSIX or Windows)."""
    try:
        import fcntl
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except ImportError:   # Windows
        import msvcrt
        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    except OSError:
        return False
