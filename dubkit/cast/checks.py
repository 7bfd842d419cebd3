"""A cast checked against a key: are its voices there, and do they still sound the same?

>>> cast.fingerprint(client)           # once, when the roles are cast: the sample line's sound
>>> cast.check(client)                 # per role and locale: same / changed / missing
>>> gaps = cast.missing(client)        # on another key: its clones, their re-cloning's quote
>>> gaps.quote, gaps.nearest           # and, for a preset that vanished, the nearest presets
>>> cast.restore(client)               # re-clone the missing clones from their references
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util.urls import is_web_url
from ..errors import ValidationError
from ..media.fingerprint import SAME_ABOVE, fingerprint, similarity
from ..schema.prices import Quote
from .roles import RoleVoice

if TYPE_CHECKING:
    import pandas as pd

    from ..client import Client
    from .roles import Roles


@dataclass(frozen=True)
class Verdict:
    """One role's voice in one locale: ``same``, ``changed``, ``missing`` or ``unprinted``
    (cast before fingerprints were taken); ``similarity`` for the ones re-spoken."""

    role: str
    locale: str
    voice_id: str
    status: str
    similarity: float | None = None


class CastCheck(list[Verdict]):
    """What :meth:`Cast.check` found, a row per role and locale."""

    @property
    def ok(self) -> bool:
        return all(v.status == "same" for v in self)

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame([v.__dict__ for v in self], columns=list(Verdict.__annotations__))

    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        for v in self:
            counts[v.status] = counts.get(v.status, 0) + 1
        return f"CastCheck({', '.join(f'{n} {s}' for s, n in sorted(counts.items()))})"

    def _repr_html_(self) -> str:
        from ..views.cast import check_html

        return check_html(self)


@dataclass
class Gaps:
    """The cast's voices this key does not have: clones to re-clone (from their kept
    reference recordings, at ``quote``) and presets that vanished, each with ``nearest``
    presets offered in their place (never swapped without being asked)."""

    clones: list[tuple[str, str, RoleVoice]] = field(default_factory=list)  # role, locale, voice
    presets: list[tuple[str, str, RoleVoice]] = field(default_factory=list)
    nearest: dict[str, list[str]] = field(default_factory=dict)  # vanished id -> offered ids
    quote: Quote | None = None

    def __bool__(self) -> bool:
        return bool(self.clones or self.presets)

    def __str__(self) -> str:
        if not self:
            return "every voice of the cast is on this key"
        parts = []
        if self.clones:
            names = ", ".join(f"{role} ({locale}) {v.voice_id}" for role, locale, v in self.clones)
            parts.append(f"{len(self.clones)} clone(s) not on this key: {names}; {self.quote}")
        for role, locale, voice in self.presets:
            offered = ", ".join(self.nearest.get(voice.voice_id, [])) or "no preset alike"
            parts.append(f"{role} ({locale}): preset {voice.voice_id} is gone; nearest: {offered}")
        return "\n".join(parts)

    __repr__ = __str__


def voices_of(cast: Roles) -> Iterable[tuple[str, str, RoleVoice]]:
    for role in cast:
        for locale, voice in sorted(role.voices.items()):
            yield role.name, locale, voice


def sample(client: Client, cast: Roles, voice: RoleVoice, locale: str) -> list[float]:
    """The fingerprint of ``voice`` speaking the cast's sample line in ``locale``."""
    line = client.tts.create(
        [{"text": cast.sample_line, **voice.tts_fields()}], locale=locale, output_format="wav"
    )[0]
    if not line.ok:
        raise ValidationError("voice", f"{voice.voice_id} did not speak: {line.error_message}")
    return fingerprint(line.audio, line.sample_rate)


def take_fingerprints(cast: Roles, client: Client, *, again: bool = False) -> int:
    """Fingerprint every role's voice that has none yet (``again``: all); how many were taken.
    Each is one short TTS line, charged as such."""
    taken = 0
    for role, locale, voice in list(voices_of(cast)):
        if voice.fingerprint is None or again:
            printed = tuple(sample(client, cast, voice, locale))
            cast.roles[role].voices[locale] = replace(voice, fingerprint=printed)
            taken += 1
    return taken


def check(cast: Roles, client: Client) -> CastCheck:
    """Per role and locale: the voice is missing from this key, or it speaks the sample line
    again and is compared with its fingerprint (``same`` at a similarity of at least
    :data:`~dubkit.media.fingerprint.SAME_ABOVE`)."""
    gaps = find_gaps(cast, client, offer=False)
    absent = {(role, locale) for role, locale, _ in gaps.clones + gaps.presets}
    verdicts = CastCheck()
    for role, locale, voice in voices_of(cast):
        if (role, locale) in absent:
            verdicts.append(Verdict(role, locale, voice.voice_id, "missing"))
        elif voice.fingerprint is None:
            verdicts.append(Verdict(role, locale, voice.voice_id, "unprinted"))
        else:
            alike = similarity(list(voice.fingerprint), sample(client, cast, voice, locale))
            status = "same" if alike >= SAME_ABOVE else "changed"
            verdicts.append(Verdict(role, locale, voice.voice_id, status, alike))
    return verdicts


def find_gaps(cast: Roles, client: Client, *, offer: bool = True) -> Gaps:
    """Which of the cast's voices this key lacks; nothing is spent (lists are free)."""
    gaps = Gaps()
    wanted = list(voices_of(cast))
    clone_ids = sorted({v.voice_id for _, _, v in wanted if v.kind == "clone"})
    here = {c.voice_id for c in client.voices.clones(voices=clone_ids)} if clone_ids else set()
    preset_ids = {v.voice_id for _, _, v in wanted if v.kind == "preset"}
    here |= {i for i in preset_ids if list(client.voices.presets(voice=i))}  # once a voice
    for role, locale, voice in wanted:
        if voice.kind == "clone" and voice.voice_id not in here:
            gaps.clones.append((role, locale, voice))
        elif voice.kind == "preset" and voice.voice_id not in here:
            gaps.presets.append((role, locale, voice))
            if offer:
                gaps.nearest[voice.voice_id] = nearest_presets(client, voice, locale)
    restorable = [v for _, _, v in gaps.clones]
    if restorable:
        one = client.clones.quote()
        gaps.quote = Quote(
            one.credits * len(restorable),
            "voice clone",
            f"re-cloning {len(restorable)} voice(s) from their reference recordings",
        )
    return gaps


def nearest_presets(client: Client, gone: RoleVoice, locale: str, count: int = 3) -> list[str]:
    """Presets of ``locale`` and the same gender, the same tier (provider) first, then the
    ones whose name shares a word with the vanished voice's."""
    found = list(client.voices.presets(locale=locale, gender=gone.gender or None))
    words = set((gone.name or gone.voice_id).lower().replace("_", " ").split())

    def likeness(voice: Any) -> tuple[int, int]:
        name = f"{voice.display_name or ''} {voice.voice_id or ''}".lower().replace("_", " ")
        return (voice.provider == gone.provider, len(words & set(name.split())))

    found.sort(key=likeness, reverse=True)
    return [v.voice_id for v in found[:count] if v.voice_id]


def restore(cast: Roles, client: Client) -> dict[str, str]:
    """Re-clone the cast's clones this key lacks, from their kept references, under the
    client's budget guard; the cast then names the new clones. Returns old id -> new id."""
    gaps = find_gaps(cast, client, offer=False)
    made: dict[str, str] = {}
    for role, locale, voice in gaps.clones:
        if voice.voice_id not in made:
            if not voice.reference:
                raise ValidationError(
                    f"{role}.{locale}", f"clone {voice.voice_id} kept no reference recording"
                )
            reference = voice.reference
            if cast.path is not None and not is_web_url(reference):  # beside the cast file
                reference = str(Path(cast.path).parent / reference)
            clone = client.clones.create(
                reference, name=voice.name or role, text=voice.reference_text
            )
            made[voice.voice_id] = clone.voice_id or ""
        cast.roles[role].voices[locale] = replace(voice, voice_id=made[voice.voice_id])
    return made
