"""The audition studio: pick a locale and a gender, type a line, hear several voices say it side
by side, clone a voice from a recording and hear it beside them, download the takes you like.

Start it as an app with one command (Voila serves it; ``pip install 'dubkit[studio]'``)::

    dubkit studio                  # http://127.0.0.1:8866, the sandbox unless DUBKIT_API_KEY is set

or show it in any notebook:

>>> from dubkit.studio import AuditionStudio
>>> studio = AuditionStudio(dubkit.connect(), locale="fr-FR", gender="female", voices=3)
>>> studio.hear("Bonjour tout le monde !")              # what the "Hear" button does

It only composes what the client and the widgets already do: ``client.voices.presets`` picks
the voices, ``client.voices.audition`` says the line with each of them (any providers mixed),
the clone panel (:class:`~dubkit.widgets.clone.ClonePanel`) makes clones, and the audition
cards are :class:`~dubkit.widgets.voices.Audition`'s.
"""

from __future__ import annotations

import argparse
import html
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import ipywidgets as widgets

from . import locales
from .audio import mime_type
from .widgets.audio import line_source
from .widgets.clone import ClonePanel
from .widgets.voices import GENDERS, Audition

if TYPE_CHECKING:
    from .client import Client
    from .resources.clone import Clone

MAX_VOICES = 6
DEFAULT_TEXT = "Welcome aboard! Tonight we sail past the lighthouse."
# The code cell of the app notebook (notebooks/apps/audition_studio.ipynb holds the same cell);
# used as is when dubkit is installed without the repository's notebooks.
APP_SOURCE = ("import dubkit\n"
              "from dubkit.studio import AuditionStudio\n"
              "\n"
              "AuditionStudio(dubkit.connect(quiet=True))")
_ERROR = "<span class='dubkit-error' style='color:#cf222e'>{}</span>"


def _error_html(exc: Exception) -> str:
    return _ERROR.format(html.escape(f"{type(exc).__name__}: {exc}"))


def downloads_html(audition: Audition, names: dict[str, str]) -> str:
    """One download link a take, named after its voice (``<name>.<format>``)."""
    links = []
    for line in audition.speech:
        if not line.ok:
            continue
        name = names.get(line.voice_id or "", line.voice_id or f"take-{line.index}")
        filename = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
        links.append(f"<a class='dubkit-download' href='{html.escape(line_source(line))}' "
                     f"download='{html.escape(filename)}.{html.escape(line.format)}' "
                     f"type='{html.escape(mime_type(line.format))}'>{html.escape(name)}</a>")
    return ("<div class='dubkit-downloads'>Download: " + " · ".join(links) + "</div>"
            if links else "")


class AuditionStudio(widgets.VBox):
    """The studio's one screen: voice choice, the line, the takes side by side, cloning."""

    def __init__(self, client: "Client", *, locale: str = "en-US", gender: str = "any",
                 voices: int = 3, text: str = DEFAULT_TEXT) -> None:
        self._client = client
        self.clones: dict[str, str] = {}          # voice id -> name, clones made here
        self.names: dict[str, str] = {}           # voice id -> name, for labels and files
        self.last_audition: Audition | None = None
        self._locale = widgets.Dropdown(options=sorted(locales.TARGET), value=locale,
                                        description="locale")
        self._gender = widgets.Dropdown(options=GENDERS, value=gender, description="gender")
        self._count = widgets.IntSlider(value=voices, min=1, max=MAX_VOICES, description="voices")
        self._text = widgets.Textarea(value=text, description="line",
                                      layout=widgets.Layout(width="70%", height="64px"))
        self._hear = widgets.Button(description="Hear them", button_style="primary",
                                    icon="play")
        self.clone_panel = ClonePanel(client)
        self._status = widgets.HTML()
        self._takes = widgets.HTML()
        self._hear.on_click(lambda _: self.hear())
        # Runs after the panel's own handler (registration order): a new clone joins the takes.
        self.clone_panel.button.on_click(lambda _: self._adopt(self.clone_panel.clone))
        where = ("the local sandbox (offline emulator: espeak-ng voices)" if client.is_sandbox
                 else f"the service at {html.escape(client.base_url)}")
        super().__init__([
            widgets.HTML(f"<p>Connected to {where}.</p>"),
            widgets.HBox([self._locale, self._gender, self._count],
                         layout=widgets.Layout(flex_flow="row wrap")),
            widgets.HBox([self._text, self._hear]),
            self._status, self._takes,
            widgets.HTML("<h4>Clone a voice</h4><p>Upload a short recording of one speaker "
                         "and write what it says; the clone joins the takes above, beside "
                         "the presets.</p>"),
            self.clone_panel])
        self.add_class("dubkit-studio")

    # ----------------------------------------------------------------- what the buttons do

    def preset_ids(self) -> list[str]:
        """The presets the choices pick now: the first ``voices`` of the locale and gender."""
        gender = None if self._gender.value == "any" else self._gender.value
        found = self._client.voices.presets(locale=self._locale.value, gender=gender,
                                            limit=self._count.value)
        for voice in found:
            self.names[voice.voice_id] = voice.display_name or voice.voice_id
        return found.ids

    def hear(self, text: str | None = None) -> Audition | None:
        """Say the line (or ``text``) with the chosen presets and every clone made here."""
        text = self._text.value if text is None else text
        if not text.strip():
            self._status.value = "<i>type a line to hear first</i>"
            return None
        self._status.value = "<i>speaking…</i>"
        self._hear.disabled = True
        try:
            voice_ids = self.preset_ids() + list(self.clones)
            if not voice_ids:
                self._status.value = (f"<i>no preset voice for {html.escape(self._locale.value)}"
                                      f" ({html.escape(self._gender.value)}); try another "
                                      "locale or gender</i>")
                return None
            audition = self._client.voices.audition(text, voice_ids,
                                                    language=self._locale.value)
        except Exception as exc:       # shown in the app; the studio stays usable
            self._status.value = _error_html(exc)
            return None
        finally:
            self._hear.disabled = False
        self.last_audition = audition
        self._takes.value = audition._repr_html_() + downloads_html(audition, self.names)
        self._status.value = ""
        return audition

    def clone(self, recording: "str | Path", name: str | None = None) -> "Clone":
        """Clone the voice in ``recording`` (as the panel's Clone button does) and hear it
        beside the presets."""
        self.clone_panel.name.value = name or ""
        clone = self.clone_panel.clone_from(recording)
        self._adopt(clone)
        return clone

    # ----------------------------------------------------------------- internals

    def _adopt(self, clone: "Clone | None") -> None:
        if clone is None or not clone.voice_id or clone.voice_id in self.clones:
            return          # the panel said why (no file, a refusal); nothing new to hear
        label = clone.name or clone.voice_id
        self.clones[clone.voice_id] = label
        self.names[clone.voice_id] = f"{label} (clone)"
        self.hear()

    def static_html(self) -> str:
        """What a saved notebook shows in place of the live app."""
        takes = self._takes.value or ""
        return ("<div class='dubkit-studio'><p><b>Audition studio</b> (live in JupyterLab or "
                "as an app: <code>dubkit studio</code>)</p>" + takes + "</div>")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = self.static_html()
        return bundle


# --------------------------------------------------------------------- the command


def app_notebook() -> Path:
    """The notebook Voila serves: the repository's, else a copy of its code cell."""
    here = Path(__file__).resolve().parent.parent / "notebooks" / "apps" / "audition_studio.ipynb"
    if here.exists():
        return here
    import nbformat
    folder = Path(tempfile.mkdtemp(prefix="dubkit-studio-"))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(APP_SOURCE)])
    target = folder / "audition_studio.ipynb"
    nbformat.write(notebook, target)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """``dubkit studio [--port N] [--host H] [--no-browser]``: serve the studio with Voila."""
    parser = argparse.ArgumentParser(
        prog="dubkit studio", description="Serve the audition studio, a Voila app, on this "
        "machine: the sandbox by default, the service when DUBKIT_API_KEY is set.")
    parser.add_argument("--port", type=int, default=8866)
    parser.add_argument("--host", default="127.0.0.1",
                        help="interface to listen on (loopback by default)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    args = parser.parse_args(argv)
    try:
        from voila.app import Voila
    except ImportError:
        print("dubkit studio needs Voila: pip install 'dubkit[studio]'", file=sys.stderr)
        return 2
    options = [str(app_notebook()), f"--port={args.port}", f"--Voila.ip={args.host}",
               "--show_tracebacks=True", "--theme=light"]
    if args.no_browser:
        options.append("--no-browser")
    Voila.launch_instance(argv=options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
