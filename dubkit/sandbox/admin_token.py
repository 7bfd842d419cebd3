"""The admin token of a data dir: whoever may read the data dir may steer its sandbox."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

ADMIN_HEADER = "X-Sandbox-Admin-Token"
TOKEN_FILE = "admin-token"
TOKEN_ENV = "DUBKIT_SANDBOX_ADMIN_TOKEN"


def admin_token(data_dir: Path) -> str:
    """The data dir's admin token, made on first use in a file only its owner can read."""
    path = Path(data_dir) / TOKEN_FILE
    if not path.exists():
        # Written aside, then linked into place: a reader never sees a half-written token,
        # and of two processes making one at once, the first link wins.
        partial = path.with_name(f".{TOKEN_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_urlsafe(32))
        try:
            os.link(partial, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(partial)
    return path.read_text(encoding="ascii").strip()


def read_admin_token(data_dir: Path) -> str | None:
    """The token of an existing data dir, or None (never makes one)."""
    try:
        return (Path(data_dir) / TOKEN_FILE).read_text(encoding="ascii").strip() or None
    except OSError:
        return None
