"""A dub's script as an editable grid: change lines, re-dub them, see the new video by the old.

>>> editor = ScriptEditor(client, dub)          # a row per line: time, speaker, source,
>>> editor                                      # translation, voice, and its dubbed line

Each row's translation and voice can be changed; "Re-dub changed lines" applies the edits to
``dub`` (:meth:`DubbingResult.edit`), calls ``client.dubbing.redub`` and shows the original, the
service's dub and the re-dub side by side. A bad edit (an end before its start, an unknown
voice...) is said in the status line; nothing was spoken. Saved notebooks keep the static HTML.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from ..errors import DubkitError
from ..frontends.channel import Action, LiveHTML
from ..resources.dubbing import DubbingResource
from ..resources.voices import VoicesResource
from ..results import DubbingResult, Redub, ScriptLine
from ..views.dubbing import compare_html, line_player_html
from ..views.palette import error_html, muted
from ._client import sync_client

_SHOWN = ("start", "end", "speaker", "source_text", "translation", "voice_id", "provider")


class RedubbingClient(Protocol):
    """What the editor uses of a :class:`dubkit.Client`."""

    dubbing: DubbingResource
    voices: VoicesResource


class Row:
    """One line's editable values: ``translation`` and ``voice`` (one of ``options``)."""

    def __init__(self, line: ScriptLine, options: list[tuple[str, str]]) -> None:
        self.line, self.options = line, options
        self.translation, self.voice = line.translation, line.voice_id

    def apply(self, dub: DubbingResult) -> None:
        """Put this row's values into the dub's line (nothing is sent)."""
        if self.translation != self.line.translation or self.voice != self.line.voice_id:
            dub.edit(self.line.id, translation=self.translation, voice=self.voice)

    def html(self, me: str, player: str) -> str:
        line, ident = self.line, f"{me}-line-{html.escape(self.line.id)}"
        voices = "".join(
            f"<option value='{html.escape(v)}'{' selected' if v == self.voice else ''}>"
            f"{html.escape(label)}</option>"
            for label, v in self.options
        )
        return (
            f"<tr data-dubkit-part='{ident}'><td>{line.start:.2f}–{line.end:.2f}</td>"
            f"<td><b>{html.escape(line.speaker)}</b></td>"
            f"<td style='max-width:260px'>{html.escape(line.source_text)}</td>"
            f"<td><input id='{ident}-translation' name='translation-{html.escape(line.id)}' "
            f"aria-label='translation of line {html.escape(line.id)}' size='36' "
            f"value='{html.escape(self.translation)}'></td>"
            f"<td><select id='{ident}-voice' name='voice-{html.escape(line.id)}' "
            f"aria-label='voice of line {html.escape(line.id)}'>{voices}</select></td>"
            f"<td>{player}</td></tr>"
        )


def _role_choices(cast: Any, locale: str | None) -> dict[str, str]:
    """A cast's roles first in each line's voice menu: "Alice (role) · Story", its voice in
    the dub's locale, so a line is re-voiced by role rather than by a raw id."""
    found: dict[str, str] = {}
    for role in cast:
        voice = cast.voice(role.name, locale)
        found.setdefault(voice.voice_id, f"{role.name} (role) · {voice.name or voice.voice_id}")
    return found


class ScriptEditor(LiveHTML):
    """Edit ``dub``'s lines, re-dub the changed ones, compare (see the module docstring)."""

    def __init__(
        self,
        client: RedubbingClient,
        dub: DubbingResult,
        *,
        voices: int = 8,
        cast: Iterable[Any] | None = None,
        on_redub: Callable[[Redub], object] | None = None,
    ) -> None:
        client = sync_client(client)
        self._client, self.dub = client, dub
        self.redub: Redub | None = None
        self._on_redub = on_redub  # told of each re-dub made (a batch records it as a revision)
        presets = client.voices.presets(locale=dub.target_locale or None, limit=voices)
        choices = _role_choices(cast, dub.target_locale) if cast is not None else {}
        for line in dub.script:
            choices.setdefault(line.voice_id, f"{line.voice_name} · {line.provider}")
        for preset in presets:
            if preset.voice_id:
                choices.setdefault(
                    preset.voice_id, f"{preset.display_name} · {preset.provider} (preset)"
                )
        options = [(label, voice_id) for voice_id, label in choices.items()]
        self.rows = [Row(line, options) for line in dub.script]
        self._players = {line.id: line_player_html(dub, line) for line in dub.script}
        self.status = muted("Change a translation or a voice, then Re-dub.")
        super().__init__()
        self.on_action("redub", self._pressed)
        self._draw()

    def redub_changes(self) -> Redub | None:
        """Apply the grid's edits to the dub and re-dub; what the button does."""
        for row in self.rows:
            row.apply(self.dub)
        if not self.dub.edited():
            self._say(muted("Nothing changed yet."))
            return None
        self._say(muted("Re-dubbing…"))
        try:
            self.redub = self._client.dubbing.redub(self.dub, progress=False)
        except DubkitError as exc:
            self._say(error_html(str(exc)))
            return None
        said = self.redub.notices[0]
        if self._on_redub is not None:
            try:
                extra = self._on_redub(self.redub)
            except DubkitError as exc:
                self._say(error_html(str(exc)))
                return self.redub
            said += f"; {extra}" if isinstance(extra, str) and extra else ""
        self._say(muted(html.escape(said)))
        return self.redub

    def _pressed(self, act: Action) -> None:
        for row in self.rows:
            row.translation = str(act.fields.get(f"translation-{row.line.id}", row.translation))
            row.voice = str(act.fields.get(f"voice-{row.line.id}", row.voice))
        self.redub_changes()

    def _say(self, status: str) -> None:
        self.status = status
        self._draw()

    def _draw(self) -> None:
        me = self.model_id[:8]
        rows = "".join(row.html(me, self._players[row.line.id]) for row in self.rows)
        compared = compare_html([self.dub, self.redub]) if self.redub is not None else ""
        self.value = (
            "<table class='dubkit-script-editor' data-dubkit-part='rows'><thead><tr>"
            "<th>time (s)</th><th>speaker</th><th>source</th><th>translation</th>"
            f"<th>voice</th><th>dub</th></tr></thead><tbody>{rows}</tbody></table>"
            f"<button type='button' id='{me}-redub' data-dubkit-action='redub'>"
            "Re-dub changed lines</button>"
            f"<div role='status' class='dubkit-editor-status' data-dubkit-part='status'>{self.status}</div>"
            f"<div class='dubkit-editor-result'>{compared}</div>"
        )

    def __repr__(self) -> str:
        return f"ScriptEditor({len(self.rows)} lines, {self.dub.target_locale})"

    def fallback_html(self) -> str:
        shown = [self.redub] if self.redub is not None else []
        table = self.dub.script.to_frame()[list(_SHOWN)].to_html(index=False)
        return table + (compare_html([self.dub, *shown]) if shown else "")
