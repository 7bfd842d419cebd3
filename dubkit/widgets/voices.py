"""Voice browsing and auditioning in a notebook.

>>> browser = VoiceBrowser(client, locale="en-US")      # filters, table, audition panel
>>> browser.set_filters(gender="female", quality="high")
>>> browser.tick(browser.voice_ids[:3]); browser.audition("Welcome aboard!")
>>> client.tts.audition("Welcome aboard!", ids)        # side-by-side players, no widget

The browser is one live-channel widget (an anywidget) drawn from plain HTML controls, so it
works wherever anywidget does: JupyterLab, Notebook 7, Voila, VS Code, Colab (ipywidgets 7
included) and marimo. Each voice row has a play control for the catalogue's preview (loaded
only when pressed) and a tick box. Saved notebooks and nbval see the static HTML travelling
with the widget.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from .. import locales
from .._util.words import count
from ..frontends.channel import Action, LiveHTML
from ..resources import TTSResource, VoicesResource
from ..results import Audition
from ..views.palette import error_html
from ..views.voices import voice_row_html, voice_table_html
from ._client import sync_client


class VoiceClient(Protocol):
    """What the browser uses of a :class:`dubkit.Client`."""

    voices: VoicesResource
    tts: TTSResource


_ANY = "any"
GENDERS = (_ANY, "female", "male")
AGES = (_ANY, "young", "adult", "senior")
QUALITIES = (_ANY, "high")
FILTERS = ("locale", "gender", "age", "quality", "search")


class VoiceBrowser(LiveHTML):
    """Filters (locale, gender, age, quality, name), a page of voices with previews and a
    tick box each, and an audition panel that says a sentence with every ticked voice."""

    def __init__(
        self,
        client: VoiceClient,
        *,
        locale: str | None = None,
        gender: str | None = None,
        age: str | None = None,
        quality: str | None = None,
        search: str = "",
        page_size: int = 10,
        text: str = "Hello! This is how I sound.",
    ) -> None:
        self._client = client = sync_client(client)
        self.page, self.page_size = 1, page_size
        self.voices: list[Any] = []
        self.total = 0
        self.last_audition: Audition | None = None
        self.text = text
        self.filters = {
            "locale": locale or _ANY,
            "gender": gender or _ANY,
            "age": age or _ANY,
            "quality": quality or _ANY,
            "search": search,
        }
        self.status = ""  # the page line, or what went wrong
        self.result = ""  # the audition's players, or why there are none
        self._ticked: list[str] = []
        super().__init__()
        for action in ("filter", "prev", "next", "tick", "hear"):
            self.on_action(action, self._act)
        self._go(1)

    # ----------------------------------------------------------------- public controls

    @property
    def voice_ids(self) -> list[str]:
        """Ids on the page shown now."""
        return [v.voice_id for v in self.voices]

    @property
    def ticked(self) -> list[str]:
        """Ids ticked for audition (across pages, in the order ticked)."""
        return list(self._ticked)

    def set_filters(self, **filters: Any) -> VoiceBrowser:
        """Change filters (locale, gender, age, quality, search) and show page 1."""
        unknown = set(filters) - set(FILTERS)
        if unknown:
            raise ValueError(f"{sorted(unknown)[0]}: not a filter; use {', '.join(FILTERS)}")
        for name, value in filters.items():
            self.filters[name] = value if value is not None else ("" if name == "search" else _ANY)
        self._go(1)
        return self

    def tick(self, voice_ids: Iterable[str]) -> VoiceBrowser:
        for voice_id in voice_ids:
            if voice_id not in self._ticked:
                self._ticked.append(voice_id)
        self._draw()
        return self

    def audition(self, text: str | None = None) -> Audition | None:
        """Say ``text`` (or the panel's text) with every ticked voice, side by side."""
        text = text if text is not None else self.text
        if not self._ticked or not text.strip():
            self._say(
                f"<i>{'tick one or more voices' if not self._ticked else 'type something to say'} first</i>"
            )
            return None
        self._say(f"<i>speaking with {count(len(self._ticked), 'voice')}…</i>")
        try:
            self.last_audition = self._client.tts.audition(text, self._ticked)
        except Exception as exc:  # show it in the panel; the widget stays usable
            self._say(error_html(f"{type(exc).__name__}: {exc}"))
            return None
        # Live widget state is saved with the notebook: play from URLs, embed nothing there.
        self._say(self.last_audition.html(embed=False))
        return self.last_audition

    # ----------------------------------------------------------------- internals

    def _query(self) -> dict[str, Any]:
        chosen = {name: str(value).strip() for name, value in self.filters.items()}
        return {k: v for k, v in chosen.items() if v not in (_ANY, "")}

    def _act(self, act: Action) -> None:
        """What each control does; the browser sends every field's value with it."""
        if act.name == "tick":
            self._on_tick(act.key, bool(act.value))
            return
        self._from_fields(act)
        if act.name == "hear":
            self.audition()
        else:
            self._go({"filter": 1, "prev": self.page - 1, "next": self.page + 1}[act.name])

    def _from_fields(self, act: Action) -> None:
        """The controls' values as the browser had them when one was used."""
        for name in FILTERS:
            if name in act.fields:
                self.filters[name] = str(act.fields[name])
        if "text" in act.fields:
            self.text = str(act.fields["text"])

    def _go(self, page: int) -> None:
        page = max(1, page)
        try:
            found = self._client.voices.presets_page(page, self.page_size, **self._query())
        except Exception as exc:
            self.status = error_html(str(exc))
            self._draw()
            return
        self.page, self.voices, self.total = page, list(found), found.total
        self.status = f"page {self.page} of {self._pages()} &middot; {self.total} voices"
        self._draw()

    def _pages(self) -> int:
        return max(1, -(-self.total // self.page_size))

    def _on_tick(self, voice_id: str, on: bool) -> None:
        if on and voice_id not in self._ticked:
            self._ticked.append(voice_id)
        elif not on and voice_id in self._ticked:
            self._ticked.remove(voice_id)
        self._draw()  # another view of it shows the same ticks (the focus stays put)

    def _say(self, result: str) -> None:
        self.result = result
        self._draw()

    def _draw(self) -> None:
        """The five parts, each redrawn only when it changed (the channel keeps the rest)."""
        me = self.model_id[:8]
        self.value = "".join(
            (
                _filters_html(me, self.filters),
                _pager_html(me, self.page, self._pages(), self.status),
                _rows_html(me, self.voices, self._ticked),
                _say_html(me, self.text),
                f"<div class='dubkit-audition-result' data-dubkit-part='result'>{self.result}</div>",
            )
        )

    def static_html(self) -> str:
        ticked = ", ".join(self._ticked) or "none"
        audition = self.last_audition.html(embed=False) if self.last_audition else ""
        return (
            f"<div><p>{self.total} voices match {html.escape(str(self._query()))}; "
            f"page {self.page}. Ticked: {html.escape(ticked)}</p>"
            f"{voice_table_html(self.voices)}{audition}</div>"
        )

    def fallback_html(self) -> str:
        return self.static_html()

    def __repr__(self) -> str:
        return f"VoiceBrowser({self.total} voices, page {self.page}, {len(self._ticked)} ticked)"


def _select(me: str, name: str, options: Sequence[str], chosen: str) -> str:
    items = "".join(
        f"<option value='{html.escape(o)}'{' selected' if o == chosen else ''}>"
        f"{html.escape(o)}</option>"
        for o in options
    )
    return (
        f"<span style='margin-right:10px'><label for='{me}-{name}'>{name}</label> <select "
        f"id='{me}-{name}' name='{name}' data-dubkit-action='filter'>{items}</select></span>"
    )


def _filters_html(me: str, filters: dict[str, str]) -> str:
    return (
        "<div class='dubkit-filters' style='display:flex;flex-wrap:wrap;gap:4px 0'>"
        + _select(me, "locale", [_ANY, *sorted(locales.TARGET)], filters["locale"])
        + _select(me, "gender", GENDERS, filters["gender"])
        + _select(me, "age", AGES, filters["age"])
        + _select(me, "quality", QUALITIES, filters["quality"])
        + f"<span><label for='{me}-search'>name</label> <input id='{me}-search' "
        f"name='search' type='search' placeholder='part of a name' "
        f"value='{html.escape(filters['search'])}' data-dubkit-action='filter'></span></div>"
    )


def _pager_html(me: str, page: int, pages: int, status: str) -> str:
    def button(action: str, label: str, off: bool) -> str:
        return (
            f"<button id='{me}-{action}' type='button' data-dubkit-action='{action}'"
            f"{' disabled' if off else ''}>{label}</button> "
        )

    return (
        "<div class='dubkit-pager' data-dubkit-part='pager' style='margin:6px 0'>"
        + button("prev", "◀ prev", page <= 1)
        + button("next", "next ▶", page >= pages)
        + f"<span class='dubkit-page' role='status' data-dubkit-part='page'>{status}</span></div>"
    )


def _rows_html(me: str, voices: Sequence[Any], ticked: Sequence[str]) -> str:
    rows = []
    for voice in voices:
        name = str(getattr(voice, "display_name", None) or voice.voice_id)
        box = (
            f"<input type='checkbox' id='{me}-tick-{html.escape(voice.voice_id)}' "
            f"data-dubkit-action='tick' data-dubkit-key='{html.escape(voice.voice_id)}' "
            f"aria-label='tick {html.escape(name)} for the audition'"
            f"{' checked' if voice.voice_id in ticked else ''}>"
        )
        rows.append(f"<tr><td>{box}</td>{voice_row_html(voice)}</tr>")
    return (
        "<table class='dubkit-voices'><thead><tr><th>tick</th><th>name</th><th>voice id</th>"
        "<th>locale</th><th>voice</th><th>provider</th><th>preview</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _say_html(me: str, text: str) -> str:
    return (
        f"<div class='dubkit-say' style='margin:6px 0'><label for='{me}-text'>say</label> "
        f"<textarea id='{me}-text' name='text' rows='2' cols='60'>{html.escape(text)}</textarea> "
        f"<button id='{me}-hear' type='button' data-dubkit-action='hear'>"
        "Hear ticked voices</button></div>"
    )
