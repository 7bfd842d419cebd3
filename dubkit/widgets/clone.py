"""Clone a voice in a notebook and hear it next to the original.

>>> ClonePanel(client)                          # pick a file, Clone, then A/B players
>>> panel.clone_from("me.wav")                  # the same without the file picker
>>> client.clones.ab(clone, "Any text at all.") # A/B players for a clone you already have

The A/B view plays the reference (A) and the clone saying the same text (B): give the
reference's transcript as ``text`` so both say the same words. Players never autoplay or
loop. Saved notebooks show the static HTML that travels with the widget.
"""

from __future__ import annotations

import html
import tempfile
from pathlib import Path
from typing import Any, Protocol, get_args

import ipywidgets as widgets

from .._util.deprecation import renamed, renamed_keywords
from ..errors import DubkitError
from ..resources.clone import DEFAULT_TEXT, CloneResource
from ..results import ABPlayers, Clone
from ..schema import CloneProvider


class CloningClient(Protocol):
    """What the panel uses of a :class:`dubkit.Client`."""

    clones: CloneResource


# What each engine suits (interface §6.3), for the picker; the engines are the schema's.
_SUITS = {"V1": "simple", "V2": "drama", "V3": "English", "V4": "emotion", "V5": "multilingual"}
_PROVIDERS = [
    ("auto", ""),
    *((f"{p} {_SUITS.get(p, '')}".strip(), p) for p in get_args(CloneProvider)),
]


class ClonePanel(widgets.VBox):
    """Pick a recording (FileUpload), clone it, then A/B the reference and the clone."""

    @renamed_keywords(language="locale")
    def __init__(
        self, client: CloningClient, *, text: str = DEFAULT_TEXT, locale: str = "en-US"
    ) -> None:
        self._client = client
        self.file = widgets.FileUpload(
            accept="audio/*,video/*", multiple=False, description="recording"
        )
        self.name = widgets.Text(placeholder="my voice", description="name")
        self.provider = widgets.Dropdown(options=_PROVIDERS, value="", description="engine")
        self.locale = widgets.Text(value=locale, description="locale")
        self.text = widgets.Textarea(
            value=text, description="says", layout=widgets.Layout(width="480px")
        )
        self.button = widgets.Button(description="Clone", button_style="primary", icon="microphone")
        self.status = widgets.HTML(
            "<small>Pick a short recording of one voice, write what it says, then Clone.</small>"
        )
        self.players = widgets.HTML()
        self.clone: Clone | None = None
        self.result: ABPlayers | None = None
        self.button.on_click(lambda _: self._clone_picked())
        super().__init__(
            [
                widgets.HBox([self.file, self.name, self.provider]),
                self.locale,
                self.text,
                self.button,
                self.status,
                self.players,
            ]
        )

    language = renamed("locale")

    def clone_from(self, source: Any) -> Clone:
        """Clone ``source`` (a path, an http(s) URL or a Material) with the panel's settings."""
        self.status.value = "<small>cloning…</small>"
        words = self.text.value.strip() or None
        clone = self._client.clones.create(
            source,
            name=self.name.value.strip() or None,
            provider=self.provider.value or None,
            locale=self.locale.value.strip() or None,
            text=words,
        )
        self.clone = clone
        self.result = self._client.clones.ab(clone, words)
        self.players.value = self.result._repr_html_()
        self.status.value = (
            f"<small>cloned as <code>{html.escape(clone.voice_id or '')}"
            f"</code> ({html.escape(clone.provider or '')})</small>"
        )
        return clone

    def _clone_picked(self) -> None:
        picked = self.file.value
        if not picked:
            self.status.value = "<small style='color:#cf222e'>Pick a recording first.</small>"
            return
        item = picked[0]
        folder = Path(tempfile.mkdtemp(prefix="dubkit-clone-"))
        path = folder / Path(item["name"]).name
        path.write_bytes(bytes(item["content"]))
        try:
            self.clone_from(path)
        except DubkitError as exc:  # shown in the panel: a click has no cell to raise into
            self.status.value = f"<small style='color:#cf222e'>{html.escape(str(exc))}</small>"

    def static_html(self) -> str:
        if self.result is not None:
            return str(self.status.value) + self.result._repr_html_()
        return (
            "<p><small>Clone panel: pick a recording, then Clone (needs a live kernel).</small></p>"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = self.static_html()  # what a saved notebook shows
        bundle["text/plain"] = "ClonePanel()"
        return bundle
