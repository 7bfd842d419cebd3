"""Voice browsing and auditioning in a notebook.

>>> browser = VoiceBrowser(client, locale="en-US")      # filters, table, audition panel
>>> browser.set_filters(gender="female", quality="high")
>>> browser.tick(browser.voice_ids[:3]); browser.audition("Welcome aboard!")
>>> client.tts.audition("Welcome aboard!", ids)        # side-by-side players, no widget

Each voice row has a play control for the catalogue's preview (played from a URL the browser
can reach, loaded only when pressed). Saved notebooks and nbval see the static HTML travelling
with the widget.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any, Protocol

import ipywidgets as widgets

from .. import locales
from ..resources import TTSResource, VoicesResource
from ..results import Audition
from ..views.voices import voice_row_html, voice_table_html


class VoiceClient(Protocol):
    """What the browser uses of a :class:`dubkit.Client`."""

    voices: VoicesResource
    tts: TTSResource


_ANY = "any"
GENDERS = (_ANY, "female", "male")
AGES = (_ANY, "young", "adult", "senior")
QUALITIES = (_ANY, "high")


class VoiceBrowser(widgets.VBox):
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
        self._client = client
        self.page, self.page_size = 1, page_size
        self.voices: list[Any] = []
        self.total = 0
        self.last_audition: Audition | None = None
        self._locale = widgets.Dropdown(
            options=[_ANY, *sorted(locales.TARGET)], value=locale or _ANY, description="locale"
        )
        self._gender = widgets.Dropdown(options=GENDERS, value=gender or _ANY, description="gender")
        self._age = widgets.Dropdown(options=AGES, value=age or _ANY, description="age")
        self._quality = widgets.Dropdown(
            options=QUALITIES, value=quality or _ANY, description="quality"
        )
        self._search = widgets.Text(value=search, description="name", placeholder="part of a name")
        self._prev, self._next = (
            widgets.Button(description="◀ prev"),
            widgets.Button(description="next ▶"),
        )
        self._status = widgets.HTML()
        self._rows = widgets.VBox()
        self._text = widgets.Textarea(
            value=text, description="say", layout=widgets.Layout(width="60%")
        )
        self._hear = widgets.Button(description="Hear ticked voices", button_style="primary")
        self._result = widgets.HTML()
        self._ticks: dict[str, widgets.Checkbox] = {}
        self._ticked: list[str] = []
        self._quiet = False  # set while several filters change at once
        for control in (self._locale, self._gender, self._age, self._quality, self._search):
            control.observe(lambda _: None if self._quiet else self._go(1), names="value")
        self._prev.on_click(lambda _: self._go(self.page - 1))
        self._next.on_click(lambda _: self._go(self.page + 1))
        self._hear.on_click(lambda _: self.audition())
        filters = widgets.HBox(
            [self._locale, self._gender, self._age, self._quality, self._search],
            layout=widgets.Layout(flex_flow="row wrap"),
        )
        super().__init__(
            [
                filters,
                widgets.HBox([self._prev, self._next, self._status]),
                self._rows,
                widgets.HBox([self._text, self._hear]),
                self._result,
            ]
        )
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
        controls = {
            "locale": self._locale,
            "gender": self._gender,
            "age": self._age,
            "quality": self._quality,
            "search": self._search,
        }
        unknown = set(filters) - set(controls)
        if unknown:
            raise ValueError(f"{sorted(unknown)[0]}: not a filter; use {', '.join(controls)}")
        self._quiet = True
        try:
            for name, value in filters.items():
                controls[name].value = (
                    value if value is not None else ("" if name == "search" else _ANY)
                )
        finally:
            self._quiet = False
        self._go(1)
        return self

    def tick(self, voice_ids: Iterable[str]) -> VoiceBrowser:
        for voice_id in voice_ids:
            if voice_id not in self._ticked:
                self._ticked.append(voice_id)
            if voice_id in self._ticks:
                self._ticks[voice_id].value = True
        return self

    def audition(self, text: str | None = None) -> Audition | None:
        """Say ``text`` (or the panel's text) with every ticked voice, side by side."""
        text = text if text is not None else self._text.value
        if not self._ticked:
            self._result.value = "<i>tick one or more voices first</i>"
            return None
        if not text.strip():
            self._result.value = "<i>type something to say first</i>"
            return None
        self._result.value = f"<i>speaking with {len(self._ticked)} voices…</i>"
        try:
            self.last_audition = self._client.tts.audition(text, self._ticked)
        except Exception as exc:  # show it in the panel; the widget stays usable
            self._result.value = (
                f"<span style='color:#cf222e'>{html.escape(type(exc).__name__)}"
                f": {html.escape(str(exc))}</span>"
            )
            return None
        # Live widget state is saved with the notebook: play from URLs, embed nothing there.
        self._result.value = self.last_audition.html(embed=False)
        return self.last_audition

    # ----------------------------------------------------------------- internals

    def _filters(self) -> dict[str, Any]:
        chosen = {
            "locale": self._locale.value,
            "gender": self._gender.value,
            "age": self._age.value,
            "quality": self._quality.value,
            "search": self._search.value.strip(),
        }
        return {k: v for k, v in chosen.items() if v not in (_ANY, "")}

    def _go(self, page: int) -> None:
        page = max(1, page)
        try:
            found = self._client.voices.presets_page(page, self.page_size, **self._filters())
        except Exception as exc:
            self._status.value = f"<span style='color:#cf222e'>{html.escape(str(exc))}</span>"
            return
        self.page, self.voices, self.total = page, list(found), found.total
        pages = max(1, -(-self.total // self.page_size))
        self._status.value = f"page {self.page} of {pages} &middot; {self.total} voices"
        self._prev.disabled, self._next.disabled = self.page <= 1, self.page >= pages
        self._ticks = {}
        rows = []
        for voice in self.voices:
            box = widgets.Checkbox(
                value=voice.voice_id in self._ticked,
                indent=False,
                layout=widgets.Layout(width="28px"),
            )
            box.observe(
                lambda change, v=voice.voice_id: self._on_tick(v, change["new"]), names="value"
            )
            self._ticks[voice.voice_id] = box
            rows.append(
                widgets.HBox(
                    [
                        box,
                        widgets.HTML(
                            f"<table class='dubkit-voices'><tr>{voice_row_html(voice)}</tr></table>"
                        ),
                    ]
                )
            )
        self._rows.children = rows

    def _on_tick(self, voice_id: str, on: bool) -> None:
        if on and voice_id not in self._ticked:
            self._ticked.append(voice_id)
        elif not on and voice_id in self._ticked:
            self._ticked.remove(voice_id)

    def static_html(self) -> str:
        ticked = ", ".join(self._ticked) or "none"
        audition = self.last_audition.html(embed=False) if self.last_audition else ""
        return (
            f"<div><p>{self.total} voices match {html.escape(str(self._filters()))}; "
            f"page {self.page}. Ticked: {html.escape(ticked)}</p>"
            f"{voice_table_html(self.voices)}{audition}</div>"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = self.static_html()  # what a saved notebook shows
        return bundle
