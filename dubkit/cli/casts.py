"""``dubkit cast``: a cast file from a terminal (``show``, ``check``), and the ``--cast`` that
``dubkit tts`` and ``dubkit dub`` take."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..errors import ValidationError
from ._output import UsageError, client, existing_file, print_json, table

if TYPE_CHECKING:
    from ..cast import Cast


def add(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cast = commands.add_parser(
        "cast",
        help="a cast file: its roles and voices, and whether they are here and sound the same",
        description="dubkit cast show cast.json; dubkit cast check cast.json (exit 1 when a "
        "role's voice is missing or sounds different).",
    )
    cast.add_argument("action", choices=("show", "check"))
    cast.add_argument("file", help="the cast file (JSON)")
    cast.add_argument("--json", action="store_true", help="the rows as JSON")
    cast.set_defaults(run=run)


def read(path: str) -> Cast:
    """The cast in ``path``; a mistake in it is a usage error naming the file and line."""
    from ..cast import Cast

    existing_file(path, "--cast")
    try:
        return Cast.load(path)
    except ValidationError as exc:
        raise UsageError(str(exc)) from None


def speakers_of(text: str) -> dict[int, str]:
    """``1=Alice,2=Bob`` -> ``{1: "Alice", 2: "Bob"}``."""
    mapping: dict[int, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        number, _, role = part.partition("=")
        if not number.strip().isdigit() or not role.strip():
            raise UsageError(f"--roles: {part!r} is not SPEAKER=ROLE, e.g. 1=Alice")
        mapping[int(number)] = role.strip()
    return mapping


def run(args: argparse.Namespace) -> int:
    cast = read(args.file)
    if args.action == "show":
        rows = [
            {"role": role.name, "locale": locale, "voice": voice.voice_id, "kind": voice.kind,
             "emotion": voice.emotion, "note": role.note}
            for role in cast
            for locale, voice in sorted(role.voices.items())
        ]  # fmt: skip
        if args.json:
            print_json(rows)
        else:
            print(table(rows, ("role", "locale", "voice", "kind", "emotion", "note")))
        return 0
    with client() as api:
        verdicts = cast.check(api)
        gaps = cast.missing(api) if any(v.status == "missing" for v in verdicts) else None
    found: list[dict[str, object]] = [
        {"role": v.role, "locale": v.locale, "voice": v.voice_id, "verdict": v.status,
         "similarity": v.similarity}
        for v in verdicts
    ]  # fmt: skip
    if args.json:
        print_json(found)
    else:
        print(table(found, ("role", "locale", "voice", "verdict", "similarity")))
    if gaps:
        print(f"dubkit cast: {gaps}", file=sys.stderr)
    return 0 if verdicts.ok else 1
