"""The studio's page as HTML: its sections in order, each one a part the live channel redraws
only when it changed (a take that is playing keeps playing while another is starred).

Every control is a plain HTML control with its label, and says what it does
(``data-dubkit-action``); the studio (:mod:`dubkit.studio.app`) does it.
"""

from __future__ import annotations

import html
from typing import Any, Protocol

from .. import locales
from ..widgets.clone import CloneForm
from ..widgets.voices import GENDERS
from .cards import ShortlistView, TakeCard
from .casting import CastPanel
from .readings import ReadingsPanel
from .shortlist import Shortlist


class StudioShape(Protocol):
    """What the page reads of the studio (:class:`~dubkit.studio.app.AuditionStudio`)."""

    choice: Any  # locale, gender, count, blind
    text: str
    status: str
    busy: bool
    where: str
    shortlist: Shortlist
    round_cards: list[TakeCard]
    picks: list[Any]
    readings_panel: ReadingsPanel
    shortlist_view: ShortlistView
    cast_panel: CastPanel
    clone_form: CloneForm

    def picks_html(self) -> str: ...


def page_html(studio: StudioShape, me: str) -> str:
    """The whole studio: where it is connected, the choices and the line, the status, the
    takes, the blind picks, the readings, the shortlist and the clone form."""
    return (
        "<div class='dubkit-studio' data-dubkit-part='studio'>"
        + "".join(
            (
                f"<p>Connected to {studio.where}.</p>",
                _controls_html(studio, me),
                f"<div role='status' class='dubkit-status' data-dubkit-part='status'>{studio.status}</div>",
                "<div class='dubkit-takes' data-dubkit-part='takes' style='display:flex;"
                "flex-wrap:wrap'>"
                + "".join(card.html(me, studio.shortlist) for card in studio.round_cards)
                + "</div>",
                f"<div class='dubkit-picks-shown'>{studio.picks_html() if studio.picks else ''}</div>",
                "<h4>One voice, several readings</h4><p>The same line by one voice with each "
                "emotion and speed pressed, side by side.</p>",
                studio.readings_panel.html(me, studio.shortlist),
                "<h4>Shortlist</h4>",
                studio.shortlist_view.html(me),
                "<h4>Cast</h4><p>Each role's voice per locale, from the takes and voices cast "
                "above; the file a series keeps.</p>",
                studio.cast_panel.html(me),
                "<h4>Clone a voice</h4><p>Upload a short recording of one speaker and write what "
                "it says; the clone joins the takes above, beside the presets.</p>",
                studio.clone_form.html(me),
            )
        )
        + "</div>"
    )


def _options(options: list[str] | tuple[str, ...], chosen: str) -> str:
    return "".join(
        f"<option value='{html.escape(o)}'{' selected' if o == chosen else ''}>"
        f"{html.escape(o)}</option>"
        for o in options
    )


def _controls_html(studio: StudioShape, me: str) -> str:
    choice = studio.choice
    blind = " checked" if choice.blind else ""
    busy = " disabled" if studio.busy else ""
    return (
        "<div class='dubkit-studio-controls' data-dubkit-part='controls'>"
        "<div style='display:flex;flex-wrap:wrap;gap:4px 14px;align-items:center'>"
        f"<span><label for='{me}-locale'>locale</label> <select id='{me}-locale' "
        f"name='locale'>{_options(sorted(locales.TARGET), choice.locale)}</select></span>"
        f"<span><label for='{me}-gender'>gender</label> <select id='{me}-gender' "
        f"name='gender'>{_options(GENDERS, choice.gender)}</select></span>"
        f"<span><label for='{me}-count'>voices</label> <input type='number' id='{me}-count' "
        f"name='count' min='1' max='6' value='{choice.count}' style='width:3.5em'></span>"
        f"<span class='dubkit-blind'><input type='checkbox' id='{me}-blind' "
        f"data-dubkit-action='blind'{blind}> <label for='{me}-blind'>blind A/B (voices "
        "hidden until you pick)</label></span>"
        "</div><div style='margin:6px 0;display:flex;gap:8px;align-items:flex-start'>"
        f"<label for='{me}-text'>line</label><textarea id='{me}-text' name='text' rows='2' "
        f"cols='70'>{html.escape(studio.text)}</textarea>"
        f"<button type='button' id='{me}-hear' class='dubkit-hear' "
        f"data-dubkit-action='hear'{busy}>Hear them</button></div></div>"
    )
