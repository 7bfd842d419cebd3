"""One voice saying one line in several readings: each emotion at each speed, and the studio's
panel for them (its controls, status line and cards).

A speed is a share of that emotion's own natural reading time (a sad reading is slower to
begin with), asked for through the line's ``duration``: so the natural readings are spoken
first, then the stretched ones. ``neutral`` sends no emotion prompt (the voice's own reading).
See dubkit/sandbox/products/tts.py for what the sandbox does with ``emoPrompt`` and ``duration``.

>>> takes = speak_readings(client, info, "Mind the gap.", ["neutral", "sad"], [1.0, 1.25],
...                        locale="en-GB")            # four takes, emotion-major

The panel: a voice picker fed by the last round, emotion and speed toggles, the "Hear
readings" button and the row of reading cards. The studio places these widgets, wires the
button and does the speaking (:meth:`~dubkit.studio.app.AuditionStudio.readings`); the panel
reads what is ticked, says what is missing and shows the takes.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from .._util.deprecation import renamed_keywords
from .cards import TakeCard
from .takes import NEUTRAL, Take, make_takes
from .voices import VoiceInfo

if TYPE_CHECKING:
    from ..client import Client
    from ..results import Speech, SpeechLine
    from .shortlist import Shortlist

MAX_READINGS = 12
# emoPrompt presets a person picks from; free text works in code (emotions=["tired, sad"]).
EMOTIONS = ("neutral", "happy", "sad", "calm", "angry", "whisper")
SPEEDS = (0.8, 1.0, 1.25)


@renamed_keywords(language="locale")
def speak_readings(
    client: Client,
    voice: VoiceInfo,
    text: str,
    emotions: Sequence[str],
    speeds: Sequence[float],
    *,
    locale: str | None = None,
) -> list[Take]:
    """``text`` by ``voice`` with each emotion at each speed, loudness-matched takes in
    emotion-major order; a reading whose natural reading failed shows that failure once."""

    def line(emotion: str, duration: float | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"text": text, "voice_id": voice.voice_id}
        if emotion != NEUTRAL:
            spec["emo_prompt"] = emotion
        if duration is not None:
            spec["duration"] = duration
        return spec

    emotions, speeds = list(emotions), sorted(set(speeds))
    natural = dict(
        zip(emotions, client.tts.batch([line(e) for e in emotions], locale=locale, progress=False))
    )
    plan = [(e, s) for e in emotions for s in speeds if s != 1.0 and natural[e].ok]
    stretched: Speech | list[SpeechLine] = (
        client.tts.batch(
            [line(e, round((natural[e].duration or 0) / s, 2)) for e, s in plan],
            locale=locale,
            progress=False,
        )
        if plan
        else []
    )
    by_reading = {(e, 1.0): natural[e] for e in emotions}
    by_reading.update(zip(plan, stretched))
    order = [(e, s) for e in emotions for s in speeds if (e, s) in by_reading]
    return make_takes(
        [by_reading[d] for d in order],
        {voice.voice_id: voice},
        text=text,
        locale=locale,
        readings=order,
    )


# --------------------------------------------------------------------------- the panel


def takes_box() -> widgets.Box:
    """A row of take cards that wraps onto more lines."""
    return widgets.Box(layout=widgets.Layout(display="flex", flex_flow="row wrap"))


def _mark_when_on(toggle: widgets.ToggleButton) -> None:
    """Colour a ticked toggle: ipywidgets' own pressed shade is too faint to read at a glance."""

    def paint(_: Any = None) -> None:
        toggle.button_style = "info" if toggle.value else ""

    toggle.observe(paint, names="value")
    paint()


class ReadingsPanel:
    """The widgets of the readings section: ``controls``, ``status`` and ``box`` (the cards)
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
        self.button = widgets.Button(description="Hear readings", button_style="primary")
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
        self.box.add_class("dubkit-readings")

    @property
    def cards(self) -> list[TakeCard]:
        """The reading cards shown."""
        return [c for c in self.box.children if isinstance(c, TakeCard)]

    def offer(self, takes: list[Take]) -> None:
        """The voices just heard become the choices for readings."""
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
            else f"at most {MAX_READINGS} readings at once"
            if len(emotions) * len(speeds) > MAX_READINGS
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
