"""``dubkit dub``: dub files, folders or globs into several languages as one resumable batch.

    dubkit dub lessons/*.mp4 --to fr-FR,de-DE --out dubs     # uploads, dubs, downloads
    dubkit dub lessons/*.mp4 --to fr-FR,de-DE --out dubs     # again: picks up where it stood
    dubkit dub --status dubs                                 # the table, from the ledger

Results go to ``DIR/<locale>/<file stem>.<ext>`` with their subtitles. The ledger in DIR (or
``--ledger postgresql://…``, shared by several machines) writes every paid step down before
and after it is sent, so the same command run again after Ctrl-C, a crash or ``kill -9``
reuses every upload and task and pays for nothing twice. Ctrl-C leaves the running tasks to
the service and says their ids. Exit code: 0 when every row is dubbed, 1 when one is not.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from . import casts
from ._output import UsageError, client, print_json, table

POLL_SECONDS = 0.5


def add(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dub = commands.add_parser(
        "dub",
        help="dub video or audio files into other languages (a resumable batch)",
        description="dubkit dub lessons/*.mp4 --to fr-FR,de-DE --out dubs: uploads each "
        "distinct file once, dubs every file into every locale with a live status line, "
        "downloads the dubs and subtitles to DIR/<locale>/<file>.<ext>. Run it again to resume; "
        "dubkit dub --status DIR prints the table.",
    )
    dub.add_argument("media", nargs="*", help="files, folders or globs ('lessons/*.mp4')")
    dub.add_argument("--to", help="target locales, comma-separated: fr-FR,de-DE")
    dub.add_argument("--from", dest="source", default="auto", help="source locale (auto)")
    dub.add_argument("--out", "--out-dir", dest="out", default=".", help="output folder (.)")
    dub.add_argument("--status", metavar="DIR", help="print the batch's table from its ledger")
    dub.add_argument("--ledger", help="a ledger file or postgresql:// URL (default: in DIR)")
    dub.add_argument("--name", help="the batch's name in a shared ledger (default: DIR's name)")
    dub.add_argument("--budget", type=float, help="credits the batch may spend at most")
    dub.add_argument(
        "--skip-over-budget", action="store_true", help="dub the rows that fit the budget"
    )
    dub.add_argument("--retry-failed", action="store_true", help="dub failed rows again")
    dub.add_argument("--max-in-flight", type=int, default=4, help="tasks at once (4)")
    dub.add_argument("--voices", help="voice ids for speakers 1, 2, ..., comma-separated")
    dub.add_argument("--speakers", type=int, help="how many speakers (default: detected)")
    dub.add_argument("--cast", help="a cast file whose roles give the speakers' voices (--roles)")
    dub.add_argument("--roles", help="speakers mapped to the cast's roles: 1=Alice,2=Bob")
    dub.add_argument("--burn-subtitles", action="store_true", help="subtitles in the picture")
    dub.add_argument("--json", action="store_true", help="the rows as JSON")
    dub.set_defaults(run=dub_media)


def dub_media(args: argparse.Namespace) -> int:
    if args.status:
        return _status(args)
    if not args.media:
        raise UsageError("name files, folders or globs to dub (or --status DIR)")
    targets = [t.strip() for t in (args.to or "").split(",") if t.strip()]
    if not targets:
        raise UsageError("--to: at least one locale, e.g. --to fr-FR")
    if (args.cast is None) != (args.roles is None):
        raise UsageError("--cast FILE and --roles 1=Alice,2=Bob go together")
    options: dict[str, Any] = {
        "source": args.source,
        "voices": [v.strip() for v in (args.voices or "").split(",") if v.strip()] or None,
        "speaker_num": args.speakers,
        "text": {"burn": True} if args.burn_subtitles else None,
    }
    if args.cast:
        options["cast"] = casts.read(args.cast)
        options["speakers"] = casts.speakers_of(args.roles)
    with client() as api:
        try:
            batch = api.dubbing.batch(
                args.media,
                targets=targets,
                out=args.out,
                ledger=args.ledger,
                name=args.name,
                budget=args.budget,
                over_budget="skip" if args.skip_over_budget else "raise",
                max_in_flight=args.max_in_flight,
                start=False,
                **{k: v for k, v in options.items() if v is not None},
            )
        except ValidationError as exc:
            if exc.field.startswith("files"):
                raise UsageError(str(exc)) from None
            raise
        print(f"dubkit dub: {batch.plan.describe()}", file=sys.stderr)
        try:
            (batch.retry_failed() if args.retry_failed else batch.start())
            _watch(batch)
            batch.wait()
        except KeyboardInterrupt:
            batch.cancel()
            ids = " ".join(r.task_id for r in batch.rows if r.task_id and not r.ended)
            print(
                f"\ndubkit dub: interrupted; the tasks keep running: {ids or 'none'} "
                "(the same command picks them up)",
                file=sys.stderr,
            )
            return 130
        rows = batch.rows
        _print_rows(rows, batch.out, args.json)
        return 0 if all(r.status == "done" for r in rows) else 1


def _watch(batch: Any) -> None:
    """One status line on stderr while the batch runs (rewritten in place on a terminal;
    elsewhere printed when it changes), and a line as each row gets its task or ends."""
    from ..views.batch import summary

    live = sys.stderr.isatty()
    said = {row.key: (row.status, row.task_id) for row in batch.rows}  # as this run found them
    shown = ""
    while True:
        rows = batch.rows
        for row in rows:
            status, task_id = said.get(row.key, ("", None))
            if row.task_id and row.task_id != task_id:
                _line(live, f"dubkit dub: {row.name}: task {row.task_id}")
            if row.ended and row.status != "done" and row.status != status:
                _line(live, f"dubkit dub: {row.name}: {row.word}: {row.error or ''}")
            said[row.key] = (row.status, row.task_id)
        line = summary(rows)
        if live:
            print(f"\r{line}\x1b[K", end="", file=sys.stderr, flush=True)
        elif line != shown:
            print(line, file=sys.stderr, flush=True)
        shown = line
        if not batch.running:
            if live:
                print(file=sys.stderr)
            return
        time.sleep(POLL_SECONDS)


def _line(live: bool, text: str) -> None:
    print(("\r\x1b[K" if live else "") + text, file=sys.stderr, flush=True)


def _print_rows(rows: list[Any], out: Path, as_json: bool) -> None:
    from ..batch.report import records

    found = records(rows, out)
    if as_json:
        print_json(found)
        return
    columns = ("file", "locale", "status", "quote", "charged", "elapsed_s", "outputs", "error")
    print(table(found, columns, width=60))


def _status(args: argparse.Namespace) -> int:
    from ..batch import read_rows

    out = Path(args.status).expanduser()
    try:
        rows = read_rows(out, ledger=args.ledger, name=args.name)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    _print_rows(rows, out, args.json)
    return 0 if rows and all(r.status == "done" for r in rows) else 1
