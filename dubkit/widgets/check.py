"""A dub's check, live: Enter or a click on a line of its timeline (or its row's button) plays
the line and opens the dub in the script editor, below.

>>> dubkit.CheckView(client, dub)        # dub.check() drawn, each line a control

One live-channel widget of plain HTML, so it works where the batch table and the script editor
do; saved notebooks keep the static check (:func:`dubkit.views.quality.check_html`).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from ..errors import DubkitError
from ..frontends.channel import Action, LiveHTML
from ..frontends.display import show
from ..results import DubbingResult, ScriptLine
from ..results.quality import DubCheck, Limits
from ..views.dubbing import line_player_html
from ..views.palette import error_html, muted
from ..views.quality import check_html
from ._client import sync_client
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
        client = sync_client(client)
        self._client, self.dub = client, dub
        self.report: DubCheck = dub.check(limits, cast=cast)
        self.editor: ScriptEditor | None = None
        self.opened = self.mended = ""  # the line opened; what its last mend did
        self._cell = CellContext()
        super().__init__()
        self.on_action("line", self._line)
        self.on_action("borrow", lambda act: self._mend(act, self.dub.borrow_silence))
        self.on_action("pace", lambda act: self._mend(act, lambda i: self.dub.set_speed(i, 1.0)))
        self._draw()

    def __repr__(self) -> str:
        return f"CheckView({self.report!r})"

    def fallback_html(self) -> str:
        return check_html(self.report)

    def _draw(self) -> None:
        self.value = (
            f"{check_html(self.report, live=True)}"
            f"<div class='dubkit-check-opened' role='status'>{self.opened}{self.mended}</div>"
        )

    def _line(self, act: Action) -> None:
        line = self.dub.line(act.key)
        checked = self.report.line(line.id)
        found = "; ".join(str(f) for f in checked.findings) or "nothing found"
        player = line_player_html(self.dub, line).replace("<audio ", "<audio autoplay ", 1)
        self.opened = (
            f"<p><b>Line {html.escape(line.id)}</b> ({html.escape(checked.verdict)}: "
            f"{html.escape(found)}) {muted('is playing; the script editor is below')}</p>"
            f"{player} {_mends(line.id)}"
        )
        self.mended = ""
        self._draw()
        if self.editor is None:
            self.editor = ScriptEditor(self._client, self.dub)
            self._cell.run(lambda: show(self.editor))

    def _mend(self, act: Action, mend: Callable[[str], ScriptLine]) -> None:
        """One of the common mends, on the dub's line: the editor's Re-dub speaks it."""
        try:
            line = mend(act.key)
            said = muted(
                f"line {html.escape(line.id)} now ends at {line.end:.2f} s; press Re-dub "
                "changed lines in the script editor to hear it"
            )
        except DubkitError as exc:
            said = error_html(str(exc))
        self.mended = f"<p class='dubkit-mended'>{said}</p>"
        self._draw()


def _mends(line_id: str) -> str:
    """The common mends of a line that is squeezed: room from the silence after it, or its
    natural pace (a longer slot). A shorter text is the editor's translation field."""
    key = html.escape(line_id)
    mends = (
        ("borrow", "Borrow the silence after it", f"Let line {key} borrow the silence after it"),
        ("pace", "Natural pace", f"Speak line {key} at its natural pace"),
    )
    return "".join(
        f"<button type='button' data-dubkit-action='{action}' data-dubkit-key='{key}' "
        f"aria-label='{name}'>{label}</button> "
        for action, label, name in mends
    )
