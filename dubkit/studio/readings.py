"""One voice saying one line in several readings: each emotion at each speed, and the studio's
panel for them (its controls, status line and cards).

A speed is a share of that emotion's own natural reading time (a sad reading is slower to
begin with), asked for through the line's ``duration``: so the natural readings are spoken
first, then the stretched ones. ``neutral`` sends no emotion prompt (the voice's own reading).
See dubkit/sandbox/products/tts.py for what the sandbox does with ``emoPrompt`` and ``duration``.

>>> takes = speak_readings(client, info, "Mind the gap.", ["neutral", "sad"], [1.0, 1.25],
...                        locale="en-GB")            # four takes, emotion-major

The panel: a voice picker fed by the last round, emotion and speed toggles, the "Hear
readings" button and the row of reading cards, drawn as part of the studio's page. The studio
does the speaking (:meth:`~dubkit.studio.app.AuditionStudio.readings`); the panel keeps what is
pressed, says what is missing and shows the takes.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._util.deprecation import renamed_keywords
from .cards import PRESSED, TakeCard
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


class ReadingsPanel:
    """The readings section's state and HTML: a voice picker fed by the last round, emotion
    and speed toggles (buttons that say whether they are pressed), the status line and the
    reading cards. The studio does the speaking (:meth:`AuditionStudio.readings`)."""

    def __init__(self) -> None:
        self.options: list[tuple[str, str]] = []  # (label, voice id) of the last round
        self.voice = ""
        self.emotions = {e: e in EMOTIONS[:4] for e in EMOTIONS}
        self.speeds = {s: s == 1.0 for s in SPEEDS}
        self.status = ""
        self.cards: list[TakeCard] = []
        self.busy = False

    def offer(self, takes: list[Take]) -> None:
        """The voices just heard become the choices for readings."""
        options = [(f"{t.voice.name} ({t.voice.tier})", t.voice.voice_id) for t in takes if t.ok]
        if options:
            self.options = options
            ids = [value for _, value in options]
            self.voice = self.voice if self.voice in ids else ids[0]

    def toggle(self, kind: str, key: str) -> None:
        """An emotion or speed toggle pressed."""
        if kind == "emotion" and key in self.emotions:
            self.emotions[key] = not self.emotions[key]
        elif kind == "speed":
            speed = next((s for s in self.speeds if f"{s:g}" == key), None)
            if speed is not None:
                self.speeds[speed] = not self.speeds[speed]

    def ask(
        self,
        voice_id: str | None,
        emotions: Sequence[str] | None,
        speeds: Sequence[float] | None,
        text: str,
    ) -> tuple[str, list[str], list[float]] | None:
        """The voice, emotions and speeds to hear (what is chosen here unless given), or None
        with the reason in the status line when something is missing or too much."""
        voice_id = voice_id or self.voice
        emotions = list(emotions or [e for e, on in self.emotions.items() if on])
        speeds = sorted(set(speeds or [s for s, on in self.speeds.items() if on]))
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
            self.status = f"<i>{html.escape(problem)}</i>"
            return None
        return voice_id, emotions, speeds

    def show(self, takes: list[Take], info: VoiceInfo, emotions: list[str]) -> None:
        """Cards for the takes, and a warning when the voice is known to ignore emotions."""
        self.cards = [TakeCard(t, place="reading") for t in takes]
        self.status = (
            f"<small>The catalogue says {html.escape(info.name)} does not follow emotion "
            "prompts: on the service its emotions may sound alike.</small>"
            if info.follows_emotion is False and set(emotions) - {NEUTRAL}
            else ""
        )

    def html(self, me: str, shortlist: Shortlist) -> str:
        choices = (
            "".join(
                f"<option value='{html.escape(v)}'{' selected' if v == self.voice else ''}>"
                f"{html.escape(label)}</option>"
                for label, v in self.options
            )
            or "<option value=''>hear some voices first</option>"
        )

        def toggles(kind: str, states: dict[Any, bool], name: Any) -> str:
            return "".join(
                f"<button type='button' id='{me}-{kind}-{name(k)}' class='dubkit-{kind}' "
                f"data-dubkit-action='{kind}' data-dubkit-key='{name(k)}' "
                f"aria-pressed='{'true' if on else 'false'}'{PRESSED if on else ''}>"
                f"{'✓ ' if on else ''}"
                f"{html.escape(name(k) + ('x' if kind == 'speed' else ''))}</button> "
                for k, on in states.items()
            )

        cards = "".join(card.html(me, shortlist) for card in self.cards)
        return (
            "<div class='dubkit-readings-panel' data-dubkit-part='readings'>"
            f"<div><label for='{me}-reading-voice'>voice </label><select "
            f"id='{me}-reading-voice' name='reading-voice'>{choices}</select></div>"
            f"<div role='group' aria-label='emotions' style='margin:4px 0'>emotion "
            f"{toggles('emotion', self.emotions, str)}</div>"
            f"<div role='group' aria-label='speeds' style='margin:4px 0'>speed "
            f"{toggles('speed', self.speeds, lambda s: f'{s:g}')}"
            f"<button type='button' id='{me}-readings' data-dubkit-action='readings'"
            f"{' disabled' if self.busy else ''}>Hear readings</button></div>"
            f"<div role='status' class='dubkit-readings-status' data-dubkit-part='readings-status'>{self.status}</div>"
            "<div class='dubkit-readings' data-dubkit-part='reading-cards' "
            f"style='display:flex;flex-wrap:wrap'>{cards}</div></div>"
        )
