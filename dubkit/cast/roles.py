"""The roles of a cast, and the voice that plays each role in each locale.

>>> cast = Cast("The harbour", default_locale="en-US")          # a Roles, and what it does
>>> cast.add_role("Narrator", note="warm, unhurried")
>>> cast.assign("Narrator", "sv_s3_en_us_story_f", emotion="calm")           # en-US
>>> cast.assign("Narrator", "sv_s2_fr_fr_chat_f", locale="fr-FR")
>>> cast.voice("Narrator", "de-DE")      # no de-DE voice: the fall-backs, then the default locale
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

from ..errors import ValidationError
from ..results import Clone
from ..results.quality import rendering_for
from ..schema import ClonedVoice

NEUTRAL = "neutral"
SAMPLE_LINE = "The harbour wakes before the sun, and the first boats leave one by one."
Kind = Literal["preset", "clone"]


@dataclass(frozen=True)
class RoleVoice:
    """The voice that plays a role in one locale, and how it speaks.

    ``speed`` is the reading the studio auditioned (1.0 natural); scripts spoken through a cast
    send the emotion and its weight, and keep the speed for the record (the service paces a
    line by its ``duration``, which belongs to one text). A clone keeps ``reference``, the
    recording it was cloned from, so that another key can clone it again; ``fingerprint`` is
    the sound of :data:`SAMPLE_LINE` when the role was cast (:mod:`dubkit.media.fingerprint`).
    """

    voice_id: str
    kind: Kind = "preset"
    name: str = ""
    provider: str | None = None
    gender: str | None = None
    emotion: str = NEUTRAL
    weight: float | None = None
    speed: float = 1.0
    reference: str | None = None
    reference_text: str | None = None
    fingerprint: tuple[float, ...] | None = None

    def tts_fields(self) -> dict[str, Any]:
        """What a TTS line spoken by this voice carries."""
        fields: dict[str, Any] = {"voice_id": self.voice_id}
        if self.emotion != NEUTRAL:
            fields["emo_prompt"] = self.emotion
            if self.weight is not None:
                fields["emo_weight"] = self.weight
        return fields


@dataclass
class Role:
    """A part to play: its name, a note for whoever casts it, and its voice per locale."""

    name: str
    note: str = ""
    voices: dict[str, RoleVoice] = field(default_factory=dict)


class Roles:
    """Roles and their voices per locale: the data of a :class:`~dubkit.cast.Cast`, which
    adds what is done with it (scripts, dubs, files, checks)."""

    def __init__(
        self,
        title: str = "",
        *,
        default_locale: str = "en-US",
        fallbacks: Sequence[str] = (),
        sample_line: str = SAMPLE_LINE,
        roles: Sequence[Role] = (),
    ) -> None:
        self.title, self.default_locale = title, default_locale
        self.fallbacks, self.sample_line = list(fallbacks), sample_line
        self.roles: dict[str, Role] = {role.name: role for role in roles}
        # the series glossary: source term -> its rendering per locale; a name -> the spelling
        # that makes TTS say it right, per locale ("*": every locale)
        self.terms: dict[str, dict[str, str]] = {}
        self.pronunciations: dict[str, dict[str, str]] = {}
        self.path: Any = None  # the file it was loaded from or saved to
        self._saved: tuple[str, Any] | None = None  # (text, state) as last read or written

    # ----------------------------------------------------------------- editing

    def add_role(self, name: str, *, note: str = "") -> Role:
        if not isinstance(name, str) or not name.strip() or ":" in name:
            raise ValidationError(
                "role", f"a role is named by a non-empty text without ':', got {name!r}"
            )
        if name in self.roles:
            raise ValidationError("role", f"{name!r} is already in the cast")
        self.roles[name] = role = Role(name, note)
        return role

    def assign(
        self,
        role: str,
        voice: Any,
        *,
        locale: str | None = None,
        emotion: str | None = None,
        weight: float | None = None,
        speed: float | None = None,
        **details: Any,
    ) -> RoleVoice:
        """Cast ``voice`` (an id, a listed voice, a :class:`RoleVoice`, or a studio take) in
        ``role`` for ``locale`` (default: the cast's default locale); a new role is added.
        ``emotion`` (default neutral), ``weight`` and ``speed`` (default 1.0) are how it
        speaks; ``details``: ``reference`` (a clone's recording, for another key), ``kind``,
        ``name``, ``provider``, ``gender``."""
        locale = locale or self.default_locale
        if role not in self.roles:
            self.add_role(role)
        chosen = _role_voice(voice, emotion=emotion, weight=weight, speed=speed, **details)
        self.roles[role].voices[locale] = chosen
        return chosen

    def add_term(self, term: str, renderings: Mapping[str, str]) -> dict[str, str]:
        """Keep ``term`` the same across a series: its rendering per locale (a locale code
        the service lists, or a bare language, ``"fr"``, for all its locales).

        >>> cast.add_term("Harbour Lights", {"fr-FR": "Phare du Port", "de-DE": "Hafenlichter"})
        """
        if not isinstance(term, str) or not term.strip():
            raise ValidationError("term", f"a non-empty text is expected, got {term!r}")
        if not isinstance(renderings, Mapping) or not renderings:
            raise ValidationError(
                "renderings",
                f"a rendering per locale is expected, e.g. {{'fr-FR': ...}}, got {renderings!r}",
            )
        checked = {}
        for locale, text in renderings.items():
            checked[glossary_locale(locale, f"renderings[{locale!r}]")] = _said(
                text, f"renderings[{locale!r}]"
            )
        self.terms[term.strip()] = {**self.terms.get(term.strip(), {}), **checked}
        return self.terms[term.strip()]

    def add_pronunciation(self, name: str, spelling: str, *, locale: str | None = None) -> None:
        """Say ``name`` as ``spelling`` (how TTS is to read it) in ``locale`` (default: every
        locale); applied to TTS scripts spoken through the cast and to re-dubs.

        >>> cast.add_pronunciation("Nguyen", "Win")
        """
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("name", f"a non-empty text is expected, got {name!r}")
        where = "*" if locale is None else glossary_locale(locale, "locale")
        self.pronunciations.setdefault(name.strip(), {})[where] = _said(spelling, "spelling")

    def glossary(self, locale: str) -> dict[str, str]:
        """``{term: rendering}`` for ``locale``: what a translation request sends as its
        ``options.glossary``."""
        found = {term: rendering_for(renderings, locale) for term, renderings in self.terms.items()}
        return {term: text for term, text in found.items() if text is not None}

    def pronounce(self, text: str, locale: str | None = None) -> str:
        """``text`` with each name that has a pronunciation replaced by its spelling."""
        for name in sorted(self.pronunciations, key=len, reverse=True):
            said = self.pronunciations[name]
            spelling = rendering_for(said, locale) or said.get("*")
            if spelling is not None:
                text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", spelling, text)
        return text

    def remove_role(self, name: str) -> None:
        self.role(name)
        del self.roles[name]

    # ----------------------------------------------------------------- reading

    def role(self, name: str) -> Role:
        found = self.roles.get(name)
        if found is None:
            known = ", ".join(self.roles) or "none yet"
            raise ValidationError("role", f"{name!r} is not in the cast (its roles: {known})")
        return found

    def voice(self, role: str, locale: str | None = None) -> RoleVoice:
        """The voice of ``role`` in ``locale``: its own, else the first fall-back locale it
        has, else its default-locale voice (a voice of another locale then speaks ``locale``)."""
        voices = self.role(role).voices
        for candidate in (locale, *self.fallbacks, self.default_locale):
            if candidate is not None and candidate in voices:
                return voices[candidate]
        raise ValidationError(
            "role", f"{role!r} has no voice for {locale or self.default_locale} and no fall-back"
        )

    @property
    def locales(self) -> list[str]:
        """Every locale some role has a voice for, the default first."""
        found = {loc for role in self.roles.values() for loc in role.voices}
        return sorted(found, key=lambda loc: (loc != self.default_locale, loc))

    def __iter__(self) -> Iterator[Role]:
        return iter(self.roles.values())

    def __len__(self) -> int:
        return len(self.roles)

    def __contains__(self, role: object) -> bool:
        return role in self.roles

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Roles) and self.state() == other.state()

    def state(self) -> dict[str, Any]:
        """Everything the cast file holds, as plain data (what its file is written from)."""
        glossary: dict[str, Any] = {}
        if self.terms:
            glossary["terms"] = {t: dict(sorted(r.items())) for t, r in sorted(self.terms.items())}
        if self.pronunciations:
            glossary["pronunciations"] = {
                n: dict(sorted(s.items())) for n, s in sorted(self.pronunciations.items())
            }
        return {
            "title": self.title,
            "default_locale": self.default_locale,
            "fallbacks": list(self.fallbacks),
            "sample_line": self.sample_line,
            "roles": [
                {
                    "name": role.name,
                    "note": role.note,
                    "voices": {loc: _voice_state(v) for loc, v in sorted(role.voices.items())},
                }
                for role in self
            ],
            **glossary,
        }

    def with_voice(self, role: str, locale: str, **changes: Any) -> RoleVoice:
        """Change settings of ``role``'s voice in ``locale`` (emotion, weight, speed...)."""
        current = self.role(role).voices.get(locale)
        if current is None:
            raise ValidationError("locale", f"{role!r} has no voice for {locale}")
        self.roles[role].voices[locale] = changed = replace(current, **changes)
        return changed


def glossary_locale(locale: Any, where: str) -> str:
    """A glossary's locale: a target locale the service lists, or a bare language of one."""
    from .. import locales

    languages = {code.split("-")[0] for code in locales.TARGET}
    if isinstance(locale, str) and (locale in locales.TARGET or locale in languages):
        return locale
    near = locales.closest(str(locale), locales.TARGET) if isinstance(locale, str) else []
    hint = f" (did you mean {' or '.join(near)}?)" if near else ""
    raise ValidationError(
        where, f"{locale!r} is not a target locale the service lists, nor a language{hint}"
    )


def _said(text: Any, where: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ValidationError(where, f"a non-empty text is expected, got {text!r}")
    return text.strip()


def _voice_state(voice: RoleVoice) -> dict[str, Any]:
    found = asdict(voice)
    if found["fingerprint"] is not None:
        found["fingerprint"] = list(found["fingerprint"])
    return {k: v for k, v in sorted(found.items()) if v is not None}


def _role_voice(voice: Any, **settings: Any) -> RoleVoice:
    """A :class:`RoleVoice` from an id, a listed voice, a clone, a take or a RoleVoice;
    ``settings`` given as None are not given (a RoleVoice keeps its own)."""
    unknown = set(settings) - _SETTABLE
    if unknown:
        known = ", ".join(sorted(_SETTABLE))
        raise ValidationError(sorted(unknown)[0], f"a role's voice has no such setting ({known})")
    given = {k: v for k, v in settings.items() if v is not None}
    if isinstance(voice, RoleVoice):
        return replace(voice, **given)
    if hasattr(voice, "emotion") and hasattr(voice, "speed"):  # a take or a shortlisted one
        given = {"emotion": voice.emotion, "speed": voice.speed, **given}
    take_voice = getattr(voice, "voice", None)  # a studio take: its voice
    if take_voice is not None:
        voice = take_voice
    voice_id = voice if isinstance(voice, str) else getattr(voice, "voice_id", None)
    if not isinstance(voice_id, str) or not voice_id:
        raise ValidationError("voice", f"a voice id or a voice record is expected, got {voice!r}")
    return RoleVoice(voice_id, **{**_details(voice), **given})


def _details(voice: Any) -> dict[str, Any]:
    """What a voice record says about itself (nothing, for a bare id)."""
    if isinstance(voice, str):
        return {}
    name = getattr(voice, "display_name", None) or getattr(voice, "name", None) or ""
    found: dict[str, Any] = {"name": name}
    for key in ("provider", "gender"):
        if getattr(voice, key, None) is not None:
            found[key] = getattr(voice, key)
    kind = getattr(voice, "kind", None)
    if kind in ("preset", "clone"):
        found["kind"] = kind
    elif isinstance(voice, (Clone, ClonedVoice)):
        found["kind"] = "clone"
    if isinstance(voice, Clone):  # what another key needs to clone it again
        found["reference"], found["reference_text"] = voice.ref_audio, voice.text
    return found


_SETTABLE = {f.name for f in fields(RoleVoice)} - {"voice_id"}
