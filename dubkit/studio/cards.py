"""The studio's live pieces: a card a take (star, note, pick) and the shortlist panel.

>>> card = TakeCard(take, shortlist)                 # name, level, player, ☆, note, download
>>> card.star.value = True                           # what clicking the star does
>>> ShortlistView(shortlist, in_app=True)            # table, CSV/JSON buttons, clear
"""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as widgets

from ..views.buttons import download_button_html, download_row_html
from ..views.sources import data_uri
from .shortlist import Shortlist
from .takes import Take

STAR_OFF, STAR_ON = "☆ Shortlist", "★ Shortlisted"


class TakeCard(widgets.VBox):
    """One take: who (or a letter while blind), its level, the player, and what to do with it."""

    def __init__(
        self,
        take: Take,
        shortlist: Shortlist,
        *,
        letter: str | None = None,
        hidden: bool = False,
        on_pick: Callable[[str], object] | None = None,
    ) -> None:
        self.take, self.letter, self.hidden = take, letter, hidden
        self._shortlist = shortlist
        self.header = widgets.HTML(take.header_html(letter=letter, hidden=hidden))
        self.level = widgets.HTML(take.level_html(hidden=hidden))
        self.player = widgets.HTML(take.player_html())  # never redrawn: a redraw stops it
        starred = take.key in shortlist
        self.star = widgets.ToggleButton(
            value=starred,
            description=STAR_ON if starred else STAR_OFF,
            tooltip="add this take to the shortlist",
            layout=widgets.Layout(width="auto"),
        )
        self.note = widgets.Text(
            value=shortlist[take.key].note if starred else "",
            placeholder="note",
            continuous_update=False,
            layout=widgets.Layout(width="96%"),
        )
        self.download = widgets.HTML(take.download_html())
        self.pick_button = widgets.Button(
            description=f"Pick {letter}", button_style="info", layout=widgets.Layout(width="auto")
        )
        self.star.button_style = "warning" if starred else ""
        self.star.add_class("dubkit-star")
        self.note.add_class("dubkit-note")
        self.pick_button.add_class("dubkit-pick-button")
        self.star.observe(self._on_star, names="value")
        self.note.observe(self._on_note, names="value")
        if on_pick is not None and letter is not None:
            self.pick_button.on_click(lambda _: on_pick(letter))
        super().__init__(
            layout=widgets.Layout(
                border="1px solid #d0d7de", padding="6px", margin="0 8px 8px 0", width="286px"
            )
        )
        self.add_class("dubkit-take")
        self._arrange()

    def reveal(self, *, picked: bool = False) -> None:
        """Show who this take was (after a blind pick) and let it be shortlisted."""
        if self.hidden:
            self.hidden = False
            mark = (
                (
                    "<div class='dubkit-your-pick' style='color:#1f6feb;font-weight:600'>"
                    "✓ your pick</div>"
                )
                if picked
                else ""
            )
            self.header.value = self.take.header_html(letter=self.letter, badge=mark)
            self.level.value = self.take.level_html()
            if picked:
                self.layout.border = "2px solid #1f6feb"
            self._arrange()

    def sync(self) -> None:
        """Follow the shortlist (a take starred elsewhere, a cleared list)."""
        starred = self.take.key in self._shortlist
        if self.star.value != starred:
            self.star.value = starred

    def _arrange(self) -> None:
        if self.hidden:
            self.children = [self.header, self.level, self.player, self.pick_button]
        elif self.take.ok:
            self.children = [
                self.header,
                self.level,
                self.player,
                widgets.HBox([self.star, self.download]),
                self.note,
            ]
        else:
            self.children = [self.header, self.level, self.player]

    def _on_star(self, change: dict) -> None:
        self.star.description = STAR_ON if change["new"] else STAR_OFF
        self.star.button_style = "warning" if change["new"] else ""
        if change["new"] and self.take.key not in self._shortlist:
            self._shortlist.add(self.take, self.note.value.strip())
        elif not change["new"]:
            self._shortlist.remove(self.take.key)

    def _on_note(self, change: dict) -> None:
        # Kept on the card until the take is starred; the star carries it into the list.
        self._shortlist.set_note(self.take.key, change["new"].strip())


def shortlist_table_html(shortlist: Shortlist) -> str:
    """The starred takes as a table (also what a saved notebook shows)."""
    if not len(shortlist):
        return (
            "<p class='dubkit-shortlist-empty' style='color:#57606a'>No takes starred yet: "
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
                data_uri(shortlist.to_csv().encode(), "text/csv"),
                "CSV",
                filename="shortlist.csv",
                mime="text/csv",
            ),
            download_button_html(
                data_uri(shortlist.to_json().encode(), "application/json"),
                "JSON",
                filename="shortlist.json",
                mime="application/json",
            ),
        ],
        "Export",
    )


class ShortlistView(widgets.VBox):
    """The shortlist panel: the table, export buttons, a way to start over, and a hint for code.

    ``in_app``: served as an app (Voila), where no code cell exists to use the hint in.
    """

    def __init__(self, shortlist: Shortlist, *, in_app: bool, name: str = "studio") -> None:
        self._shortlist = shortlist
        self.table = widgets.HTML()
        self.exports = widgets.HTML()
        self.clear = widgets.Button(
            description="Clear shortlist",
            layout=widgets.Layout(width="auto", align_self="flex-start"),
        )
        self.clear.on_click(lambda _: self._shortlist.clear())
        if in_app:
            hint = (
                "<small style='color:#57606a'>The JSON export loads in Python for a dub or "
                "a batch: <code>Shortlist.load('shortlist.json').to_voices()</code>"
                "</small>"
            )
        else:
            hint = (
                f"<small style='color:#57606a'>In code: <code>{name}.shortlist.to_frame()"
                f"</code>, <code>client.dubbing.create(..., voices={name}."
                f"shortlist.to_voices())</code>, <code>client.tts.batch({name}."
                f"shortlist.tts_lines(texts))</code></small>"
            )
        self.hint = widgets.HTML(hint)
        shortlist.observe(lambda _: self.refresh())
        super().__init__([self.table, self.exports, self.clear, self.hint])
        self.add_class("dubkit-shortlist-panel")
        self.refresh()

    def refresh(self) -> None:
        self.table.value = shortlist_table_html(self._shortlist)
        self.exports.value = exports_html(self._shortlist)
        self.clear.layout.display = "" if len(self._shortlist) else "none"
