"""Finding the task of a create whose answer never reached the ledger.

A row is ``sending`` from just before its create leaves until its task id is written. If the
process dies in between, or the answer is lost (the transport's retry with the same key is
refused with 409), the service may hold a task the ledger does not know. Sending the create
again with a *new* key would pay twice; so the row's task is looked for first:

1. among the key's dub tasks (``tasks/list``) created since the row's ``sent_at`` (less
   :data:`CLOCK_SKEW`) that no row of the ledger has recorded. The batch sends one create at
   a time (the ledger's create lock), so in the usual case exactly one such task exists;
2. where several are left (another create lost at about the same time, or dubs made by hand
   on the same key), by what their details say: the target locale of a finished dub, and the
   material it was made from where the service names it;
3. by the webhook: the create's ``extraData`` carries the row's idempotency key, echoed in
   its event (:meth:`dubkit.webhooks.WebhookEvent.idempotency_key`), when a receiver runs.

The interface's task records carry no ``extraData`` (only the webhook echoes it), which is why
1 and 2 exist. When nothing is found, the create is sent again with the row's *same* key: a
service that never got it does the work once; one that did answers 409, and the row stays
``unresolved`` (counted as charged) until its task shows up, never created a second time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from ..results.task import parse_time
from ..schema import DUBBING
from .rows import Row

CLOCK_SKEW = 120.0  # seconds this machine's clock may be off the service's


class TaskLister(Protocol):
    def iterate(self, *, task_type: str | None = None, page_size: int = 100) -> Any: ...


class TaskDetails(Protocol):
    def __call__(self, task_id: str) -> dict[str, Any] | None: ...


def candidates(tasks: TaskLister, row: Row, known: set[str]) -> list[dict[str, Any]]:
    """Dub tasks of this key created since ``row`` was sent that no row has recorded, oldest
    first. Pages are read newest first (the order the service lists them in); the walk stops
    at the first page wholly older than the row, when the pages are in that order."""
    since = (row.sent_at or 0.0) - CLOCK_SKEW
    found: list[dict[str, Any]] = []
    for task_type in DUBBING.task_types:
        page: list[float | None] = []
        for record in tasks.iterate(task_type=task_type, page_size=100):
            created = parse_time(record.get("createdAt"))
            if record.get("taskId") not in known and (created is None or created >= since):
                found.append(record)
            page.append(created)
            if len(page) == 100:
                if _older_page(page, since):
                    break
                page = []
    return sorted(found, key=lambda r: parse_time(r.get("createdAt")) or 0.0)


def _older_page(stamps: list[float | None], since: float) -> bool:
    """A page listed newest first whose every task is older than ``since``."""
    known = [s for s in stamps if s is not None]
    if len(known) < len(stamps):
        return False
    newest_first = all(a >= b for a, b in zip(known, known[1:]))
    return newest_first and max(known) < since


def narrowed(
    found: Iterable[dict[str, Any]], row: Row, material_id: str | None, details: TaskDetails
) -> list[str]:
    """The ids of ``found`` whose details do not rule them out for ``row``: another target
    locale, another material (where the service says so)."""
    kept = []
    for record in found:
        task_id = str(record.get("taskId") or "")
        result = details(task_id) or {}
        target = _target_of(result)
        source = (
            (result.get("source") or {}).get("materialId") if isinstance(result, dict) else None
        )
        if target is not None and target != row.locale:
            continue
        if source is not None and material_id is not None and source != material_id:
            continue
        kept.append(task_id)
    return kept


def _target_of(result: dict[str, Any]) -> str | None:
    """The locale a finished dub was made in, from its scripts (None while it runs)."""
    scripts = result.get("asrScripts") or {}
    language = scripts.get("language") if isinstance(scripts, dict) else None
    if isinstance(language, dict) and isinstance(language.get("target"), str):
        return str(language["target"])
    lines = (result.get("translatedScripts") or {}).get("result") or []
    if lines and isinstance(lines[0], dict) and isinstance(lines[0].get("locale"), str):
        return str(lines[0]["locale"])
    return None


def find(
    tasks: TaskLister, details: TaskDetails, row: Row, known: set[str], material_id: str | None
) -> list[str]:
    """The ids of the tasks that may be ``row``'s: one is its task; none, none exists yet;
    several, it cannot be told yet (wait for their ends, or the webhook)."""
    found = candidates(tasks, row, known)
    if len(found) <= 1:
        return [str(r.get("taskId")) for r in found]
    return narrowed(found, row, material_id, details)
