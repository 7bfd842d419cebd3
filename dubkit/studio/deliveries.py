"""One voice saying one line with several deliveries: each emotion at each speed.

A speed is a share of that emotion's own natural reading time (a sad reading is slower to
begin with), asked for through the line's ``duration``: so the natural readings are spoken
first, then the stretched ones. ``neutral`` sends no emotion prompt (the voice's own delivery).
See dubkit/sandbox/products/tts.py for what the sandbox does with ``emoPrompt`` and ``duration``.

>>> takes = speak_deliveries(client, info, "Mind the gap.", ["neutral", "sad"], [1.0, 1.25],
...                          language="en-GB")            # four takes, emotion-major
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .takes import NEUTRAL, Take, make_takes
from .voices import VoiceInfo

if TYPE_CHECKING:
    from ..client import Client
    from ..results import Speech, SpeechLine

MAX_DELIVERIES = 12
# emoPrompt presets a person picks from; free text works in code (emotions=["tired, sad"]).
EMOTIONS = ("neutral", "happy", "sad", "calm", "angry", "whisper")
SPEEDS = (0.8, 1.0, 1.25)


def speak_deliveries(
    client: Client,
    voice: VoiceInfo,
    text: str,
    emotions: Sequence[str],
    speeds: Sequence[float],
    *,
    language: str | None = None,
) -> list[Take]:
    """``text`` by ``voice`` with each emotion at each speed, loudness-matched takes in
    emotion-major order; a delivery whose natural reading failed shows that failure once."""

    def line(emotion: str, duration: float | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"text": text, "voice_id": voice.voice_id}
        if emotion != NEUTRAL:
            spec["emo_prompt"] = emotion
        if duration is not None:
            spec["duration"] = duration
        return spec

    emotions, speeds = list(emotions), sorted(set(speeds))
    natural = dict(
        zip(
            emotions,
            client.tts.batch([line(e) for e in emotions], language=language, progress=False),
        )
    )
    plan = [(e, s) for e in emotions for s in speeds if s != 1.0 and natural[e].ok]
    stretched: Speech | list[SpeechLine] = (
        client.tts.batch(
            [line(e, round((natural[e].duration or 0) / s, 2)) for e, s in plan],
            language=language,
            progress=False,
        )
        if plan
        else []
    )
    by_delivery = {(e, 1.0): natural[e] for e in emotions}
    by_delivery.update(zip(plan, stretched))
    order = [(e, s) for e in emotions for s in speeds if (e, s) in by_delivery]
    return make_takes(
        [by_delivery[d] for d in order],
        {voice.voice_id: voice},
        text=text,
        locale=language,
        deliveries=order,
    )
