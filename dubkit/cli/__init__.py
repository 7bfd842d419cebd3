"""The ``dubkit`` command (also ``python -m dubkit``): the service's jobs from a terminal.

    dubkit voices --locale fr-FR              # the catalogue (--clones: yours; --json)
    dubkit tts "Bonjour" --voice ID -o bonjour.m4a
    dubkit translate "Hello" --from en-US --to fr-FR
    dubkit clone me.wav --name Me --language en-US
    dubkit dub talk.mp4 --to fr-FR,de-DE --out-dir dubs
    dubkit tasks [list | show ID | wait ID | delete ID]
    dubkit cast check cast.json               # a cast's voices: here, and sounding the same?
    dubkit cassette show lesson.dubkit        # what a recorded lesson holds
    dubkit class create roster.csv            # a class: keys, quotas, the teacher's view
    dubkit sandbox --port 8765 · dubkit studio · dubkit --version

Like ``dubkit.connect()``: the service with DUBKIT_API_KEY and DUBKIT_BASE_URL, else the local
sandbox. Exit codes: 0 done, 1 the service or the input said no (one line, no traceback;
--debug shows it), 2 bad flags or a missing file. Data goes to stdout (--json for scripts);
progress and notes go to stderr.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import NoReturn

from .._version import __version__
from . import cassettes, casts, classes, dub, host, speech, tasks, voices
from ._output import UsageError

# Plain text: argparse prints it as is, so no reST markup here.
DESCRIPTION = (
    "dubkit from a terminal: voices, text to speech, translation, cloning and dubbing, on "
    "the service (DUBKIT_API_KEY and DUBKIT_BASE_URL) or the local sandbox; and the sandbox "
    "and the audition studio themselves."
)
EPILOG = (
    "Example: dubkit sandbox --port 8765, then set DUBKIT_BASE_URL=http://127.0.0.1:8765 "
    "where you run dubkit.connect(). Each command has --help."
)


class _Parser(argparse.ArgumentParser):
    """Bad flags are one line on stderr and exit 2 (argparse adds the whole usage)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def parser() -> argparse.ArgumentParser:
    """The command's options (``dubkit --help``)."""
    main_parser = _Parser(prog="dubkit", description=DESCRIPTION, epilog=EPILOG)
    main_parser.add_argument("--version", action="version", version=f"dubkit {__version__}")
    main_parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    commands = main_parser.add_subparsers(
        dest="command",
        metavar="{voices,tts,translate,clone,dub,tasks,cast,cassette,class,sandbox,studio}",
        parser_class=_Parser,
    )
    for module in (voices, speech, dub, tasks, casts, cassettes, classes, host):
        module.add(commands)
    return main_parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["studio"]:  # the studio parses its own options: dubkit studio --help
        return host.studio(argv[1:])
    commands = parser()
    args = commands.parse_args(argv)
    if args.command is None:  # a bare `dubkit` / `python -m dubkit`: say what it can do
        commands.print_help()
        return 0
    name = f"dubkit {args.command}"
    try:
        code: int = args.run(args)
        return code
    except UsageError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{name}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        from ..errors import DubkitError

        if args.debug:
            traceback.print_exc()
        elif not isinstance(exc, DubkitError):
            raise
        print(f"{name}: {exc}", file=sys.stderr)
        return 1
