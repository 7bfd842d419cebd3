"""Every role of a cast in every locale saying one text, side by side, to hear the cast whole."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..results._display import ShowsMedia
from ..results.speech import SpeechLine
from .script import lines_for

if TYPE_CHECKING:
    from ..client import Client
    from .roles import Roles


class CastAudition(ShowsMedia):
    """``lines[(role, locale)]``: each role's voice in each locale saying :attr:`text`."""

    def __init__(self, cast: Roles, text: str, lines: dict[tuple[str, str], SpeechLine]) -> None:
        self.cast, self.text, self.lines = cast, text, lines

    def __repr__(self) -> str:
        return f"CastAudition({len(self.cast)} roles × {len(self.cast.locales)} locales: {self.text!r})"

    def _repr_html_(self) -> str:
        from ..views.cast import audition_html

        return audition_html(self.cast, self.lines, self.text)


def audition(cast: Roles, client: Client, text: str | None) -> CastAudition:
    """A line a role in each locale (its own voice or its fall-back), spoken as a batch: one
    request a locale and provider, since one request speaks with one provider's voices."""
    said = text or cast.sample_line
    lines: dict[tuple[str, str], SpeechLine] = {}
    for locale in cast.locales:
        roles = [role.name for role in cast]
        script = [{"role": name, "text": said} for name in roles]
        spoken = lines_for(cast, script, locale)
        speech = client.tts.batch(spoken, locale=locale, progress=False)
        for name, line in zip(roles, speech):
            lines[(name, locale)] = line
    return CastAudition(cast, said, lines)
