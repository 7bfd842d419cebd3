"""Clone a voice in a notebook and hear it next to the original.

>>> ClonePanel(client)                          # pick a file, Clone, then A/B players
>>> panel.clone_from("me.wav")                  # the same without the file picker
>>> client.clones.ab(clone, "Any text at all.") # A/B players for a clone you already have

The A/B view plays the reference (A) and the clone saying the same text (B): give the
reference's transcript as ``text`` so both say the same words. Players never autoplay or
loop. The panel is drawn by the live channel from plain HTML controls (so it works in every
front end anywidget does, marimo included); :class:`CloneForm` is its form, which the audition
studio shows too. Saved notebooks show the static HTML that travels with the widget.
"""

from __future__ import annotations

import html
import tempfile
from pathlib import Path
from typing import Any, Protocol, cast, get_args

from .._util.deprecation import renamed, renamed_keywords, warn_renamed
from ..errors import DubkitError
from ..frontends.channel import Action, LiveHTML
from ..resources.clone import DEFAULT_TEXT, CloneResource
from ..results import ABPlayers, Clone
from ..schema import CloneProvider
from ..views.palette import error_html, muted
from ._client import sync_client


class CloningClient(Protocol):
    """What the panel uses of a :class:`dubkit.Client`."""

    clones: CloneResource


# What each engine suits (interface §6.3), for the picker; the engines are the schema's.
_SUITS = {"V1": "simple", "V2": "drama", "V3": "English", "V4": "emotion", "V5": "multilingual"}
_PROVIDERS = [
    ("auto", ""),
    *((f"{p} {_SUITS.get(p, '')}".strip(), p) for p in get_args(CloneProvider)),
]
_PICK_FIRST = "Pick a recording first."
_ASK = "Pick a short recording of one voice, write what it says, then Clone."


class CloneForm:
    """The clone form's state and HTML: recording, name, engine, locale, what it says; the
    status line and the A/B players once cloned."""

    def __init__(self, client: CloningClient, *, text: str, locale: str) -> None:
        self._client = client = sync_client(client)
        self.name, self.provider, self.locale, self.text = "", "", locale, text
        self.status = _ASK
        self.clone: Clone | None = None
        self.result: ABPlayers | None = None

    def clone_from(self, source: Any) -> Clone:
        """Clone ``source`` (a path, an http(s) URL or a Material) with the form's settings."""
        words = self.text.strip() or None
        clone = self._client.clones.create(
            source,
            name=self.name.strip() or None,
            provider=cast(CloneProvider, self.provider) if self.provider else None,
            locale=self.locale.strip() or None,
            text=words,
        )
        self.clone = clone
        self.result = self._client.clones.ab(clone, words)
        self.status = f"cloned as {clone.voice_id or ''} ({clone.provider or ''})"
        return clone

    def act(self, act: Action) -> Clone | None:
        """The Clone button: the fields as they were and the picked file; the clone or None
        (the status line says why)."""
        fields = act.fields
        self.name = str(fields.get("clone-name", self.name))
        self.provider = str(fields.get("clone-engine", self.provider))
        self.locale = str(fields.get("clone-locale", self.locale))
        self.text = str(fields.get("clone-text", self.text))
        if act.file is None:
            self.status = _PICK_FIRST
            return None
        name, data = act.file
        path = Path(tempfile.mkdtemp(prefix="dubkit-clone-")) / (Path(name).name or "recording")
        path.write_bytes(data)
        try:
            return self.clone_from(path)
        except DubkitError as exc:  # shown in the form: a click has no cell to raise into
            self.status = str(exc)
            return None

    def html(self, me: str) -> str:
        engines = "".join(
            f"<option value='{html.escape(value)}'"
            f"{' selected' if value == self.provider else ''}>{html.escape(label)}</option>"
            for label, value in _PROVIDERS
        )

        def field(name: str, label: str, control: str) -> str:
            return f"<label for='{me}-{name}' style='margin-right:6px'>{label}</label>{control} "

        failed = self.status not in (_ASK, "cloning…") and not self.status.startswith("cloned as")
        players = self.result._repr_html_() if self.result is not None else ""
        return (
            "<div class='dubkit-clone-form' data-dubkit-part='clone'>"
            "<div style='display:flex;flex-wrap:wrap;align-items:center;gap:4px 0'>"
            + field(
                "clone-file",
                "recording",
                f"<input type='file' id='{me}-clone-file' accept='audio/*,video/*'>",
            )
            + field(
                "clone-name",
                "name",
                f"<input id='{me}-clone-name' name='clone-name' placeholder='my voice' "
                f"value='{html.escape(self.name)}'>",
            )
            + field(
                "clone-engine",
                "engine",
                f"<select id='{me}-clone-engine' name='clone-engine'>{engines}</select>",
            )
            + field(
                "clone-locale",
                "locale",
                f"<input id='{me}-clone-locale' name='clone-locale' size='8' "
                f"value='{html.escape(self.locale)}'>",
            )
            + "</div><div style='margin:4px 0'>"
            + field(
                "clone-text",
                "says",
                f"<textarea id='{me}-clone-text' name='clone-text' rows='2' cols='60'>"
                f"{html.escape(self.text)}</textarea>",
            )
            + f"<button type='button' id='{me}-clone' data-dubkit-action='clone' "
            f"data-dubkit-file='{me}-clone-file' class='dubkit-clone-button'>Clone</button></div>"
            f"<div role='status' class='dubkit-clone-status' data-dubkit-part='clone-status'>"
            f"{error_html(self.status) if failed else muted(html.escape(self.status))}</div>"
            f"<div class='dubkit-clone-players'>{players}</div></div>"
        )


class _FormField:
    """``panel.name.value``: the ipywidgets-era way to fill the form, kept for one version."""

    def __init__(self, panel: ClonePanel, field: str) -> None:
        self._panel, self._field = panel, field

    @property
    def value(self) -> str:
        warn_renamed(f"ClonePanel.{self._field}.value", f"ClonePanel.set({self._field}=...)")
        return str(getattr(self._panel.form, self._field))

    @value.setter
    def value(self, value: str) -> None:
        warn_renamed(f"ClonePanel.{self._field}.value", f"ClonePanel.set({self._field}=...)")
        self._panel.set(**{self._field: value})


class ClonePanel(LiveHTML):
    """Pick a recording, clone it, then A/B the reference and the clone."""

    @renamed_keywords(language="locale")
    def __init__(
        self, client: CloningClient, *, text: str = DEFAULT_TEXT, locale: str = "en-US"
    ) -> None:
        self.form = CloneForm(client, text=text, locale=locale)
        super().__init__()
        self.on_action("clone", self._clone_picked)
        self._draw()

    language = renamed("locale")

    @property
    def locale(self) -> str:
        return self.form.locale

    @property
    def clone(self) -> Clone | None:
        return self.form.clone

    @property
    def result(self) -> ABPlayers | None:
        return self.form.result

    @property
    def status(self) -> str:
        return self.form.status

    def set(
        self, *, name: str | None = None, text: str | None = None, provider: str | None = None
    ) -> ClonePanel:
        """Fill the form from code (what typing into it does)."""
        self.form.name = self.form.name if name is None else name
        self.form.text = self.form.text if text is None else text
        self.form.provider = self.form.provider if provider is None else provider
        self._draw()
        return self

    @property
    def name(self) -> _FormField:
        return _FormField(self, "name")

    @property
    def text(self) -> _FormField:
        return _FormField(self, "text")

    @property
    def provider(self) -> _FormField:
        return _FormField(self, "provider")

    def clone_from(self, source: Any) -> Clone:
        """Clone ``source`` (a path, an http(s) URL or a Material) with the panel's settings."""
        try:
            return self.form.clone_from(source)
        finally:
            self._draw()

    def _clone_picked(self, act: Action) -> None:
        self.form.status = "cloning…"
        self._draw()
        self.form.act(act)
        self._draw()

    def _draw(self) -> None:
        self.value = self.form.html(self.model_id[:8])

    def static_html(self) -> str:
        if self.result is not None:
            return f"<small>{html.escape(self.status)}</small>" + self.result._repr_html_()
        return (
            "<p><small>Clone panel: pick a recording, then Clone (needs a live kernel).</small></p>"
        )

    def __repr__(self) -> str:
        return "ClonePanel()"

    def fallback_html(self) -> str:
        return self.static_html()
