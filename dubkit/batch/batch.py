"""A course dubbed as one batch: ``client.dubbing.batch(files, targets=[...], out=DIR)``.

>>> course = client.dubbing.batch("lessons/", targets=["fr-FR", "de-DE"], out="dubs")
>>> course                                # a live table: one row per file and locale
>>> course.wait().to_frame()              # status, credits (quote and charge), outputs
>>> course.approve("lesson01", "fr-FR"); course.flag("lesson02", "de-DE", "names mispronounced")
>>> course.report("dubs/report.html")     # every row, its voices, quote, charge and review

The same call run again (after a kernel restart, Ctrl-C, a crash) picks up where the ledger
stands: nothing uploaded twice, no task created twice. See :mod:`dubkit.batch`.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from ..errors import BatchOverBudgetError, ValidationError
from ..resources.dubbing import BATCH_SETTINGS, BatchOptions
from ..results.quality import Limits
from ..schema import prices
from ..views.batch import summary
from . import plan as planning
from . import report
from .checks import BatchCheck, check_rows, qa_of
from .ledger import LEDGER_FILE, Ledger, SQLiteLedger
from .plan import Plan, Source, spend_of
from .rows import Row, row_key
from .runner import Runner, Services, Settings, cancel_unstarted

if TYPE_CHECKING:
    import pandas as pd

    from .view import BatchView


class DubbingBatch:
    """Files × target locales, dubbed through one ledger (see the module docstring)."""

    def __init__(
        self,
        client: Services,
        ledger: Ledger,
        made: Plan,
        sources: dict[str, Source],
        drafts: dict[str, Any],
        out: Path,
        settings: Settings,
    ) -> None:
        self.client, self.ledger, self.plan, self.out = client, ledger, made, out
        self.keys = [r.key for r in made.rows]
        self._sources, self._drafts, self._settings = sources, drafts, settings
        self._runner: Runner | None = None
        self._lock = threading.Lock()
        self._views: list[BatchView] = []

    def __repr__(self) -> str:
        return f"DubbingBatch({self.out.name!r}: {summary(self.rows)}, {self.quote:g} credits)"

    # -- reading
    @property
    def rows(self) -> list[Row]:
        """Every row of this batch, as the ledger has it now."""
        wanted = set(self.keys)
        return [r for r in self.ledger.rows() if r.key in wanted]

    def row(self, file: str, locale: str | None = None) -> Row:
        """The row of ``file`` (its stem, or a path) into ``locale`` (may be left out when the
        batch has one locale)."""
        stem = Path(file).stem if ("/" in file or os.sep in file or "." in file) else file
        locales = sorted({r.locale for r in self.rows})
        if locale is None and len(locales) == 1:
            locale = locales[0]
        found = self.ledger.row(row_key(stem, locale or ""))
        if found is None or found.key not in self.keys:
            names = ", ".join(r.name for r in self.rows[:8])
            raise ValidationError("row", f"no row {stem!r} → {locale!r} in this batch ({names})")
        return found

    @property
    def quote(self) -> float:
        """What the whole batch costs: charged (or quoted where the service reports no
        charge) for rows that ran, quoted for the rest."""
        return sum(spend_of(r) for r in self.rows if r.status != "over budget")

    @property
    def spent(self) -> float:
        """Credits this batch may have been charged: every row with a task (or a create that
        may have been accepted), at its charge where known, else its quote."""
        return sum(spend_of(r) for r in self.rows if r.may_be_charged)

    @property
    def done(self) -> bool:
        """Every row has ended (dubbed, failed, cancelled or over budget)."""
        return all(r.ended for r in self.rows)

    @property
    def running(self) -> bool:
        """This process is working on the batch (its threads have not stopped)."""
        return self._runner is not None and not self._runner.finished.is_set()

    @property
    def finished(self) -> bool:
        """Every row dubbed and saved."""
        return all(r.status == "done" for r in self.rows)

    def to_frame(self) -> pd.DataFrame:
        """One row per file and locale: status, credits, elapsed, outputs, review."""
        return report.frame(self.rows, self.out, self.qa())

    # -- running
    def start(self) -> DubbingBatch:
        """Run the rows still to do, in background threads (``wait()`` waits for them)."""
        with self._lock:
            if self._runner is not None and not self._runner.finished.is_set():
                return self
            self._runner = Runner(
                self.client,
                self.ledger,
                self.keys,
                self._sources,
                self._drafts,
                self.out,
                self._settings,
            )
            self._runner.start()
        return self

    def wait(self, timeout: float | None = None) -> DubbingBatch:
        """Until every row has ended (dubbed, failed, cancelled or over budget), or
        ``timeout`` seconds; a failed row does not raise: see ``to_frame()``."""
        runner = self._runner
        if runner is not None:
            if not runner.join(timeout):
                raise TimeoutError(
                    f"the batch was still running after {timeout:g} s ({summary(self.rows)}); "
                    "call wait() again"
                )
            if runner.error is not None:
                raise runner.error
        for shown in self._views:
            shown.ended()
        return self

    def cancel(self) -> DubbingBatch:
        """Start no more rows; the running ones finish and are recorded. Calling ``start()``
        again (or the same batch call) picks up the rest."""
        if self._runner is not None:
            self._runner.cancel()
        cancel_unstarted(self.ledger, self.rows)
        return self

    def retry_failed(self) -> DubbingBatch:
        """Try every failed row again: a dub that failed is dubbed again (a new attempt: a new
        task, a new charge); one whose dub was made but not saved is only saved again."""
        for row in self.rows:
            if row.status == "failed" and self.ledger.claim(row.key):
                again = "saving" if row.outputs and row.task_id else "planned"
                try:
                    self.ledger.update(row, status=again, error=None)
                finally:
                    self.ledger.release(row.key)
        return self.start()

    # -- review
    def approve(self, file: str, locale: str | None = None, note: str | None = None) -> Row:
        """Mark a dubbed row approved (with an optional note)."""
        row = self.row(file, locale)
        if row.status != "done":
            raise ValidationError(
                "row", f"{row.name} is {row.word}, not dubbed: nothing to approve"
            )
        return self.ledger.update(row, review="approved", note=note)

    def flag(self, file: str, locale: str | None = None, note: str = "") -> Row:
        """Flag a row for another look, saying why."""
        if not isinstance(note, str) or not note.strip():
            raise ValidationError("note", "say what is wrong, e.g. 'names mispronounced'")
        return self.ledger.update(self.row(file, locale), review="flagged", note=note)

    def adopt(self, file: str, locale: str | None, task_id: str) -> Row:
        """Settle a row left ``unresolved`` (its create was accepted, and the service's task
        list could not tell its task from another alike): ``task_id`` is its task, which is
        then waited for and saved (``start()``, or the same call again)."""
        row = self.row(file, locale)
        if row.status != "unresolved":
            raise ValidationError("row", f"{row.name} is {row.word}: it has its task")
        if not self.ledger.claim(row.key):
            raise ValidationError("row", f"{row.name} is being worked on by another process")
        try:
            self.client.tasks.get(task_id)  # NotFoundError for a task this key does not have
            return self.ledger.update(row, status="running", task_id=task_id, error=None)
        finally:
            self.ledger.release(row.key)

    def result(self, file: str, locale: str | None = None) -> Any:
        """The dub of a row as a :class:`dubkit.DubbingResult` (side by side, its script)."""
        row = self.row(file, locale)
        if not row.task_id:
            raise ValidationError("row", f"{row.name} has no dub of the service's yet ({row.word})")
        task = self.client.tasks.get(row.task_id)
        return task.wait().result

    def redub(self, file: str, locale: str | None = None, dub: Any = None) -> Row:
        """Re-dub the lines edited in ``dub`` (``batch.result(...)`` changed with
        ``dub.edit(...)``) and keep it as the row's next revision, with its cost (the quote of
        the lines spoken anew) and its files under the row's next names."""
        row = self.row(file, locale)
        if dub is None:
            raise ValidationError("dub", "the row's dub, edited: batch.result(file, locale)")
        return self.record_redub(row, self.client.dubbing.redub(dub, progress=False))

    def record_redub(self, row: Row, made: Any) -> Row:
        """Keep a re-dub of ``row`` (``client.dubbing.redub``'s result) as its next revision."""
        texts = [line.translation for line in made.script if line.id in set(made.redubbed)]
        cost = float(prices.speech_quote([texts]).credits) if texts else 0.0
        revision = max(r.revision for r in self.ledger.history(row.key)) + 1
        stem = f"{row.file_name}.r{revision}"
        files = {}
        for kind, path in made.files.items():
            name = f"{row.locale}/{stem}{Path(path).suffix}"
            target = self.out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            files[kind] = name
        again = replace(
            row,
            revision=revision,
            kind="redub",
            status="done",
            quote=cost,
            estimate=True,
            charged=None,
            outputs=files,
            review=None,
            note=f"re-dub of revision {row.revision}: lines {', '.join(made.redubbed)}",
            started_at=time.time(),
            ended_at=time.time(),
        )
        return self.ledger.add(again)

    def edit(self, file: str, locale: str | None = None) -> Any:
        """The row's script editor: a re-dub made there becomes the row's next revision."""
        from ..widgets import ScriptEditor

        row = self.row(file, locale)
        return ScriptEditor(
            self.client,  # type: ignore[arg-type]
            self.result(file, locale),
            on_redub=lambda made: f"kept as revision {self.record_redub(row, made).revision}",
        )

    def check(self, limits: Limits | None = None, *, cast: Any = None) -> BatchCheck:
        """Every dubbed row's dub checked (:meth:`dubkit.DubbingResult.check`; ``cast``: its
        glossary across every dub); each verdict kept for the table's QA column."""
        return check_rows(
            self.rows, self.ledger, lambda row: self.result(row.file_name, row.locale), limits, cast
        )

    def qa(self) -> dict[str, str]:
        """Each row's last check verdict, by row key (what the QA column shows)."""
        return qa_of(self.rows, self.ledger)

    def report(self, path: str | os.PathLike[str]) -> Path:
        """The course report, CSV or HTML by the suffix: every file and locale, its voices,
        quote and charge, status, review and check."""
        return report.write(self.rows, self.out, Path(path), self.qa())

    # -- showing
    def view(self) -> BatchView:
        """The live table (refreshes itself until every row has ended)."""
        from .view import BatchView

        shown = BatchView(self)
        self._views.append(shown)
        return shown

    def _repr_html_(self) -> str:
        from ..views.batch import batch_table_html

        return batch_table_html(self.rows, live=False, qa=self.qa())

    def _ipython_display_(self, **kwargs: Any) -> None:
        from ..frontends.display import show

        show(self.view())

    def _display_(self) -> Any:
        return self.view()

    def close(self) -> None:
        for shown in self._views:
            shown.stop()
        self.ledger.close()


def start_batch(
    client: Services,
    files: Any,
    *,
    targets: Any,
    out: str | os.PathLike[str],
    **options: Unpack[BatchOptions],
) -> DubbingBatch:
    """``client.dubbing.batch`` (its docstring says what each keyword does): plan, check and
    quote every row, then, unless ``start=False``, run them."""
    given: dict[str, Any] = dict(options)
    run = {name: given.pop(name) for name in BATCH_SETTINGS & set(given)}  # the rest: the dub's
    ledger, budget = run.get("ledger"), run.get("budget")
    over_budget = run.get("over_budget", "raise")
    settings = Settings(run.get("max_in_flight", 4), run.get("retries", 2))
    folder = Path(out).expanduser()
    _check_settings(settings.max_in_flight, settings.retries, budget, over_budget)
    checked = planning.check_targets(targets, strict=run.get("strict_locales", True))
    drafts = planning.drafts_for(client.dubbing, checked, given)
    named = planning.expand(files)  # a missing file is refused here, before the ledger
    folder.mkdir(parents=True, exist_ok=True)
    kept = open_ledger(ledger, folder, _batch_name(folder, ledger, run.get("name")))
    try:
        sources = {s.md5: s for s in planning.measure(named, kept)}
        made = planning.plan(list(sources.values()), drafts, kept)
        _reopen(kept, made)
        if budget is not None:
            _hold_to(kept, made, budget, over_budget)
    except BaseException:
        kept.close()
        raise
    batch = DubbingBatch(client, kept, made, sources, drafts, folder, settings)
    return batch.start() if run.get("start", True) else batch


def read_rows(
    out: str | os.PathLike[str],
    *,
    ledger: str | os.PathLike[str] | None = None,
    name: str | None = None,
) -> list[Row]:
    """The rows of the batch whose outputs go to ``out``, as its ledger has them (nothing is
    sent): what ``dubkit dub --status DIR`` prints."""
    folder = Path(out).expanduser()
    if ledger is None and not (folder / LEDGER_FILE).is_file():
        raise FileNotFoundError(f"{folder}: no dubbing batch here (no {LEDGER_FILE})")
    kept = open_ledger(ledger, folder, _batch_name(folder, ledger, name))
    try:
        return kept.rows()
    finally:
        kept.close()


def _batch_name(folder: Path, ledger: str | os.PathLike[str] | None, name: str | None) -> str:
    """A shared ledger holds many batches, each named (by default for its output folder);
    the ledger in the output folder holds one."""
    if name is not None:
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("name", f"a batch's name, e.g. 'course-2027', got {name!r}")
        return name
    return folder.resolve().name if ledger is not None else "batch"


def _check_settings(in_flight: int, retries: int, budget: float | None, over: str) -> None:
    if not isinstance(in_flight, int) or in_flight < 1:
        raise ValidationError("max_in_flight", f"a whole number of tasks >= 1, got {in_flight!r}")
    if not isinstance(retries, int) or retries < 0:
        raise ValidationError("retries", f"a whole number >= 0, got {retries!r}")
    if budget is not None and not (isinstance(budget, (int, float)) and budget >= 0):
        raise ValidationError("budget", f"credits >= 0, got {budget!r}")
    if over not in ("raise", "skip"):
        raise ValidationError("over_budget", f"'raise' or 'skip', got {over!r}")


def _reopen(ledger: Ledger, made: Plan) -> None:
    """Rows a cancel or a budget left unstarted are to be dubbed by this call."""
    for i, row in enumerate(made.rows):
        if row.status in ("cancelled", "over budget") and ledger.claim(row.key):
            try:
                made.rows[i] = ledger.update(ledger.fresh(row), status="planned")
            finally:
                ledger.release(row.key)


def _hold_to(ledger: Ledger, made: Plan, budget: float, over_budget: str) -> None:
    """Refuse (``raise``, before any upload) or leave unstarted (``skip``) the rows, in the
    batch's order, that the budget cannot cover after what the batch has already spent."""
    spent = sum(spend_of(r) for r in made.rows if r.may_be_charged)
    left, over = budget - spent, []
    for row in made.rows:
        if row.status != "planned":
            continue
        if row.quote <= left + 1e-9:
            left -= row.quote
        else:
            over.append(row)
    if not over:
        return
    if over_budget == "raise":
        raise BatchOverBudgetError(
            budget, spent, sum(r.quote for r in over), [f"{r.name} ({r.quote:g})" for r in over]
        )
    for row in over:
        ledger.update(row, status="over budget", error=f"over the budget of {budget:g} credits")


def open_ledger(where: str | os.PathLike[str] | None, out: Path, batch: str) -> Ledger:
    """The ledger ``where`` names: None for ``<out>/dubkit-batch.sqlite3``, a file path, or a
    ``postgresql://`` URL (rows of batch ``batch``)."""
    if where is None:
        return SQLiteLedger(out / LEDGER_FILE, batch)
    text = os.fspath(where)
    if text.split("://", 1)[0].lower() in ("postgresql", "postgres"):
        from .postgres import PostgresLedger  # psycopg loads only for a PostgreSQL ledger

        return PostgresLedger(text, batch)
    if "://" in text:
        raise ValidationError(
            "ledger", f"expected a file path or a postgresql:// URL, got a {text.split(':')[0]} URL"
        )
    return SQLiteLedger(text, batch)
