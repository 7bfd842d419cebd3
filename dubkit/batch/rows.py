"""One row of a batch: a file dubbed into one locale, at one revision, and where it stands.

A row is what the ledger keeps and what every view of a batch shows. Its ``status`` moves

    planned → sending → running → saving → done
                 ↘ unresolved ↗        ↘ failed (kept with its error; retried if transient)

``sending`` is written *before* the create leaves (with its idempotency key and tag), and
``running`` with the task id once the service answered, so a crash between the two leaves a
row whose task is found again rather than created a second time (:mod:`dubkit.batch.recovery`).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..views.batch import status_words

# Rows in these states are finished with, for now: nothing more happens without a person.
ENDED = frozenset({"done", "failed", "cancelled", "over budget"})
# A task exists for the row (or may): its cost is counted as spent.
PAID = frozenset({"sending", "unresolved", "running", "saving", "done"})
IN_FLIGHT = frozenset({"sending", "unresolved", "running"})


@dataclass
class Row:
    """A file into a locale, one revision of it (the newest is the row's current one)."""

    key: str  # "<file stem>|<locale>"
    revision: int
    seq: int  # the row's place in the batch
    file_name: str  # the file's stem: the outputs are named after it
    file_path: str
    file_hash: str  # MD5 hex, the upload's dedupe key
    locale: str
    fingerprint: str  # what the dub is made from: a change makes a new revision
    settings: dict[str, Any] = field(default_factory=dict)  # voices, options: for the report
    status: str = "planned"
    attempt: int = 1
    idempotency_key: str | None = None
    tag: str | None = None  # what the create's extraData carries (batch, row, revision)
    sent_at: float | None = None
    task_id: str | None = None
    task_type: str | None = None
    quote: float = 0.0
    estimate: bool = False
    charged: float | None = None  # as the service reported it (the sandbox does; else None)
    error: str | None = None
    transient: bool = False
    started_at: float | None = None
    ended_at: float | None = None
    outputs: dict[str, str] = field(default_factory=dict)  # kind -> path (relative to out)
    worker: str | None = None  # who last worked on it (host:pid)
    review: str | None = None  # approved / flagged
    note: str | None = None
    kind: str = "dub"  # "dub", or "redub" (made from the script editor)

    @property
    def mark(self) -> str:
        return status_words(self.status)[0]

    @property
    def word(self) -> str:
        return status_words(self.status)[1]

    @property
    def may_be_charged(self) -> bool:
        """A task exists for the row's attempt (or may: a create whose answer was lost), so
        its cost counts as spent; a failed one too, since the interface does not say whether a
        failed task is refunded (the sandbox refunds it)."""
        return self.status in PAID or self.task_id is not None

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    @property
    def elapsed(self) -> float | None:
        """Seconds from the create to the end (or to ``now`` while it runs)."""
        if self.started_at is None:
            return None
        return (self.ended_at or time.time()) - self.started_at

    @property
    def name(self) -> str:
        """``talk → fr-FR``: how a person names the row."""
        return f"{self.file_name} → {self.locale}"

    def to_record(self) -> dict[str, Any]:
        record = asdict(self)
        record["settings"] = json.dumps(self.settings, sort_keys=True)
        record["outputs"] = json.dumps(self.outputs, sort_keys=True)
        record["estimate"] = int(self.estimate)
        record["transient"] = int(self.transient)
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Row:
        known = {f.name for f in fields(cls)}
        values = {name: value for name, value in record.items() if name in known}
        values["settings"] = json.loads(values.get("settings") or "{}")
        values["outputs"] = json.loads(values.get("outputs") or "{}")
        values["estimate"] = bool(values.get("estimate"))
        values["transient"] = bool(values.get("transient"))
        return cls(**values)


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Row))


def row_key(file_name: str, locale: str) -> str:
    return f"{file_name}|{locale}"
