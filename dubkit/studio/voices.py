"""Who a take is: the facts a person chooses a voice by (name, locale, gender, tier), and its id.

>>> info = VoiceInfo.of_preset(client.voices.preset("sv_s5_en_us_promo_f"))
>>> info.name, info.facts()          # 'Ava', ['en-US', 'female', 'S5 HD']
>>> info.label_html()                # the name, the facts, the id behind a click
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..views.palette import MUTED

if TYPE_CHECKING:
    from ..results import Clone
    from ..schema import ClonedVoice, PresetVoice


@dataclass(frozen=True)
class VoiceInfo:
    """A voice as the studio shows it; ``kind`` is ``"preset"`` or ``"clone"``."""

    voice_id: str
    name: str
    provider: str | None = None
    locale: str | None = None
    gender: str | None = None
    kind: str = "preset"
    hd: bool = False
    follows_emotion: bool | None = None  # None: the catalogue does not say

    @classmethod
    def of_preset(cls, voice: PresetVoice) -> VoiceInfo:
        emotion = voice.supports_emotion_prompt
        return cls(
            voice.voice_id or "",
            voice.display_name or voice.local_name or voice.voice_id or "",
            voice.provider,
            voice.locale,
            voice.gender,
            "preset",
            bool(voice.is_hd),
            None if emotion is None else bool(emotion),
        )

    @classmethod
    def of_clone(cls, voice: ClonedVoice | Clone) -> VoiceInfo:
        """A clone from a listing (:class:`ClonedVoice`) or one just made (:class:`Clone`)."""
        locale = getattr(voice, "example_language", None) or getattr(voice, "language", None)
        return cls(
            voice.voice_id or "",
            voice.name or voice.voice_id or "",
            voice.provider,
            locale,
            None,
            "clone",
        )

    @classmethod
    def unknown(cls, voice_id: str) -> VoiceInfo:
        """A voice the listings did not return (shown by its id)."""
        return cls(voice_id, voice_id, kind="unknown")

    @property
    def tier(self) -> str:
        """``'S5 HD'`` for a preset, ``'clone V1'`` for a clone."""
        if self.kind == "clone":
            return f"clone {self.provider}" if self.provider else "clone"
        return " ".join(p for p in (self.provider, "HD" if self.hd else "") if p)

    def facts(self) -> list[str]:
        """Locale, gender and tier, the ones known."""
        return [f for f in (self.locale, self.gender, self.tier) if f]

    def label_html(
        self, *, prefix: str = "", title: str | None = None, by: bool = False, badge: str = ""
    ) -> str:
        """The name (after ``prefix``, e.g. a blind take's letter), the facts, and the id one
        click away (a ``<details>`` whose ``<code>`` selects whole on one click).

        ``title`` replaces the name as the first line (``by``: the name leads the facts);
        ``badge`` is HTML shown on the name's line, after it.
        """
        facts = " · ".join(html.escape(f) for f in ([self.name] if by else []) + self.facts())
        heading = html.escape(prefix) + html.escape(self.name if title is None else title)
        return (
            f"<div style='display:flex;gap:10px'><div class='dubkit-take-name' "
            f"style='font-weight:600'>{heading}</div>{badge}</div>"
            f"<div class='dubkit-take-facts' style='color:{MUTED};font-size:90%'>{facts}</div>"
            f"<details class='dubkit-voice-id' style='font-size:85%'><summary "
            f"style='cursor:pointer;color:{MUTED}'>voice id</summary><code "
            f"style='user-select:all'>{html.escape(self.voice_id)}</code></details>"
        )

    def record(self) -> dict[str, Any]:
        """The facts as plain data (for exports)."""
        return {
            "voice_id": self.voice_id,
            "provider": self.provider,
            "name": self.name,
            "kind": self.kind,
            "voice_locale": self.locale,
            "gender": self.gender,
        }
