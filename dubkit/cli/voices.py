"""``dubkit voices`` and ``dubkit clone``: the catalogue, your clones, and making one."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, cast, get_args

from ..schema import CloneProvider

if TYPE_CHECKING:
    from ..results import VoiceList

from .._util.words import count
from ._output import UsageError, client, existing_file, print_json, table

PRESET_COLUMNS = ("voice_id", "display_name", "locale", "gender", "age", "provider", "style")
CLONE_COLUMNS = ("voice_id", "name", "provider", "example_language", "create_time")


def add(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    voices = commands.add_parser(
        "voices",
        help="list preset voices, or your clones",
        description="List preset voices (or your cloned voices with --clones) as a table, "
        "or as JSON for scripts.",
    )
    voices.add_argument("--locale", help="e.g. fr-FR (presets only)")
    voices.add_argument("--gender", help="male or female (presets only)")
    voices.add_argument("--search", help="part of a voice's name")
    voices.add_argument("--clones", action="store_true", help="your cloned voices")
    voices.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    voices.add_argument("--json", action="store_true", help="the records as JSON")
    voices.set_defaults(run=list_voices)

    clone = commands.add_parser(
        "clone",
        help="clone a voice from a recording",
        description="Upload a recording (or give its https URL) and clone the voice in it.",
    )
    clone.add_argument("recording", help="an audio file, or an https URL")
    clone.add_argument("--name", required=True, help="the new voice's name")
    clone.add_argument("--locale", help="the recording's locale, e.g. en-US")
    clone.add_argument("--language", help=argparse.SUPPRESS)  # --locale's old name
    clone.add_argument(
        "--provider",
        choices=get_args(CloneProvider),
        help="clone engine (default: the service's choice)",
    )
    clone.add_argument("--text", help="what the recording says (helps some engines)")
    clone.add_argument("--json", action="store_true", help="the new voice as JSON")
    clone.set_defaults(run=make_clone)


def list_voices(args: argparse.Namespace) -> int:
    if args.clones and (args.locale or args.gender):
        raise UsageError("--locale and --gender filter presets; your clones have neither")
    if args.limit < 1:
        raise UsageError("--limit: at least 1")
    with client() as api:
        found: VoiceList[Any]
        columns: tuple[str, ...]
        if args.clones:
            found = api.voices.clones(search=args.search, limit=args.limit)
            columns = CLONE_COLUMNS
        else:
            found = api.voices.presets(
                locale=args.locale, gender=args.gender, search=args.search, limit=args.limit
            )
            columns = PRESET_COLUMNS
    if args.json:
        print_json([voice.to_wire() for voice in found])
        return 0
    print(table([voice.model_dump() for voice in found], columns))
    print(f"{count(len(found), 'voice')} of {found.total}", file=sys.stderr)
    return 0


def _locale(args: argparse.Namespace) -> str | None:
    """``--locale``, or its old name ``--language`` (said on stderr)."""
    if args.language is not None:
        print("dubkit: --language is now --locale; --language will be removed", file=sys.stderr)
    return args.locale or args.language


def make_clone(args: argparse.Namespace) -> int:
    source = args.recording
    if not source.startswith(("http://", "https://")):
        source = str(existing_file(source, "recording"))
    with client() as api:
        made = api.clones.create(
            source,
            name=args.name,
            locale=_locale(args),
            provider=cast("CloneProvider | None", args.provider),
            text=args.text,
        )
        record = {
            "voiceId": made.voice_id,
            "name": made.name,
            "provider": made.provider,
            "language": made.locale,  # the JSON keeps its key: scripts read it
            "taskId": made.task_id,
        }
        if args.json:
            print_json(record)
        else:
            print(f"{made.voice_id}  {made.name}  {made.provider or ''}".rstrip())
    return 0
