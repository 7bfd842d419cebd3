"""The studio's cast: takes and shortlisted voices cast in roles, the cast heard whole, its file.

>>> studio = AuditionStudio(client, cast=Cast.load("harbour-cast.json"))   # reopen a cast
>>> studio.cast_take(take.key, "Narrator")        # what "cast as" on a card or the shortlist does
>>> studio.cast.save("harbour-cast.json")         # or the studio's "Cast JSON" download
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from ..cast import Cast, CastAudition
from ..cast.file import text_of
from ..views.buttons import download_button_html, download_row_html
from ..views.cast import cast_html
from ..views.palette import MUTED

if TYPE_CHECKING:
    from ..client import Client


def cast_input_html(ident: str, action: str, key: str, label: str) -> str:
    """A "cast as" field: type a role and press Enter (or leave the field) to cast."""
    return (
        f"<div class='dubkit-cast-as'><label for='{ident}-cast' style='font-size:90%'>cast as "
        f"</label><input id='{ident}-cast' class='dubkit-cast-input' data-dubkit-action='{action}'"
        f" data-dubkit-key='{html.escape(key)}' placeholder='a role, e.g. Narrator' "
        f"aria-label='cast {html.escape(label)} as' style='width:60%'></div>"
    )


class CastPanel:
    """The cast section: its table, "Hear the cast" (every role in every locale, side by
    side), and the cast file to download."""

    def __init__(self, cast: Cast) -> None:
        self.cast = cast
        self.audition: CastAudition | None = None

    def hear(self, client: Client) -> CastAudition | None:
        self.audition = self.cast.audition(client) if len(self.cast) else None
        return self.audition

    def html(self, me: str) -> str:
        if not len(self.cast):
            return (
                "<div class='dubkit-cast-panel' data-dubkit-part='cast'>"
                f"<p style='color:{MUTED}'>No roles cast yet: type a role in a take's "
                "“cast as” field (or a shortlisted voice's).</p></div>"
            )
        heard = self.audition._repr_html_() if self.audition is not None else ""
        text = text_of(self.cast)
        export = download_row_html(
            [
                download_button_html(
                    None,
                    "Cast JSON",
                    data=text.encode(),
                    filename="cast.json",
                    mime="application/json",
                )
            ],
            "Export",
        )
        return (
            "<div class='dubkit-cast-panel' data-dubkit-part='cast'>"
            f"<div>{cast_html(self.cast)}</div>"
            f"<button type='button' id='{me}-hear-cast' data-dubkit-action='hear-cast' "
            "style='margin:4px 0'>Hear the cast</button>"
            f"<div data-dubkit-part='cast-heard'>{heard}</div><div>{export}</div>"
            f"<small style='color:{MUTED}'>Reopen it: <code>AuditionStudio(client, "
            "cast=dubkit.Cast.load('cast.json'))</code>; use it: <code>client.tts.create("
            "script, cast=cast)</code>, <code>client.dubbing.create(..., cast=cast, "
            "speakers={1: 'Narrator'})</code></small></div>"
        )
