"""The ``dubkit`` command: ``dubkit sandbox --port 8765`` and friends."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["studio"]:      # the studio parses its own options: dubkit studio --help
        from .studio import main as studio_main
        return studio_main(argv[1:])
    parser = argparse.ArgumentParser(prog="dubkit", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    box = commands.add_parser("sandbox", help="run the local sandbox in the foreground")
    box.add_argument("--port", type=int, default=8765)
    box.add_argument("--host", default="127.0.0.1",
                     help="interface to listen on (loopback by default; 0.0.0.0 to serve a "
                          "class: give students their own keys, keep the admin token)")
    box.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                     help="another name students reach the sandbox under (admin calls check "
                          "Host); repeatable")
    box.add_argument("--data-dir", type=Path, default=None,
                     help="where state is kept (default: ~/.cache/dubkit/sandbox)")
    box.add_argument("--strict", action="store_true", default=None,
                     help="strict contract mode: record every answer and webhook the contract "
                          "document does not allow (GET /_sandbox/contract)")
    commands.add_parser("studio", help="the audition studio app, served by Voila")
    args = parser.parse_args(argv)
    if args.command == "sandbox":
        from .sandbox import default_data_dir
        from .sandbox.server import serve_forever
        serve_forever(args.data_dir or default_data_dir(), port=args.port, host=args.host,
                      strict=args.strict, allow_hosts=args.allow_host)
    return 0


if __name__ == "__main__":
    sys.exit(main())
