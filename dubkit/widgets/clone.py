"""Clone a voice in a notebook and hear it next to the original.

>>> ClonePanel(client)                          # pick a file, Clone, then A/B players
>>> panel.clone_from("me.wav")                  # the same without the file picker
>>> ab(client, clone, "Any text at all.")       # A/B players for a clone you already have

The A/B view plays the reference (A) and the clone saying the same text (B): give the
reference's transcript as ``text`` so both say the same words. Players never autoplay or
loop. Saved notebooks show the static HTML that travels with the widget.
"""

from __future__ import annotations

import html
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from ..media.audio import format_of, mime_type
from ..errors import DubkitError
from .audio import player_html
from .sources import embedded_or_url

if TYPE_CHECKING:
    from ..client import Client
    from ..resources.clone import Clone

DEFAULT_TEXT = "Hello! This is my voice, cloned from a short recording."
_PROVIDERS = [("auto", ""), ("V1 simple", "V1"), ("V2 drama", "V2"), ("V3 English", "V3"),
              ("V4 emotion", "V4"), ("V5 multilingual", "V5")]


class ABPlayers:
    """The reference and the clone, side by side, saying ``text``."""

    def __init__(self, clone: "Clone", clone_uri: str, text: str) -> None:
        self.clone, self.clone_uri, self.text = clone, clone_uri, text

    def __repr__(self) -> str:
        return f"ABPlayers(reference vs {self.clone.voice_id}, text={self.text!r:.60})"

    def _repr_html_(self) -> str:
        def cell(title: str, url: str | None) -> str:
            mime = mime_type(format_of(url or ""))
            player = player_html(embedded_or_url(url, mime), mime) if url else "<i>none</i>"
            return (f"<td style='padding:4px 12px'><b>{html.escape(title)}</b><br>{player}"
                    f"</td>")
        return (f"<table class='dubkit-ab'><tr>{cell('A: reference', self.clone.ref_audio)}"
                f"{cell(f'B: clone {self.clone.name or self.clone.voice_id}', self.clone_uri)}"
                f"</tr>"
                f"<tr><td colspan='2' style='padding:4px 12px'><small>text: "
                f"{html.escape(self.text)}</small></td></tr></table>")


def ab(client: "Client", clone: "Clone", text: str | None = None, **tts: Any) -> ABPlayers:
    """Speak ``text`` (default: the clone's transcript) with the clone; A/B it with the reference.

    ``tts`` options go to ``client.tts.speak`` (e.g. ``language="en-US"``).
    """
    words = text or clone.text or DEFAULT_TEXT
    line = client.tts.speak(words, clone.voice_id, **tts)
    if not line.ok:
        raise DubkitError(f"the clone could not speak: {line.error_message}")
    return ABPlayers(clone, line.uri or "", words)


class ClonePanel(widgets.VBox):
    """Pick a recording (FileUpload), clone it, then A/B the reference and the clone."""

    def __init__(self, client: "Client", *, text: str = DEFAULT_TEXT,
                 language: str = "en-US") -> None:
        self._client = client
        self.file = widgets.FileUpload(accept="audio/*,video/*", multiple=False,
                                       description="recording")
        self.name = widgets.Text(placeholder="my voice", description="name")
        self.provider = widgets.Dropdown(options=_PROVIDERS, value="", description="engine")
        self.language = widgets.Text(value=language, description="language")
        self.text = widgets.Textarea(value=text, description="says",
                                     layout=widgets.Layout(width="480px"))
        self.button = widgets.Button(description="Clone", button_style="primary",
                                     icon="microphone")
        self.status = widgets.HTML("<small>Pick a short recording of one voice, write what it "
                                   "says, then Clone.</small>")
        self.players = widgets.HTML()
        self.clone: "Clone | None" = None
        self.result: ABPlayers | None = None
        self.button.on_click(lambda _: self._clone_picked())
        super().__init__([widgets.HBox([self.file, self.name, self.provider]), self.language,
                          self.text, self.button, self.status, self.players])

    def clone_from(self, source: Any) -> "Clone":
        """Clone ``source`` (a path, an http(s) URL or a Material) with the panel's settings."""
        from ..resources.clone import clone_voice
        self.status.value = "<small>cloning…</small>"
        words = self.text.value.strip() or None
        clone = clone_voice(self._client, source, name=self.name.value.strip() or None,
                            provider=self.provider.value or None,
                            language=self.language.value.strip() or None, text=words)
        self.clone = clone
        self.result = ab(self._client, clone, words)
        self.players.value = self.result._repr_html_()
        self.status.value = (f"<small>cloned as <code>{html.escape(clone.voice_id or '')}"
                             f"</code> ({html.escape(clone.provider or '')})</small>")
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
        except DubkitError as exc:      # shown in the panel: a click has no cell to raise into
            self.status.value = (f"<small style='color:#cf222e'>{html.escape(str(exc))}"
                                 f"</small>")

    def static_html(self) -> str:
        if self.result is not None:
            return self.status.value + self.result._repr_html_()
        return "<p><small>Clone panel: pick a recording, then Clone (needs a live kernel).</small></p>"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = self.static_html()     # what a saved notebook shows
        bundle["text/plain"] = "ClonePanel()"
        return bundle
