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
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._util.deprecation import renamed, renamed_keywords
from ..cast import Cast
from ..errors import DubkitError, ValidationError
from ..frontends import in_voila
from ..frontends.channel import Action, LiveHTML
from ..resources.clone import DEFAULT_TEXT as CLONE_TEXT
from ..results.voices import VoiceLike, voice_id_of
from ..views.palette import error_html
from ..widgets.clone import CloneForm
from .blind import BlindRound, Pick
from .cards import ShortlistView, TakeCard, shortlist_table_html
from .casting import CastPanel
from .page import page_html
from .readings import ReadingsPanel, speak_readings
from .shortlist import Shortlist
from .takes import Take, make_takes
from .voices import VoiceInfo

if TYPE_CHECKING:
    import pandas as pd

    from ..client import Client
    from ..results import Audition, Clone

MAX_VOICES = 6
DEFAULT_TEXT = "Welcome aboard! Tonight we sail past the lighthouse."


@dataclass
class Choice:
    """What the studio's controls choose: whose voices, how many, and whether blind."""

    locale: str
    gender: str
    count: int
    blind: bool


def _error_html(exc: Exception) -> str:
    return error_html(f"{type(exc).__name__}: {exc}")


class AuditionStudio(LiveHTML):
    """Voice choice, the line, takes side by side (loudness-matched, labelled, starrable),
    blind A/B, one voice across readings, the shortlist and cloning.

    One live-channel widget drawn from plain HTML controls, so it works wherever anywidget
    does (JupyterLab, Notebook 7, Voila, VS Code, Colab, marimo). ``in_app``: served by Voila
    (detected; notebook-only hints are left out); ``seed`` makes blind rounds' order
    repeatable.
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
        cast: Cast | None = None,
    ) -> None:
        self._client = client
        self.in_app = in_voila() if in_app is None else in_app
        self.shortlist = Shortlist()
        self.voices: dict[str, VoiceInfo] = {}  # every voice seen here, by id
        self.clones: dict[str, str] = {}  # voice id -> name, clones made here
        self.takes: list[Take] = []  # the last "Hear them"
        self.reading_takes: list[Take] = []  # the last "Hear readings"
        self.blind_round: BlindRound | None = None
        self.picks: list[Pick] = []
        self.last_audition: Audition | None = None
        self.choice = Choice(locale, gender, voices, blind)
        self.text = text
        self.status = ""
        self.round_cards: list[TakeCard] = []
        self.busy = False
        self._notes: dict[str, str] = {}  # typed on a card; the star carries it into the list
        self._rng = random.Random(seed)
        self.readings_panel = ReadingsPanel()
        self.shortlist_view = ShortlistView(self.shortlist, in_app=self.in_app)
        self.cast_panel = CastPanel(cast if cast is not None else Cast(default_locale=locale))
        self.clone_form = CloneForm(client, text=CLONE_TEXT, locale="en-US")
        self.where = (
            "the local sandbox (offline emulator: espeak-ng voices)"
            if client.is_sandbox
            else f"the service at {html.escape(client.base_url)}"
        )
        super().__init__()
        for action in ACTIONS:
            self.on_action(action, self._act)
        self.shortlist.observe(lambda _: self._draw())
        self._draw()

    def __repr__(self) -> str:
        where = "sandbox" if self._client.is_sandbox else "service"
        count = self.choice.count
        return (
            f"AuditionStudio({where}, {self.choice.locale}, {count} "
            f"voice{'' if count == 1 else 's'}, "
            f"{len(self.shortlist)} shortlisted)"
        )

    # ----------------------------------------------------------------- what the buttons do

    def preset_ids(self) -> list[str]:
        """The presets the choices pick now: the first ``voices`` of the locale and gender."""
        gender = None if self.choice.gender == "any" else self.choice.gender
        found = self._client.voices.presets(
            locale=self.choice.locale, gender=gender, limit=self.choice.count
        )
        for voice in found:
            if voice.voice_id:
                self.voices[voice.voice_id] = VoiceInfo.of_preset(voice)
        return found.ids

    def set_blind(self, on: bool = True) -> None:
        """Blind A/B for the next rounds (the checkbox)."""
        self.choice.blind = on
        self._draw()

    def hear(self, text: str | None = None) -> Audition | None:
        """Say the line (or ``text``) with the chosen presets and every clone made here; the
        takes (``.takes``) play loudness-matched, under letters in blind mode.

        >>> studio.hear("Mind the gap.").speech.errors        # {} when every voice spoke
        """
        text = self.text if text is None else text
        locale = self.choice.locale
        if not text.strip():
            self._say("<i>type a line to hear first</i>")
            return None
        self.busy = True
        self._say("<i>speaking…</i>")
        try:
            voice_ids = self.preset_ids() + list(self.clones)
            if not voice_ids:
                self._say(
                    f"<i>no preset voice for {html.escape(locale)}"
                    f" ({html.escape(self.choice.gender)}); try another "
                    "locale or gender</i>"
                )
                return None
            audition = self._client.tts.audition(text, voice_ids, locale=locale)
            self._say("<i>matching loudness…</i>")
            takes = make_takes(audition.speech, self.voices, text=text, locale=locale)
        except Exception as exc:  # shown in the app; the studio stays usable
            self._say(_error_html(exc))
            return None
        finally:
            self.busy = False
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
            for card in self.round_cards:
                card.reveal(picked=card.letter == letter)
            self.readings_panel.offer(self.takes)
            self._say(f"You picked <b>{html.escape(letter)}</b>: {html.escape(pick.name)}.")
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
        """Clone the voice in ``recording`` (as the form's Clone button does) and hear it
        beside the presets."""
        self.clone_form.name = name or ""
        made = self.clone_form.clone_from(recording)
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
        text = self.text if text is None else text
        panel = self.readings_panel
        asked = panel.ask(voice_id_of(voice) if voice is not None else None, emotions, speeds, text)
        if asked is None:
            self._draw()
            return []
        voice_id, emotions, speeds = asked
        panel.status, panel.busy = "<i>speaking…</i>", True
        self._draw()
        try:
            info = self._voice_info(voice_id)
            takes = speak_readings(
                self._client, info, text, emotions, speeds, locale=self.choice.locale
            )
        except Exception as exc:  # shown in the app; the studio stays usable
            panel.status = _error_html(exc)
            return []
        finally:
            panel.busy = False
            self._draw()
        self.reading_takes = takes
        panel.show(takes, info, emotions)
        self._draw()
        return takes

    clone_panel = renamed("clone_form")
    deliveries = renamed("readings")
    delivery_takes = renamed("reading_takes")

    # ----------------------------------------------------------------- internals

    def _act(self, act: Action) -> None:
        """What each control does; the browser sends every field's value with it."""
        self._from_fields(act.fields)
        if act.name == "hear":
            self.hear()
        elif act.name == "blind":
            self.set_blind(bool(act.value))
        elif act.name == "pick":
            self.pick(act.key)
        elif act.name == "star":
            self.star(act.key)
        elif act.name == "note":
            self.shortlist.set_note(act.key, str(act.value).strip())
            self._notes[act.key] = str(act.value).strip()
        elif act.name in ("emotion", "speed"):
            self.readings_panel.toggle(act.name, act.key)
            self._draw()
        elif act.name == "readings":
            self.readings()
        elif act.name == "clear-shortlist":
            self.shortlist.clear()
        elif act.name in ("cast", "cast-entry") and str(act.value or "").strip():
            self.cast_take(act.key, str(act.value).strip())
        elif act.name == "hear-cast":
            self.hear_cast()
        elif act.name == "clone":
            self.clone_form.status = "cloning…"
            self._draw()
            self._adopt(self.clone_form.act(act))
            self._draw()

    @property
    def cast(self) -> Cast:
        """The roles cast here (``cast=`` when the studio was opened), saved with
        ``studio.cast.save(path)`` or the "Cast JSON" download."""
        return self.cast_panel.cast

    def cast_take(self, key: str, role: str) -> bool:
        """Cast the take (or the shortlisted voice) with ``key`` as ``role``, in the locale
        it spoke, with its reading; True when found. The status line says what was cast."""
        take = next((c.take for c in self.cards if c.take.key == key), None)
        entry = self.shortlist[key] if key in self.shortlist else None
        chosen: Any = take or entry
        if chosen is None:
            return False
        try:
            voice = self.cast.assign(role, chosen, locale=chosen.locale)
        except ValidationError as exc:
            self._say(error_html(exc.problem))
            return False
        name = html.escape(voice.name or voice.voice_id)
        locale = html.escape(chosen.locale or self.cast.default_locale)
        self._say(f"Cast {name} as {html.escape(role)} ({locale}).")
        return True

    def hear_cast(self) -> None:
        """Every role's voice in every locale of the cast saying the cast's sample line."""
        self._say("speaking the cast…")
        try:
            self.cast_panel.hear(self._client)
            self.status = f"The cast: {len(self.cast)} roles in {len(self.cast.locales)} locales."
        except DubkitError as exc:
            self.status = _error_html(exc)
        self._draw()

    def star(self, key: str) -> bool:
        """Star the take with ``key`` (a take's ``.key``), or unstar it; True when starred.
        A note typed on its card before comes along."""
        take = next((c.take for c in self.cards if c.take.key == key), None)
        if take is None:
            return False
        if key in self.shortlist:
            self.shortlist.remove(key)
            return False
        self.shortlist.add(take, self._notes.get(key, ""))
        return True

    def _from_fields(self, fields: dict[str, Any]) -> None:
        """The controls' values as the browser had them when one was used."""
        chosen = self.choice
        chosen.locale = str(fields.get("locale", chosen.locale))
        chosen.gender = str(fields.get("gender", chosen.gender))
        try:
            chosen.count = min(MAX_VOICES, max(1, int(fields.get("count", chosen.count))))
        except (TypeError, ValueError):
            pass  # a half-typed number: keep the last good one
        self.text = str(fields.get("text", self.text))
        self.readings_panel.voice = str(fields.get("reading-voice", self.readings_panel.voice))

    def _show_round(self, takes: list[Take]) -> None:
        if self.choice.blind:
            self.blind_round = BlindRound(takes, self._rng)
            self.round_cards = [
                TakeCard(t, letter=k, hidden=True) for k, t in self.blind_round.takes.items()
            ]
            self.status = (
                "<i>Blind round: listen, then pick the take you prefer; the "
                "voices are shown after your pick.</i>"
            )
        else:
            self.blind_round = None
            self.round_cards = [TakeCard(t, place="round") for t in takes]
            self.status = ""
            self.readings_panel.offer(takes)
        self._draw()

    @property
    def cards(self) -> list[TakeCard]:
        """Every card shown: the round's, then the readings'."""
        return self.round_cards + self.readings_panel.cards

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
            return  # the form said why (no file, a refusal); nothing new to hear
        self.clones[clone.voice_id] = clone.name or clone.voice_id
        self.voices[clone.voice_id] = VoiceInfo.of_clone(clone)
        self.hear()

    def _say(self, status: str) -> None:
        self.status = status
        self._draw()

    def _draw(self) -> None:
        """The page: each section a part the channel redraws only when it changed."""
        me = self.model_id[:8]
        self.value = page_html(self, me)

    def picks_html(self) -> str:
        return "<ul class='dubkit-picks'>" + "".join(p.html() for p in self.picks) + "</ul>"

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
            "<div class='dubkit-studio'><p><b>Audition studio</b> (live in a notebook or "
            "as an app: <code>dubkit studio</code>)</p>"
            + (row.format(cards) if cards else "")
            + (self.picks_html() if self.picks else "")
            + (row.format(readings) if readings else "")
            + (shortlist_table_html(self.shortlist) if len(self.shortlist) else "")
            + "</div>"
        )

    def fallback_html(self) -> str:
        return self.static_html()


ACTIONS = (
    "hear", "blind", "pick", "star", "note", "emotion", "speed", "readings",
    "clear-shortlist", "clone", "cast", "cast-entry", "hear-cast",
)  # fmt: skip
