"""``dubkit dub``: upload a video or audio file, dub it into one or more languages, download.

Ctrl-C while waiting leaves the tasks running (they are the service's now) and prints their
ids, so ``dubkit tasks wait ID`` can pick each up later.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from ..errors import ValidationError
from . import casts
from ._output import UsageError, client, existing_file, print_json

if TYPE_CHECKING:
    from ..results import Task

POLL_SECONDS = 1.0


def add(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dub = commands.add_parser(
        "dub",
        help="dub a video or audio file into other languages",
        description="dubkit dub talk.mp4 --to fr-FR,de-DE --out-dir dubs: uploads (with "
        "progress), waits with a live status line, downloads the dubbed media and subtitles.",
    )
    dub.add_argument("media", help="a video or audio file")
    dub.add_argument("--to", required=True, help="target locales, comma-separated: fr-FR,de-DE")
    dub.add_argument("--from", dest="source", default="auto", help="source locale (auto)")
    dub.add_argument("--voices", help="voice ids for speakers 1, 2, ..., comma-separated")
    dub.add_argument("--speakers", type=int, help="how many speakers (default: detected)")
    dub.add_argument("--cast", help="a cast file whose roles give the speakers' voices (--roles)")
    dub.add_argument("--roles", help="speakers mapped to the cast's roles: 1=Alice,2=Bob")
    dub.add_argument("--burn-subtitles", action="store_true", help="subtitles in the picture")
    dub.add_argument("--out-dir", default=".", help="where the results go (default: here)")
    dub.add_argument("--timeout", type=float, default=3600, help="seconds to wait (3600)")
    dub.add_argument("--json", action="store_true", help="the outcome as JSON")
    dub.set_defaults(run=dub_media)


def dub_media(args: argparse.Namespace) -> int:
    path = existing_file(args.media, "media")
    targets = [t.strip() for t in args.to.split(",") if t.strip()]
    if not targets:
        raise UsageError("--to: at least one locale, e.g. --to fr-FR")
    voices = [v.strip() for v in (args.voices or "").split(",") if v.strip()] or None
    if (args.cast is None) != (args.roles is None):
        raise UsageError("--cast FILE and --roles 1=Alice,2=Bob go together")
    cast_of = casts.read(args.cast) if args.cast else None
    speakers = casts.speakers_of(args.roles) if args.roles else None
    if cast_of is not None and speakers is not None:
        for target in targets:  # every target's voices are found before the upload
            try:
                cast_of.speaker_voices(speakers, target)
            except ValidationError as exc:
                raise UsageError(f"{args.cast}: {exc}") from None
    with client() as api:
        material = api.materials.upload(path)
        tasks: dict[str, Task] = {}
        try:
            for target in targets:
                tasks[target] = api.dubbing.create(
                    material,
                    target=target,
                    source=args.source,
                    voices=voices,
                    cast=cast_of,
                    speakers=speakers,
                    speaker_num=args.speakers,
                    text={"burn": True} if args.burn_subtitles else None,
                )
                print(f"dubkit dub: {target}: task {tasks[target].task_id}", file=sys.stderr)
            _watch(tasks, args.timeout)
        except KeyboardInterrupt:
            if not tasks:
                raise
            ids = " ".join(task.task_id for task in tasks.values())
            print(
                f"\ndubkit dub: interrupted; the tasks keep running: {ids} "
                "(dubkit tasks wait ID picks one up)",
                file=sys.stderr,
            )
            return 130
        outcomes = []
        for target, task in tasks.items():
            outcome: dict[str, object] = {
                "target": target,
                "taskId": task.task_id,
                "status": task.status,
            }
            if task.status == "finished":
                saved = task.result.save(args.out_dir, path.stem)
                outcome["files"] = {kind: str(file) for kind, file in saved.items()}
            else:
                outcome["error"] = task.error_message or f"still {task.status}"
            outcomes.append(outcome)
    if args.json:
        print_json(outcomes)
    else:
        for outcome in outcomes:
            files = outcome.get("files")
            shown = " ".join(files.values()) if isinstance(files, dict) else outcome["error"]
            print(f"{outcome['target']}: {shown}")
    return 0 if all(o["status"] == "finished" for o in outcomes) else 1


def _watch(tasks: dict[str, Task], timeout: float) -> None:
    """Poll until every task ends or ``timeout``; one status line on stderr (rewritten in
    place on a terminal, printed again only when it changes elsewhere)."""
    deadline = time.monotonic() + timeout
    live = sys.stderr.isatty()
    shown = ""
    while True:
        for task in tasks.values():
            if not task.done:
                task.refresh()
        line = " | ".join(
            f"{target} {task.status} {task.elapsed:.0f}s" for target, task in tasks.items()
        )
        states = " | ".join(f"{t} {task.status}" for t, task in tasks.items())
        if live:
            print(f"\r{line}", end="", file=sys.stderr, flush=True)
        elif states != shown:
            print(line, file=sys.stderr, flush=True)
            shown = states
        if all(task.done for task in tasks.values()) or time.monotonic() > deadline:
            if live:
                print(file=sys.stderr)
            return
        time.sleep(POLL_SECONDS)
