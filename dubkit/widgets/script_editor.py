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
from typing import Any, Protocol

import ipywidgets as widgets

from ..errors import DubkitError
from ..resources.dubbing import DubbingResource
from ..resources.voices import VoicesResource
from ..results import DubbingResult, Redub, ScriptLine
from ..views.dubbing import compare_html, line_player_html
from .media import compare

_ROW = widgets.Layout(align_items="center", grid_gap="6px")
_SHOWN = ("start", "end", "speaker", "source_text", "translation", "voice_id", "provider")


class RedubbingClient(Protocol):
    """What the editor uses of a :class:`dubkit.Client`."""

    dubbing: DubbingResource
    voices: VoicesResource


class _Row:
    """One line's widgets."""

    def __init__(self, line: ScriptLine, voices: list[tuple[str, str]], player: str) -> None:
        self.line = line
        self.translation = widgets.Text(
            value=line.translation, layout=widgets.Layout(width="320px")
        )
        self.voice = widgets.Dropdown(
            options=voices, value=line.voice_id, layout=widgets.Layout(width="220px")
        )
        self.box = widgets.HBox(
            [
                widgets.HTML(f"<code>{line.start:.2f}–{line.end:.2f}</code>"),
                widgets.HTML(f"<b>{html.escape(line.speaker)}</b>"),
                widgets.HTML(
                    f"<span title='{html.escape(line.source_text)}'>"
                    f"{html.escape(line.source_text[:48])}</span>",
                    layout=widgets.Layout(width="260px"),
                ),
                self.translation,
                self.voice,
                widgets.HTML(player),
            ],
            layout=_ROW,
        )

    def apply(self, dub: DubbingResult) -> None:
        """Put this row's values into the dub's line (nothing is sent)."""
        translation, voice = self.translation.value, self.voice.value
        if translation != self.line.translation or voice != self.line.voice_id:
            dub.edit(self.line.id, translation=translation, voice=voice)


class ScriptEditor(widgets.VBox):
    """Edit ``dub``'s lines, re-dub the changed ones, compare (see the module docstring)."""

    def __init__(self, client: RedubbingClient, dub: DubbingResult, *, voices: int = 8) -> None:
        self._client, self.dub = client, dub
        self.redub: Redub | None = None
        presets = client.voices.presets(locale=dub.target_locale or None, limit=voices)
        choices = {line.voice_id: f"{line.voice_name} · {line.provider}" for line in dub.script}
        for preset in presets:
            if preset.voice_id:
                choices.setdefault(
                    preset.voice_id, f"{preset.display_name} · {preset.provider} (preset)"
                )
        options = [(label, voice_id) for voice_id, label in choices.items()]
        self.rows = [_Row(line, options, line_player_html(dub, line)) for line in dub.script]
        self.button = widgets.Button(
            description="Re-dub changed lines", button_style="primary", icon="refresh"
        )
        self.button.on_click(lambda _: self.redub_changes())
        self.status = widgets.HTML("<small>Change a translation or a voice, then Re-dub.</small>")
        self.result = widgets.Output()
        super().__init__([*(row.box for row in self.rows), self.button, self.status, self.result])

    def redub_changes(self) -> Redub | None:
        """Apply the grid's edits to the dub and re-dub; what the button does."""
        for row in self.rows:
            row.apply(self.dub)
        if not self.dub.edited():
            self.status.value = "<small>Nothing changed yet.</small>"
            return None
        self.status.value = "<small>Re-dubbing…</small>"
        try:
            self.redub = self._client.dubbing.redub(self.dub, progress=False)
        except DubkitError as exc:
            self.status.value = f"<small style='color:#cf222e'>{html.escape(str(exc))}</small>"
            return None
        self.status.value = f"<small>{html.escape(self.redub.notices[0])}</small>"
        self.result.clear_output()
        with self.result:
            from IPython.display import display

            display(compare(self.dub, self.redub))
        return self.redub

    def __repr__(self) -> str:
        return f"ScriptEditor({len(self.rows)} lines, {self.dub.target_locale})"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        shown = [self.redub] if self.redub is not None else []
        table = self.dub.script.to_frame()[list(_SHOWN)].to_html(index=False)
        bundle["text/html"] = table + (compare_html([self.dub, *shown]) if shown else "")
        return bundle
