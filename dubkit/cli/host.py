"""``dubkit sandbox`` and ``dubkit studio``: run the local sandbox or the audition studio.

A port the sandbox cannot listen on is one line and exit 1, in the words of the option to
change.
"""

from __future__ import annotations

import argparse
import errno
import sys
from pathlib import Path

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


def add(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    box = commands.add_parser(
        "sandbox",
        help="run the local sandbox in the foreground",
        description="Run the local sandbox in the foreground until "
        "Ctrl+C; notebooks reach it with DUBKIT_BASE_URL.",
    )
    box.set_defaults(run=sandbox)
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


def studio(argv: list[str]) -> int:
    """``dubkit studio``: the studio parses its own options (dubkit studio --help)."""
    from ..studio import main as studio_main

    return studio_main(argv)


def sandbox(args: argparse.Namespace) -> int:
    """``dubkit sandbox``: serve until interrupted; a port it cannot listen on is one line."""
    from ..sandbox import default_data_dir
    from ..sandbox.server import serve_forever

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
