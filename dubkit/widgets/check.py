"""A dub's check, live: Enter or a click on a line of its timeline (or its row's button) plays
the line and opens the dub in the script editor, below.

>>> dubkit.CheckView(client, dub)        # dub.check() drawn, each line a control

One live-channel widget of plain HTML, so it works where the batch table and the script editor
do; saved notebooks keep the static check (:func:`dubkit.views.quality.check_html`).
"""

from __future__ import annotations

import html
from typing import Any

from ..frontends.channel import Action, LiveHTML
from ..frontends.display import show
from ..results import DubbingResult
from ..results.quality import DubCheck, Limits
from ..views.dubbing import line_player_html
from ..views.palette import muted
from ..views.quality import check_html
from ._threads import CellContext
from .script_editor import RedubbingClient, ScriptEditor


class CheckView(LiveHTML):
    """``dub.check()`` drawn, each line a control that plays it and opens the script editor."""

    def __init__(
        self,
        client: RedubbingClient,
        dub: DubbingResult,
        limits: Limits | None = None,
        *,
        cast: Any = None,
    ) -> None:
        self._client, self.dub = client, dub
        self.report: DubCheck = dub.check(limits, cast=cast)
        self.editor: ScriptEditor | None = None
        self.opened = ""
        self._cell = CellContext()
        super().__init__()
        self.on_action("line", self._line)
        self._draw()

    def __repr__(self) -> str:
        return f"CheckView({self.report!r})"

    def fallback_html(self) -> str:
        return check_html(self.report)

    def _draw(self) -> None:
        self.value = (
            f"{check_html(self.report, live=True)}"
            f"<div class='dubkit-check-opened' role='status'>{self.opened}</div>"
        )

    def _line(self, act: Action) -> None:
        line = self.dub.line(act.key)
        checked = self.report.line(line.id)
        found = "; ".join(str(f) for f in checked.findings) or "nothing found"
        player = line_player_html(self.dub, line).replace("<audio ", "<audio autoplay ", 1)
        self.opened = (
            f"<p><b>Line {html.escape(line.id)}</b> ({html.escape(checked.verdict)}: "
            f"{html.escape(found)}) {muted('is playing; the script editor is below')}</p>"
            f"{player}"
        )
        self._draw()
        if self.editor is None:
            self.editor = ScriptEditor(self._client, self.dub)
            self._cell.run(lambda: show(self.editor))
