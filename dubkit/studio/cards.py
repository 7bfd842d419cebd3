"""The studio's cards (a take: star, note, pick) and its shortlist panel, as HTML the live
channel draws; each control says what it does (``data-dubkit-action``) and the studio does it.

>>> card = TakeCard(take)                             # name, level, player, ☆, note, download
>>> card.html("ab12cd34", shortlist)                  # what the studio draws for it
>>> ShortlistView(shortlist, in_app=True).html("ab12cd34")   # table, CSV/JSON, clear
"""

from __future__ import annotations

import html

from ..views.buttons import download_button_html, download_row_html
from ..views.palette import MUTED, muted
from .casting import cast_input_html
from .shortlist import Shortlist
from .takes import Take

STAR_OFF, STAR_ON = "☆ Shortlist", "★ Shortlisted"
# A pressed toggle: a mark in its text and a frame, never colour alone.
PRESSED = " style='background:#ddf4ff;border:2px solid #0969da;color:#1f2328'"
CARD_STYLE = "border:1px solid #d0d7de;border-radius:6px;padding:6px;margin:0 8px 8px 0;width:274px"
PICKED_STYLE = CARD_STYLE.replace("1px solid #d0d7de", "2px solid #1f6feb")


class TakeCard:
    """One take: who (or a letter while blind), its level, the player, and what to do with it."""

    def __init__(
        self, take: Take, *, letter: str | None = None, hidden: bool = False, place: str = "take"
    ) -> None:
        self.take, self.letter, self.hidden = take, letter, hidden
        self.place = place  # where the card is shown ("round", "reading"): part of its id
        self.picked = False

    @property
    def id(self) -> str:
        """Unique in the studio: the card's place and its take's key (a voice's take in a round
        and the same voice's neutral reading share a key, never a place), or its letter in a
        blind round."""
        safe = "".join(c if c.isalnum() else "-" for c in (self.letter or self.take.key))
        return f"blind-{safe}" if self.letter else f"{self.place}-{safe}"

    def reveal(self, *, picked: bool = False) -> None:
        """Show who this take was (after a blind pick) and let it be shortlisted."""
        self.hidden, self.picked = False, picked

    def html(self, me: str, shortlist: Shortlist) -> str:
        take, ident = self.take, f"{me}-{self.id}"
        badge = (
            "<div class='dubkit-your-pick' style='font-weight:600'>✓ your pick</div>"
            if self.picked
            else ""
        )
        said = muted(f"“{html.escape(take.text)}”", tag="div", size="85%")
        parts = [
            take.header_html(letter=self.letter, hidden=self.hidden, badge=badge),
            said.replace("<div ", "<div class='dubkit-take-text' ", 1),
            take.level_html(hidden=self.hidden),
            take.player_html(label=self.label()),
        ]
        if self.hidden:
            parts.append(
                f"<button type='button' id='{ident}-pick' class='dubkit-pick-button' "
                f"data-dubkit-action='pick' data-dubkit-key='{html.escape(self.letter or '')}'>"
                f"Pick {html.escape(self.letter or '')}</button>"
            )
        elif take.ok:
            parts.append(self._actions_html(ident, shortlist))
        style = PICKED_STYLE if self.picked else CARD_STYLE
        return (
            f"<div class='dubkit-take' data-dubkit-part='{html.escape(self.id)}' "
            f"style='{style}'>{''.join(parts)}</div>"
        )

    def label(self) -> str:
        """The player's name, which must not give a blind take away."""
        if self.hidden:
            return f"Take {self.letter}"
        voice, reading = self.take.voice, self.take.reading()
        who = f"{voice.name} ({voice.tier})" if voice.tier else voice.name
        return f"{who}{', ' + reading if reading else ''}: {self.take.text}"

    def _actions_html(self, ident: str, shortlist: Shortlist) -> str:
        key = html.escape(self.take.key)
        starred = self.take.key in shortlist
        note = shortlist[self.take.key].note if starred else ""
        star = (
            f"<button type='button' id='{ident}-star' class='dubkit-star' "
            f"data-dubkit-action='star' data-dubkit-key='{key}' "
            f"aria-pressed='{'true' if starred else 'false'}'{PRESSED if starred else ''} "
            f"aria-label='{STAR_ON if starred else STAR_OFF} {html.escape(self.label())}'>"
            f"{STAR_ON if starred else STAR_OFF}</button>"
        )
        return (
            f"<div data-dubkit-part='{html.escape(self.id)}-actions' style='display:flex;"
            f"gap:6px;align-items:center;margin:4px 0'>{star}{self.take.download_html()}</div>"
            f"<div class='dubkit-note'><label for='{ident}-note' style='font-size:90%'>note "
            f"</label><input id='{ident}-note' class='dubkit-note-input' "
            f"data-dubkit-action='note' data-dubkit-key='{key}' "
            f"value='{html.escape(note)}' style='width:80%'></div>"
            + cast_input_html(ident, "cast", self.take.key, self.label())
        )


def shortlist_table_html(shortlist: Shortlist) -> str:
    """The starred takes as a table (also what a saved notebook shows)."""
    if not len(shortlist):
        return (
            f"<p class='dubkit-shortlist-empty' style='color:{MUTED}'>No takes starred yet: "
            "press ☆ Shortlist on a take you like.</p>"
        )
    rows = []
    cell = "padding:2px 12px 2px 0;text-align:left"
    for e in shortlist:
        reading = " · ".join(p for p in (e.emotion, f"{e.speed:g}x") if p)
        values = [
            html.escape(e.name),
            f"<code>{html.escape(e.voice_id)}</code>",
            html.escape(e.provider or ""),
            html.escape(e.locale or ""),
            html.escape(reading),
            html.escape(e.note),
        ]
        rows.append("<tr>" + "".join(f"<td style='{cell}'>{v}</td>" for v in values) + "</tr>")
    heads = ("voice", "voice id", "provider", "locale", "reading", "note")
    return (
        "<table class='dubkit-shortlist' style='border-collapse:collapse'><thead><tr>"
        + "".join(f"<th style='{cell}'>{h}</th>" for h in heads)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def exports_html(shortlist: Shortlist) -> str:
    """CSV and JSON download buttons of the shortlist as it is now (embedded: no server)."""
    if not len(shortlist):
        return ""
    return download_row_html(
        [
            download_button_html(
                None,
                "CSV",
                data=shortlist.to_csv().encode(),
                filename="shortlist.csv",
                mime="text/csv",
            ),
            download_button_html(
                None,
                "JSON",
                data=shortlist.to_json().encode(),
                filename="shortlist.json",
                mime="application/json",
            ),
        ],
        "Export",
    )


class ShortlistView:
    """The shortlist panel: the table, export buttons, a way to start over, and a hint for code.

    ``in_app``: served as an app (Voila), where no code cell exists to use the hint in.
    """

    def __init__(self, shortlist: Shortlist, *, in_app: bool, name: str = "studio") -> None:
        self._shortlist = shortlist
        if in_app:
            self.hint = (
                f"<small style='color:{MUTED}'>The JSON export loads in Python for a dub or "
                "a batch: <code>Shortlist.load('shortlist.json').to_voices()</code>"
                "</small>"
            )
        else:
            self.hint = (
                f"<small style='color:{MUTED}'>In code: <code>{name}.shortlist.to_frame()"
                f"</code>, <code>client.dubbing.create(..., voices={name}."
                f"shortlist.to_voices())</code>, <code>client.tts.batch({name}."
                f"shortlist.tts_lines(texts))</code></small>"
            )

    def html(self, me: str) -> str:
        casting = "".join(
            cast_input_html(f"{me}-entry-{i}", "cast-entry", e.key, f"{e.name}, {e.emotion}")
            for i, e in enumerate(self._shortlist)
        )
        return (
            "<div class='dubkit-shortlist-panel' data-dubkit-part='shortlist'>"
            f"<div>{shortlist_table_html(self._shortlist)}</div>"
            + (f"<div class='dubkit-shortlist-cast'>{casting}</div>" if casting else "")
            + f"<div>{exports_html(self._shortlist)}</div>"
            f"<button type='button' id='{me}-clear' data-dubkit-action='clear-shortlist' "
            f"style='margin:4px 0'>Clear shortlist</button><div>{self.hint}</div></div>"
        )
