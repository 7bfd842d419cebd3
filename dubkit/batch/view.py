"""The batch's live table: the ledger read every second and drawn while the batch runs, and
every few seconds after (a review, or a revision another call makes, still shows).

One live-channel widget of plain HTML (it refreshes in JupyterLab, Notebook 7, Voilà, VS Code,
Colab and marimo). The summary line is a polite live region that says what changed once ("12
of 36 dubbed, 1 failed"); a finished row has buttons to compare its dub with the original and
to open its script editor, named by the row. When the batch ends its last picture is written
into the saved output, so a saved notebook shows the table as it ended.
"""

from __future__ import annotations

import html
import threading
from pathlib import Path
from typing import Any, Protocol

from ..errors import DubkitError
from ..frontends.channel import Action, LiveHTML
from ..frontends.display import show
from ..views.batch import batch_table_html
from ..views.palette import error_html, muted
from ..widgets._threads import CellContext, settle_later, start_cell_thread
from .rows import Row

IDLE_REFRESH = 3.0  # seconds between looks at an ended batch's ledger


class ShownBatch(Protocol):
    """What the view reads of a :class:`~dubkit.batch.DubbingBatch`."""

    out: Path

    @property
    def rows(self) -> list[Row]: ...
    @property
    def done(self) -> bool: ...
    @property
    def running(self) -> bool: ...
    def row(self, file: str, locale: str | None = None) -> Row: ...
    def result(self, file: str, locale: str | None = None) -> Any: ...
    def edit(self, file: str, locale: str | None = None) -> Any: ...
    def qa(self) -> dict[str, str]: ...


class BatchView(LiveHTML):
    """The live table of a :class:`~dubkit.batch.DubbingBatch`."""

    def __init__(self, batch: ShownBatch, *, refresh: float = 1.0) -> None:
        self.batch, self.interval = batch, refresh
        self.opened = ""  # the side-by-side view of the row last compared
        self.note = ""
        self._settled = ""  # the picture last written into the saved output
        self._stop = threading.Event()
        self._cell = CellContext()
        super().__init__()
        self.on_action("compare", self._compare)
        self.on_action("edit", self._edit)
        self._draw()
        self._thread = start_cell_thread(self._refresh, name="dub-batch-view")

    def __repr__(self) -> str:
        return f"BatchView({self.batch!r})"

    def _table(self, live: bool) -> str:
        title = f"Dubbing batch {self.batch.out.name}"
        return batch_table_html(
            self.batch.rows,
            live=live,
            me=self.model_id[:8],
            title=title,
            note=self.note,
            qa=self.batch.qa(),
        )

    def _draw(self) -> None:
        self.value = (
            f"<div class='dubkit-batch-view' data-dubkit-part='{self.model_id[:8]}-table'>"
            f"{self._table(live=True)}</div>"
            f"<div class='dubkit-batch-opened'>{self.opened}</div>"
        )

    def fallback_html(self) -> str:
        return self._table(live=False)

    def _refresh(self) -> None:
        """Draw the ledger every ``interval`` while the batch runs, then every few seconds
        (a review, a revision made by another call or process still shows); each picture of
        an ended batch that differs from the last one saved is written into the saved output."""
        while not self._stop.wait(self.interval if self.batch.running else IDLE_REFRESH):
            try:
                self._cell.run(self._draw)
            except Exception as exc:  # shown, and the view keeps refreshing
                self.note = error_html(f"refresh failed: {type(exc).__name__}: {exc}")
            if self.batch.done and not self.batch.running:
                self._settle_if_changed()

    def _settle_if_changed(self) -> None:
        picture = self.fallback_html()
        if picture != self._settled:
            self._settled = picture
            settle_later(self, self._cell)

    def ended(self) -> None:
        """The batch's run has ended (``wait()`` returned): draw it now and write the picture
        into the saved output, from the waiting cell, before a notebook can end."""
        self._draw()
        self._settle_if_changed()

    # -- a finished row's buttons
    def _row_of(self, act: Action) -> Any:
        file, _, locale = act.key.partition("|")
        return self.batch.row(file, locale)

    def _compare(self, act: Action) -> None:
        try:
            row = self._row_of(act)
            dub = self.batch.result(row.file_name, row.locale)
            self.opened = f"<h4>{html.escape(row.name)}</h4>{dub._repr_html_()}"
        except DubkitError as exc:
            self.opened = error_html(str(exc))
        self._draw()

    def _edit(self, act: Action) -> None:
        try:
            row = self._row_of(act)
            editor = self.batch.edit(row.file_name, row.locale)
        except DubkitError as exc:
            self.opened = error_html(str(exc))
            self._draw()
            return
        self.opened = muted(f"the script editor of {html.escape(row.name)} is below the table")
        self._draw()
        self._cell.run(lambda: show(editor))

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self.stop()
        super().close()
