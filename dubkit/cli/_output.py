"""What every command shares: the client, a plain text table, JSON, and the usage error."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from ..client import Client


class UsageError(Exception):
    """Bad flags or a missing file: one line on stderr and exit 2, before any request."""


def client() -> Client:
    """The service with DUBKIT_API_KEY/DUBKIT_BASE_URL, else the sandbox, as ``connect()``;
    where it goes is said on stderr so stdout stays data."""
    from ..client import connect  # not at import: `dubkit sandbox` needs no client

    made = connect(quiet=True)
    if made.is_sandbox:
        where = urlsplit(made.base_url)
        print(
            f"dubkit: no DUBKIT_API_KEY set, using the dubkit sandbox at "
            f"{where.scheme}://{where.hostname}:{where.port}",
            file=sys.stderr,
        )
    return made


def existing_file(path: str, flag: str) -> Path:
    found = Path(path).expanduser()
    if not found.is_file():
        raise UsageError(f"{flag}: no such file: {path}")
    return found


def lines_of(path: str, flag: str) -> list[str]:
    """The non-blank lines of a text file (one line, one text)."""
    text = existing_file(path, flag).read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise UsageError(f"{flag}: {path} holds no text")
    return lines


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write("\n")


def table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str], *, width: int = 40) -> str:
    """Left-aligned columns for a terminal; long cells are cut with an ellipsis."""

    def cell(value: Any) -> str:
        text = "" if value is None else str(value).replace("\n", " ")
        return text if len(text) <= width else text[: width - 1] + "…"

    body = [[cell(row.get(c)) for c in columns] for row in rows]
    sizes = [max([len(c)] + [len(r[i]) for r in body]) for i, c in enumerate(columns)]
    out = ["  ".join(c.ljust(s) for c, s in zip(columns, sizes)).rstrip()]
    out += ["  ".join(v.ljust(s) for v, s in zip(r, sizes)).rstrip() for r in body]
    return "\n".join(out)
