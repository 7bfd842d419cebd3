"""``dubkit class``: a class on one sandbox, from the teacher's terminal.

    dubkit class create roster.csv --credits 500 --max-tasks 3 --max-storage 200MB
    dubkit class add bob --email bob@example.org  ·  dubkit class remove bob
    dubkit class topup ada 200  ·  dubkit class reset ada  ·  dubkit class disable ada
    dubkit class limits ada --tasks 5 --storage 1GB
    dubkit class show [--csv | --json]  ·  dubkit class view   (the teacher's view, by Voila)

The class file (``--file``, default ``$DUBKIT_CLASS_FILE`` or ``class.json``) holds every
student's key: it is written owner-only, and no command prints a key.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets

from .._util import voila_app
from ..classroom import CLASS_FILE_ENV, Classroom, class_file_path
from ..classroom.report import CSV_COLUMNS
from ._output import UsageError, existing_file, print_json, table

APP_INTRO = """# The class

Every student of the class sandbox: tasks by product and status, credits left and spent,
uploads, last activity and the latest error. The table refreshes itself. Pick a student to
play their latest speech and dubs, and to top them up, reset or disable them; **Export CSV**
saves the table. Served by `dubkit class view`; opened without a class file, it shows a demo
class of three on the embedded sandbox."""
APP_SOURCE = (
    "from dubkit.classroom import Classroom, ClassView, class_file_path\n"
    "\n"
    "# The class file: $DUBKIT_CLASS_FILE (dubkit class view sets it); without one, a demo\n"
    "# class of three on the embedded sandbox.\n"
    "room = Classroom.open() if class_file_path().exists() else Classroom.demo()\n"
    "view = ClassView(room)\n"
    "view"
)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}


def size(text: str) -> int:
    """``200MB`` -> 200000000 (``MiB`` and friends are powers of 1024); ``0`` lifts a limit."""
    found = _SIZE.match(text)
    if not found:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 200MB, 1GiB, 500000)")
    number, unit = found.groups()
    unit = unit.lower().rstrip("b")
    scale = 1024 ** "kmgt".index(unit[0]) * 1024 if unit.endswith("i") else _UNITS[unit]
    count = float(number) * scale
    if 0 < count < 1:  # would round to 0, which lifts the limit
        raise argparse.ArgumentTypeError(f"{text!r} is less than a byte")
    return int(count)


def add(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = commands.add_parser(
        "class",
        help="a class on one sandbox: keys from a roster, quotas, the teacher's view",
        description="Give each student of a roster a key on a class sandbox (dubkit sandbox "
        "--host 0.0.0.0), with credits and quotas; top up, reset, disable; see the class.",
    )
    group.add_argument(
        "--file",
        default=None,
        help=f"the class file (default: ${CLASS_FILE_ENV}, else ./class.json); owner-only",
    )
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")

    create = actions.add_parser("create", help="a key for each student of a roster CSV")
    create.add_argument("roster", help="CSV with a 'name' column; optional email, credits, api_key")
    create.add_argument("--url", help="the class sandbox (default: $DUBKIT_BASE_URL, else :8765)")
    create.add_argument("--credits", type=float, default=1000.0, help="credits per student")
    create.add_argument("--max-tasks", type=int, help="tasks one student may run at once")
    create.add_argument("--max-storage", type=size, help="uploaded bytes one student may keep")
    create.add_argument(
        "--service",
        action="store_true",
        help="the real service: the roster's api_key column gives the keys",
    )
    create.add_argument("--force", action="store_true", help="replace an existing class file")
    create.set_defaults(run=create_class)

    enrol = actions.add_parser("add", help="one more student")
    enrol.add_argument("name")
    enrol.add_argument("--email")
    enrol.add_argument("--credits", type=float)
    enrol.add_argument("--key", help="their key (a class on the service)")
    enrol.set_defaults(run=lambda a: _lever(a, "add"))

    for action, text in (
        ("remove", "take a student out (their key stops working)"),
        ("reset", "forget a student's work; credits back to what they were granted"),
        ("disable", "refuse every call with a student's key"),
        ("enable", "take a student's key back"),
    ):
        lever = actions.add_parser(action, help=text)
        lever.add_argument("name")
        lever.set_defaults(run=lambda a, action=action: _lever(a, action))

    topup = actions.add_parser("topup", help="add credits to a student's key")
    topup.add_argument("name")
    topup.add_argument("credits", type=float)
    topup.set_defaults(run=lambda a: _lever(a, "topup"))

    limits = actions.add_parser("limits", help="a student's quotas (0 lifts one)")
    limits.add_argument("name")
    limits.add_argument("--tasks", type=int, help="tasks running at once")
    limits.add_argument("--storage", type=size, help="uploaded bytes kept, e.g. 500MB")
    limits.set_defaults(run=lambda a: _lever(a, "limits"))

    show = actions.add_parser("show", help="every student: tasks, credits, last activity")
    show.add_argument("--csv", action="store_true")
    show.add_argument("--json", action="store_true")
    show.set_defaults(run=show_class)

    view = actions.add_parser("view", help="the teacher's view, served by Voila")
    view.add_argument("--port", type=int, default=8867)
    view.add_argument("--host", default="127.0.0.1")
    view.add_argument("--no-browser", action="store_true")
    view.set_defaults(run=view_class)


def create_class(args: argparse.Namespace) -> int:
    existing_file(args.roster, "roster")
    room = Classroom.create(
        args.roster,
        args.file,
        base_url=args.url,
        service=args.service,
        credits=args.credits,
        max_tasks=args.max_tasks,
        max_storage=args.max_storage,
        overwrite=args.force,
    )
    print(f"{room.path}: {len(room.students)} students on {room.base_url} (owner-only file)")
    return 0


def _open(args: argparse.Namespace) -> Classroom:
    path = class_file_path(args.file)
    if not path.exists():
        raise UsageError(f"--file: no class file at {path} (dubkit class create ROSTER first)")
    return Classroom.open(path)


def _lever(args: argparse.Namespace, action: str) -> int:
    room = _open(args)
    name = args.name
    if action == "add":
        room.add(name, email=args.email, credits=args.credits, api_key=args.key)
        print(f"added {name}")
        return 0
    if action == "remove":
        room.remove(name)
        print(f"removed {name}: their key no longer works")
        return 0
    if action == "limits" and args.tasks is None and args.storage is None:
        raise UsageError("limits: give --tasks, --storage or both")
    after = {
        "topup": lambda: room.topup(name, args.credits),
        "reset": lambda: room.reset(name),
        "disable": lambda: room.disable(name),
        "enable": lambda: room.enable(name),
        "limits": lambda: room.limits(name, tasks=args.tasks, storage=args.storage),
    }[action]()
    state = "disabled" if after.disabled else "enabled"
    print(
        f"{name}: {after.credits:g} credits, {state}, tasks at once: {after.max_tasks or 'any'}, "
        f"storage: {after.max_storage or 'any'}"
    )
    return 0


def show_class(args: argparse.Namespace) -> int:
    report = _open(args).report()
    if args.csv:
        print(report.to_csv(), end="")
    elif args.json:
        print_json([s.model_dump(by_alias=True) for s in report])
    else:
        print(table(report.rows(), CSV_COLUMNS))
    return 0


def view_class(args: argparse.Namespace) -> int:
    room = _open(args)
    room.report()  # a wrong file, an unreachable sandbox or a missing token: said here, in one line
    os.environ[CLASS_FILE_ENV] = str(room.path.resolve())  # the app's kernel reads it
    notebook = voila_app.app_notebook("class_view", APP_INTRO, APP_SOURCE)
    # The view holds the teacher's levers: on a shared machine (a hub) every user reaches
    # loopback ports, so only a browser with this token gets in.
    return voila_app.serve(
        notebook,
        port=args.port,
        host=args.host,
        no_browser=args.no_browser,
        needs="studio",
        token=secrets.token_urlsafe(24),
    )
