"""The studio's "one voice, several deliveries" section: its controls, status line and cards.

Apart from :mod:`.app` because it is a panel of its own: a voice picker fed by the last round,
emotion and speed toggles, the "Hear deliveries" button and the row of delivery cards. The
studio places these widgets, wires the button and does the speaking
(:meth:`~dubkit.studio.app.AuditionStudio.deliveries`); the panel reads what is ticked, says
what is missing and shows the takes.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from .cards import TakeCard
from .deliveries import EMOTIONS, MAX_DELIVERIES, SPEEDS
from .takes import NEUTRAL, Take

if TYPE_CHECKING:
    from .shortlist import Shortlist
    from .voices import VoiceInfo


def takes_box() -> widgets.Box:
    """A row of take cards that wraps onto more lines."""
    return widgets.Box(layout=widgets.Layout(display="flex", flex_flow="row wrap"))


def _mark_when_on(toggle: widgets.ToggleButton) -> None:
    """Colour a ticked toggle: ipywidgets' own pressed shade is too faint to read at a glance."""

    def paint(_: Any = None) -> None:
        toggle.button_style = "info" if toggle.value else ""

    toggle.observe(paint, names="value")
    paint()


class DeliveriesPanel:
    """The widgets of the deliveries section: ``controls``, ``status`` and ``box`` (the cards)
    for the studio to place, ``button`` for it to wire."""

    def __init__(self, shortlist: Shortlist) -> None:
        self._shortlist = shortlist
        self.voice = widgets.Dropdown(
            options=[("hear some voices first", "")], value="", description="voice"
        )
        self.emotions = {
            e: widgets.ToggleButton(
                value=e in EMOTIONS[:4], description=e, layout=widgets.Layout(width="auto")
            )
            for e in EMOTIONS
        }
        self.speeds = {
            s: widgets.ToggleButton(
                value=s == 1.0, description=f"{s:g}x", layout=widgets.Layout(width="auto")
            )
            for s in SPEEDS
        }
        for kind, toggles in (("emotion", self.emotions), ("speed", self.speeds)):
            for toggle in toggles.values():
                toggle.add_class(f"dubkit-{kind}")
                _mark_when_on(toggle)
        self.button = widgets.Button(description="Hear deliveries", button_style="primary")
        row = widgets.Layout(flex_flow="row wrap", align_items="center")
        self.controls = widgets.VBox(
            [
                self.voice,
                widgets.HBox([widgets.Label("emotion"), *self.emotions.values()], layout=row),
                widgets.HBox(
                    [widgets.Label("speed"), *self.speeds.values(), self.button], layout=row
                ),
            ]
        )
        self.status = widgets.HTML()
        self.box = takes_box()
        self.box.add_class("dubkit-deliveries")

    @property
    def cards(self) -> list[TakeCard]:
        """The delivery cards shown."""
        return [c for c in self.box.children if isinstance(c, TakeCard)]

    def offer(self, takes: list[Take]) -> None:
        """The voices just heard become the choices for deliveries."""
        options = [(f"{t.voice.name} ({t.voice.tier})", t.voice.voice_id) for t in takes if t.ok]
        if options:
            current = self.voice.value
            self.voice.options = options
            ids = [value for _, value in options]
            self.voice.value = current if current in ids else ids[0]

    def ask(
        self,
        voice_id: str | None,
        emotions: Sequence[str] | None,
        speeds: Sequence[float] | None,
        text: str,
    ) -> tuple[str, list[str], list[float]] | None:
        """The voice, emotions and speeds to hear (what is chosen here unless given), or None
        with the reason in the status line when something is missing or too much."""
        voice_id = voice_id or self.voice.value
        emotions = list(emotions or [e for e, t in self.emotions.items() if t.value])
        speeds = sorted(set(speeds or [s for s, t in self.speeds.items() if t.value]))
        problem = (
            "choose a voice (hear some voices first)"
            if not voice_id
            else "tick an emotion and a speed"
            if not emotions or not speeds
            else f"at most {MAX_DELIVERIES} deliveries at once"
            if len(emotions) * len(speeds) > MAX_DELIVERIES
            else "type a line to hear first"
            if not text.strip()
            else ""
        )
        if problem:
            self.status.value = f"<i>{html.escape(problem)}</i>"
            return None
        return voice_id, emotions, speeds

    def show(self, takes: list[Take], info: VoiceInfo, emotions: list[str]) -> None:
        """Cards for the takes, and a warning when the voice is known to ignore emotions."""
        self.box.children = [TakeCard(t, self._shortlist) for t in takes]
        self.status.value = (
            f"<small>The catalogue says {html.escape(info.name)} does not follow emotion "
            "prompts: on the service its emotions may sound alike.</small>"
            if info.follows_emotion is False and set(emotions) - {NEUTRAL}
            else ""
        )
