"""The ``dubkit`` command (also ``python -m dubkit``): the sandbox and the studio from a terminal::

dubkit sandbox --port 8765      # then DUBKIT_BASE_URL=http://127.0.0.1:8765 in a notebook
dubkit studio                   # the audition studio app
dubkit --version
"""

from __future__ import annotations

import argparse
import errno
import sys
from pathlib import Path

from ._version import __version__

# Plain text: argparse prints it as is, so no reST markup here.
DESCRIPTION = (
    "dubkit from a terminal: run the local sandbox (an offline emulator of the "
    "translate-and-dub service) or the audition studio app."
)
EPILOG = (
    "Example: dubkit sandbox --port 8765, then set DUBKIT_BASE_URL=http://127.0.0.1:8765 "
    "where you run dubkit.connect()."
)
DEFAULT_PORT = 8765
# What the address errors of listening mean, said in the words of the option to change.
_LISTEN_ERRORS = {
    errno.EADDRINUSE: "port {port} is already in use (another sandbox or program "
    "listens there); pick another with --port, e.g. "
    "dubkit sandbox --port {free}",
    errno.EACCES: "port {port} needs privileges this user does not have; pick "
    "one above 1023 with --port, e.g. dubkit sandbox --port {free}",
    errno.EADDRNOTAVAIL: "{host} is not an address of this machine; pick "
    "another with --host (127.0.0.1, or 0.0.0.0 for all)",
}


def parser() -> argparse.ArgumentParser:
    """The command's options (``dubkit --help``)."""
    main_parser = argparse.ArgumentParser(prog="dubkit", description=DESCRIPTION, epilog=EPILOG)
    main_parser.add_argument("--version", action="version", version=f"dubkit {__version__}")
    commands = main_parser.add_subparsers(dest="command", metavar="{sandbox,studio}")
    box = commands.add_parser(
        "sandbox",
        help="run the local sandbox in the foreground",
        description="Run the local sandbox in the foreground until "
        "Ctrl+C; notebooks reach it with DUBKIT_BASE_URL.",
    )
    box.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port to listen on (default: {DEFAULT_PORT})",
    )
    box.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface to listen on (loopback by default; 0.0.0.0 to serve a "
        "class: give students their own keys, keep the admin token)",
    )
    box.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name students reach the sandbox under (admin calls check Host); repeatable",
    )
    box.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where state is kept (default: $DUBKIT_SANDBOX_DIR, else ~/.cache/dubkit/sandbox)",
    )
    box.add_argument(
        "--strict",
        action="store_true",
        default=None,
        help="strict contract mode: record every answer and webhook the contract "
        "document does not allow (GET /_sandbox/contract)",
    )
    commands.add_parser(
        "studio",
        help="the audition studio app, served by Voila (dubkit studio --help for its options)",
    )
    return main_parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["studio"]:  # the studio parses its own options: dubkit studio --help
        from .studio import main as studio_main

        return studio_main(argv[1:])
    commands = parser()
    args = commands.parse_args(argv)
    if args.command is None:  # a bare `dubkit` / `python -m dubkit`: say what it can do
        commands.print_help()
        return 0
    return sandbox(args)


def sandbox(args: argparse.Namespace) -> int:
    """``dubkit sandbox``: serve until interrupted; a port it cannot listen on is one line."""
    from .sandbox import default_data_dir
    from .sandbox.server import serve_forever

    try:
        serve_forever(
            args.data_dir or default_data_dir(),
            port=args.port,
            host=args.host,
            strict=args.strict,
            allow_hosts=args.allow_host,
        )
    except OSError as exc:
        # socket errors carry no file name; a data dir that cannot be written keeps its
        # traceback (it is not about the address).
        if exc.filename is not None or exc.errno not in _LISTEN_ERRORS:
            raise
        reason = _LISTEN_ERRORS[exc.errno].format(
            host=args.host,
            port=args.port,
            free=_suggested_port(args.host, args.port) if exc.errno != errno.EADDRNOTAVAIL else "",
        )
        print(
            f"dubkit sandbox: cannot listen on {args.host}:{args.port}: {reason}", file=sys.stderr
        )
        return 1
    return 0


def _suggested_port(host: str, port: int) -> int:
    """A port that is free on ``host`` right now (only a suggestion: it may be taken later)."""
    import socket

    for candidate in range(max(port, 1023) + 1, max(port, 1023) + 50):
        with socket.socket() as probe:
            try:
                probe.bind((host, candidate))
                return candidate
            except OSError:
                continue
    return DEFAULT_PORT + 1


if __name__ == "__main__":
    sys.exit(main())
