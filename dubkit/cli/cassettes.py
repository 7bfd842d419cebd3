"""``dubkit cassette show PATH``: what a recorded lesson holds, before it is shared."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..cassette import Cassette
from ..errors import ValidationError
from ._output import UsageError


def add(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cassette = commands.add_parser(
        "cassette",
        help="what a recorded lesson holds",
        description="dubkit cassette show PATH: the calls, the media and the size on disk of "
        "a cassette (recorded with dubkit.connect(record=PATH)).",
    )
    actions = cassette.add_subparsers(dest="action", metavar="{show}", required=True)
    show = actions.add_parser("show", help="list the calls, media and total size")
    show.add_argument("path")
    show.add_argument("--json", action="store_true")
    show.set_defaults(run=show_cassette)


def show_cassette(args: argparse.Namespace) -> int:
    try:
        summary = Cassette.load(args.path).summary()
    except ValidationError as exc:
        raise UsageError(str(exc).removeprefix("replay: ")) from None
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(_text(summary))
    return 0


def _text(summary: dict[str, Any]) -> str:
    calls = summary["calls"]
    lines = [
        f"{summary['path']}: recorded {summary['recorded']} from {summary['service']}",
        f"{len(calls)} calls, {sum(c['answers'] for c in calls)} answers:",
    ]
    width = max((len(c["method"]) for c in calls), default=0)
    for call in calls:
        statuses = ", ".join(str(s) for s in call["status"])
        lines.append(f"  {call['method']:<{width}} {call['url']}  [{statuses}]")
    lines.append(
        f"{len(summary['media'])} media files, {summary['media_bytes'] / 1e6:.1f} MB; "
        f"{summary['total_bytes'] / 1e6:.1f} MB on disk in all"
    )
    kinds: dict[str, list[int]] = {}
    for item in summary["media"]:
        kinds.setdefault(item["type"].split(";")[0], []).append(int(item["size"]))
    for kind, sizes in sorted(kinds.items(), key=lambda kv: -sum(kv[1])):
        lines.append(f"  {kind:<28} {len(sizes):>4} files, {sum(sizes) / 1e6:.1f} MB")
    lines.append(f"{summary['events']} webhook events")
    lines += [f"not recorded: {problem}" for problem in summary["problems"]]
    return "\n".join(lines)
