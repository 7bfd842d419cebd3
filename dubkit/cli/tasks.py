"""``dubkit tasks``: list, show, wait for or delete the key's tasks."""

from __future__ import annotations

import argparse
from typing import Any

from .._util.words import count
from ._output import UsageError, client, print_json, table

COLUMNS = ("task_id", "task_type", "status", "created_at", "updated_at")


def add(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tasks = commands.add_parser(
        "tasks",
        help="list, show, wait for or delete tasks",
        description="dubkit tasks [list | show ID | wait ID | delete ID]; a bare "
        "dubkit tasks lists the newest 20.",
    )
    tasks.set_defaults(run=list_tasks, status=None, task_type=None, limit=20, json=False)
    actions = tasks.add_subparsers(dest="action", metavar="{list,show,wait,delete}")
    listing = actions.add_parser("list", help="the newest tasks first")
    listing.add_argument("--status", help="only this status, e.g. running")
    listing.add_argument("--type", dest="task_type", help="only this type, e.g. vt or tts")
    listing.add_argument("--limit", type=int, default=20, help="at most this many (20)")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(run=list_tasks)
    show = actions.add_parser("show", help="one task's status and result")
    show.add_argument("task_id")
    show.add_argument("--json", action="store_true")
    show.set_defaults(run=show_task)
    wait = actions.add_parser("wait", help="wait until a task ends")
    wait.add_argument("task_id")
    wait.add_argument("--timeout", type=float, default=3600, help="seconds (3600)")
    wait.add_argument("--json", action="store_true")
    wait.set_defaults(run=wait_task)
    delete = actions.add_parser("delete", help="delete a task")
    delete.add_argument("task_id")
    delete.set_defaults(run=delete_task)


def list_tasks(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise UsageError("--limit: at least 1")
    with client() as api:
        found = api.tasks.list(task_type=args.task_type, status=args.status, limit=args.limit)
    if args.json:
        print_json([task.to_wire() for task in found])
    else:
        print(table([task.model_dump() for task in found], COLUMNS))
        print(count(len(found), "task"))
    return 0


def _record(task: Any) -> dict[str, Any]:
    return {
        "taskId": task.task_id,
        "taskType": task.task_type,
        "status": task.status,
        "error": task.error_message,
        "result": task.raw_result,
    }


def _print(task: Any, as_json: bool) -> None:
    if as_json:
        print_json(_record(task))
        return
    print(f"{task.task_id}  {task.task_type or ''}  {task.status}")
    if task.error_message:
        print(f"error: {task.error_message}")


def show_task(args: argparse.Namespace) -> int:
    with client() as api:
        task = api.tasks.get(args.task_id)
    _print(task, args.json)
    return 0 if task.status != "failed" else 1


def wait_task(args: argparse.Namespace) -> int:
    with client() as api:
        task = api.tasks.get(args.task_id, fetch=False).wait(timeout=args.timeout)
    _print(task, args.json)
    return 0


def delete_task(args: argparse.Namespace) -> int:
    with client() as api:
        api.tasks.delete(args.task_id)
    print(f"deleted {args.task_id}")
    return 0
