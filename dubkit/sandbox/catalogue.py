"""The sandbox's preset voice catalogue, and how the sandbox speaks any voice.

Work in progress: :class:`SpeakingVoice` is final (clones store it as JSON); the preset
catalogue follows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .engines import speech


@dataclass(frozen=True)
class SpeakingVoice:
    """How the sandbox speaks a voice: an espeak voice, a variant and prosody.

    >>> SpeakingVoice("en-us", "f2").to_json()["variant"]
    'f2'
    """

    espeak: str                      # a voice or language code ``speech.synthesize`` accepts
    variant: str | None = None       # an espeak variant (``speech.list_variants()``)
    prosody: speech.Prosody = field(default_factory=speech.Prosody)

    def to_json(self) -> dict[str, Any]:
        p = self.prosody
        return {"espeak": self.espeak, "variant": self.variant, "rateWpm": p.rate_wpm,
                "pitch": p.pitch, "pitchRange": p.pitch_range, "volume": p.volume}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "SpeakingVoice":
        return cls(data["espeak"], data.get("variant"),
                   speech.Prosody(rate_wpm=int(data.get("rateWpm", 175)),
                                  pitch=int(data.get("pitch", 50)),
                                  pitch_range=int(data.get("pitchRange", 50)),
                                  volume=int(data.get("volume", 100))))

    def with_prosody(self, **changes: int) -> "SpeakingVoice":
        return replace(self, prosody=replace(self.prosody, **changes))

    def speak(self, text: str, *, espeak: str | None = None) -> np.ndarray:
        """Float32 mono samples at ``speech.SAMPLE_RATE``; ``espeak`` overrides the language."""
        return speech.synthesize(text, espeak or self.espeak, variant=self.variant,
                                 prosody=self.prosody)
