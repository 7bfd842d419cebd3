"""The studio's one screen: choose voices, hear them fairly, shortlist, compare readings, clone.

>>> studio = AuditionStudio(dubkit.connect(), locale="fr-FR", gender="female", voices=3)
>>> studio.hear("Bonjour tout le monde !")        # the "Hear them" button
>>> studio.takes[0].matched.label()               # '-19.8 LUFS → -23'
>>> studio.shortlist.add(studio.takes[0], "warm, a bit slow")
>>> studio.readings(studio.takes[0].voice.voice_id, emotions=["neutral", "sad"],
...                   speeds=[1.0, 1.25])         # one voice, several readings
>>> studio.set_blind(True); studio.hear(); studio.pick("B")   # blind A/B, then who was who
"""

from __future__ import annotations

import html
import os
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from .. import locales
from .._util.deprecation import renamed, renamed_keywords
from ..results.voices import VoiceLike, voice_id_of
from ..widgets.clone import ClonePanel
from ..widgets.voices import GENDERS
from .blind import BlindRound, Pick
from .cards import ShortlistView, TakeCard, shortlist_table_html
from .readings import ReadingsPanel, speak_readings, takes_box
from .shortlist import Shortlist
from .takes import Take, make_takes
from .voices import VoiceInfo

if TYPE_CHECKING:
    import pandas as pd

    from ..client import Client
    from ..results import Audition, Clone

MAX_VOICES = 6
DEFAULT_TEXT = "Welcome aboard! Tonight we sail past the lighthouse."
_ERROR = "<span class='dubkit-error' style='color:#cf222e'>{}</span>"


def running_in_voila() -> bool:
    """Whether this kernel serves a Voila app (Voila sets these in its kernels' environment)."""
    return any(name in os.environ for name in ("VOILA_KERNEL_ID", "VOILA_REQUEST_URL"))


def _error_html(exc: Exception) -> str:
    return _ERROR.format(html.escape(f"{type(exc).__name__}: {exc}"))


class AuditionStudio(widgets.VBox):
    """Voice choice, the line, takes side by side (loudness-matched, labelled, starrable),
    blind A/B, one voice across readings, the shortlist and cloning.

    ``in_app``: served by Voila (detected; notebook-only hints are left out); ``seed``
    makes blind rounds' order repeatable.
    """

    def __init__(
        self,
        client: Client,
        *,
        locale: str = "en-US",
        gender: str = "any",
        voices: int = 3,
        text: str = DEFAULT_TEXT,
        blind: bool = False,
        in_app: bool | None = None,
        seed: int | None = None,
    ) -> None:
        self._client = client
        self.in_app = running_in_voila() if in_app is None else in_app
        self.shortlist = Shortlist()
        self.voices: dict[str, VoiceInfo] = {}  # every voice seen here, by id
        self.clones: dict[str, str] = {}  # voice id -> name, clones made here
        self.takes: list[Take] = []  # the last "Hear them"
        self.reading_takes: list[Take] = []  # the last "Hear readings"
        self.blind_round: BlindRound | None = None
        self.picks: list[Pick] = []
        self.last_audition: Audition | None = None
        self._rng = random.Random(seed)
        self._locale = widgets.Dropdown(
            options=sorted(locales.TARGET), value=locale, description="locale"
        )
        self._gender = widgets.Dropdown(options=GENDERS, value=gender, description="gender")
        self._count = widgets.IntSlider(value=voices, min=1, max=MAX_VOICES, description="voices")
        self._blind = widgets.Checkbox(
            value=blind,
            description="blind A/B (voices hidden until you pick)",
            indent=False,
            layout=widgets.Layout(width="auto"),
        )
        self._blind.add_class("dubkit-blind")
        self._text = widgets.Textarea(
            value=text, description="line", layout=widgets.Layout(width="70%", height="64px")
        )
        self._hear = widgets.Button(description="Hear them", button_style="primary", icon="play")
        self._status = widgets.HTML()
        self._takes = takes_box()
        self._takes.add_class("dubkit-takes")
        self._picks = widgets.HTML()
        self._hear.on_click(lambda _: self.hear())
        self._readings_panel = ReadingsPanel(self.shortlist)
        self._readings_panel.button.on_click(lambda _: self.readings())
        self.shortlist_view = ShortlistView(self.shortlist, in_app=self.in_app)
        self.shortlist.observe(self._sync_cards)
        self.clone_panel = ClonePanel(client)
        # Runs after the panel's own handler (registration order): a new clone joins the takes.
        self.clone_panel.button.on_click(lambda _: self._adopt(self.clone_panel.clone))
        where = (
            "the local sandbox (offline emulator: espeak-ng voices)"
            if client.is_sandbox
            else f"the service at {html.escape(client.base_url)}"
        )
        super().__init__(
            [
                widgets.HTML(f"<p>Connected to {where}.</p>"),
                widgets.HBox(
                    [self._locale, self._gender, self._count, self._blind],
                    layout=widgets.Layout(flex_flow="row wrap"),
                ),
                widgets.HBox([self._text, self._hear]),
                self._status,
                self._takes,
                self._picks,
                widgets.HTML(
                    "<h4>One voice, several readings</h4><p>The same line by one "
                    "voice with each emotion and speed ticked, side by side.</p>"
                ),
                self._readings_panel.controls,
                self._readings_panel.status,
                self._readings_panel.box,
                widgets.HTML("<h4>Shortlist</h4>"),
                self.shortlist_view,
                widgets.HTML(
                    "<h4>Clone a voice</h4><p>Upload a short recording of one speaker "
                    "and write what it says; the clone joins the takes above, beside "
                    "the presets.</p>"
                ),
                self.clone_panel,
            ]
        )
        self.add_class("dubkit-studio")

    def __repr__(self) -> str:
        where = "sandbox" if self._client.is_sandbox else "service"
        count = self._count.value
        return (
            f"AuditionStudio({where}, {self._locale.value}, {count} "
            f"voice{'' if count == 1 else 's'}, "
            f"{len(self.shortlist)} shortlisted)"
        )

    # ----------------------------------------------------------------- what the buttons do

    def preset_ids(self) -> list[str]:
        """The presets the choices pick now: the first ``voices`` of the locale and gender."""
        gender = None if self._gender.value == "any" else self._gender.value
        found = self._client.voices.presets(
            locale=self._locale.value, gender=gender, limit=self._count.value
        )
        for voice in found:
            if voice.voice_id:
                self.voices[voice.voice_id] = VoiceInfo.of_preset(voice)
        return found.ids

    def set_blind(self, on: bool = True) -> None:
        """Blind A/B for the next rounds (the checkbox)."""
        self._blind.value = on

    def hear(self, text: str | None = None) -> Audition | None:
        """Say the line (or ``text``) with the chosen presets and every clone made here; the
        takes (``.takes``) play loudness-matched, under letters in blind mode.

        >>> studio.hear("Mind the gap.").speech.errors        # {} when every voice spoke
        """
        text = self._text.value if text is None else text
        if not text.strip():
            self._status.value = "<i>type a line to hear first</i>"
            return None
        self._status.value = "<i>speaking…</i>"
        self._hear.disabled = True
        try:
            voice_ids = self.preset_ids() + list(self.clones)
            if not voice_ids:
                self._status.value = (
                    f"<i>no preset voice for {html.escape(self._locale.value)}"
                    f" ({html.escape(self._gender.value)}); try another "
                    "locale or gender</i>"
                )
                return None
            audition = self._client.tts.audition(text, voice_ids, locale=self._locale.value)
            self._status.value = "<i>matching loudness…</i>"
            takes = make_takes(audition.speech, self.voices, text=text, locale=self._locale.value)
        except Exception as exc:  # shown in the app; the studio stays usable
            self._status.value = _error_html(exc)
            return None
        finally:
            self._hear.disabled = False
        self.last_audition, self.takes = audition, takes
        self._show_round(takes)
        return audition

    def pick(self, letter: str) -> Pick:
        """Pick a blind take by its letter: records the pick and reveals every voice.

        >>> studio.pick("B").name                              # who B was, e.g. 'Ava'
        """
        if self.blind_round is None:
            raise ValueError("no blind round to pick in: set_blind(True), then hear()")
        already = self.blind_round.revealed
        pick = self.blind_round.pick(letter, len(self.picks) + 1)
        if not already:
            self.picks.append(pick)
            for card in self._round_cards():
                card.reveal(picked=card.letter == letter)
            self._picks.value = (
                "<ul class='dubkit-picks'>" + "".join(p.html() for p in self.picks) + "</ul>"
            )
            self._status.value = (
                f"You picked <b>{html.escape(letter)}</b>: {html.escape(pick.name)}."
            )
            self._readings_panel.offer(self.takes)
        return pick

    def picks_frame(self) -> pd.DataFrame:
        """The blind picks so far as a table: round, text, letter, voice, line-up.

        >>> studio.picks_frame().name.value_counts()           # who wins blind
        """
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "round": p.round,
                    "text": p.text,
                    "letter": p.letter,
                    "voice_id": p.voice_id,
                    "name": p.name,
                    "provider": p.provider,
                    "lineup": p.lineup,
                }
                for p in self.picks
            ]
        )

    def clone(self, recording: Any, name: str | None = None) -> Clone:
        """Clone the voice in ``recording`` (as the panel's Clone button does) and hear it
        beside the presets."""
        self.clone_panel.name.value = name or ""
        made = self.clone_panel.clone_from(recording)
        self._adopt(made)
        return made

    # ----------------------------------------------------------------- readings

    @renamed_keywords(voice_id="voice")
    def readings(
        self,
        voice: VoiceLike | None = None,
        *,
        emotions: Sequence[str] | None = None,
        speeds: Sequence[float] | None = None,
        text: str | None = None,
    ) -> list[Take]:
        """The line said by one voice with each emotion at each speed (emotion-major order).

        A speed is a share of that emotion's natural reading time, asked for through the
        line's ``duration``; ``neutral`` sends no emotion prompt.

        >>> studio.readings("sv_s7_en_us_emote_f", emotions=["neutral", "happy"],
        ...                   speeds=[0.8, 1.0])               # four takes, one voice
        """
        text = self._text.value if text is None else text
        panel = self._readings_panel
        asked = panel.ask(voice_id_of(voice) if voice is not None else None, emotions, speeds, text)
        if asked is None:
            return []
        voice_id, emotions, speeds = asked
        panel.status.value = "<i>speaking…</i>"
        panel.button.disabled = True
        try:
            info = self._voice_info(voice_id)
            takes = speak_readings(
                self._client, info, text, emotions, speeds, locale=self._locale.value
            )
        except Exception as exc:  # shown in the app; the studio stays usable
            panel.status.value = _error_html(exc)
            return []
        finally:
            panel.button.disabled = False
        self.reading_takes = takes
        panel.show(takes, info, emotions)
        return takes

    deliveries = renamed("readings")
    delivery_takes = renamed("reading_takes")

    # ----------------------------------------------------------------- internals

    def _show_round(self, takes: list[Take]) -> None:
        if self._blind.value:
            self.blind_round = BlindRound(takes, self._rng)
            cards = [
                TakeCard(t, self.shortlist, letter=k, hidden=True, on_pick=self.pick)
                for k, t in self.blind_round.takes.items()
            ]
            self._status.value = (
                "<i>Blind round: listen, then pick the take you prefer; the "
                "voices are shown after your pick.</i>"
            )
        else:
            self.blind_round = None
            cards = [TakeCard(t, self.shortlist) for t in takes]
            self._status.value = ""
            self._readings_panel.offer(takes)
        self._takes.children = cards

    def _round_cards(self) -> list[TakeCard]:
        return [c for c in self._takes.children if isinstance(c, TakeCard)]

    @property
    def cards(self) -> list[TakeCard]:
        """Every card shown: the round's, then the readings'."""
        return self._round_cards() + self._readings_panel.cards

    def _sync_cards(self, _: object) -> None:
        for card in self.cards:
            card.sync()

    def _voice_info(self, voice_id: str) -> VoiceInfo:
        if voice_id not in self.voices:
            info = VoiceInfo.unknown(voice_id)
            if voice_id.startswith("cv_"):
                clones = self._client.voices.clones(voice=voice_id, limit=1)
                info = VoiceInfo.of_clone(clones[0]) if clones else info
            else:
                presets = self._client.voices.presets(voice=voice_id, limit=1)
                info = VoiceInfo.of_preset(presets[0]) if presets else info
            self.voices[voice_id] = info
        return self.voices[voice_id]

    def _adopt(self, clone: Clone | None) -> None:
        if clone is None or not clone.voice_id or clone.voice_id in self.clones:
            return  # the panel said why (no file, a refusal); nothing new to hear
        self.clones[clone.voice_id] = clone.name or clone.voice_id
        self.voices[clone.voice_id] = VoiceInfo.of_clone(clone)
        self.hear()

    def static_html(self) -> str:
        """What a saved notebook shows in place of the live app."""
        shown: list[tuple[str | None, Take]] = (
            list(self.blind_round.takes.items())
            if self.blind_round is not None
            else [(None, t) for t in self.takes]
        )
        hidden = self.blind_round is not None and not self.blind_round.revealed
        cards = "".join(t.card_html(letter=k, hidden=hidden) for k, t in shown)
        readings = "".join(t.card_html() for t in self.reading_takes)
        row = "<div style='display:flex;flex-wrap:wrap;gap:8px'>{}</div>"
        return (
            "<div class='dubkit-studio'><p><b>Audition studio</b> (live in JupyterLab or "
            "as an app: <code>dubkit studio</code>)</p>"
            + (row.format(cards) if cards else "")
            + self._picks.value
            + (row.format(readings) if readings else "")
            + (shortlist_table_html(self.shortlist) if len(self.shortlist) else "")
            + "</div>"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = self.static_html()
        bundle["text/plain"] = repr(self)
        return bundle
