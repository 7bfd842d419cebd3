"""A cast put to work: script lines that name a role, and a dub's speakers mapped to roles.

>>> client.tts.create(["NARRATOR: The harbour wakes.", {"role": "Alice", "text": "Morning!"}],
...                   cast=cast, locale="fr-FR")
>>> client.dubbing.create("episode2.mp4", target="de-DE", cast=cast,
...                       speakers={1: "Alice", 2: "Bob"})
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError

if TYPE_CHECKING:
    from .roles import Roles

_SAID = re.compile(r"^\s*([^:\n]{1,60}?)\s*:\s*(.+)$", re.DOTALL)


def lines_for(cast: Roles, lines: Sequence[Any], locale: str | None) -> list[dict[str, Any]]:
    """TTS lines: each line's role replaced by its voice in ``locale`` (the cast's default
    locale when None) and the settings it was cast with. A line is ``"ROLE: text"`` (the role
    in any case) or a dict with ``role`` and ``text`` (other line options are kept)."""
    spoken = []
    for i, line in enumerate(lines):
        role, fields = _role_of(cast, line, i)
        voice = cast.voice(role, locale)
        if isinstance(fields.get("text"), str):  # names said as the cast spells them
            fields["text"] = cast.pronounce(fields["text"], locale or cast.default_locale)
        spoken.append({**voice.tts_fields(), **fields})
    return spoken


def roles_in(cast: Roles, lines: Sequence[Any]) -> list[tuple[str, str]]:
    """(role, text) of each line, checked against the cast; nothing else is looked up."""
    found = []
    for i, line in enumerate(lines):
        role, fields = _role_of(cast, line, i)
        found.append((role, fields["text"]))
    return found


def speaker_voices(cast: Roles, speakers: Mapping[int, str], locale: str) -> list[str]:
    """The voice ids of a dub's speakers 1, 2, ... from the roles they are mapped to."""
    if not isinstance(speakers, Mapping) or not speakers:
        raise ValidationError(
            "speakers", "a mapping of speaker numbers to roles, e.g. {1: 'Alice'}"
        )
    numbers = sorted(speakers)
    if numbers != list(range(1, len(numbers) + 1)):
        missing = next(n for n in range(1, len(numbers) + 2) if n not in speakers)
        raise ValidationError(
            "speakers", f"speaker {missing} is mapped to no role (speakers are numbered 1, 2, ...)"
        )
    voices = []
    for number in numbers:
        role = speakers[number]
        if not isinstance(role, str) or not role.strip():
            raise ValidationError(f"speakers[{number}]", "is mapped to no role")
        if role not in cast:
            raise ValidationError(f"speakers[{number}]", _unknown(cast, role))
        voices.append(cast.voice(role, locale).voice_id)
    return voices


def _role_of(cast: Roles, line: Any, i: int) -> tuple[str, dict[str, Any]]:
    if isinstance(line, str):
        said = _SAID.match(line)
        if said is None:
            raise ValidationError(
                f"data[{i}]", "names no role: write 'ROLE: text' or {'role': ..., 'text': ...}"
            )
        named, text = said.group(1), said.group(2).strip()
        role = next((r for r in cast.roles if r.casefold() == named.casefold()), None)
        if role is None:
            raise ValidationError(f"data[{i}].role", _unknown(cast, named))
        return role, {"text": text}
    if isinstance(line, Mapping):
        fields = {k: v for k, v in line.items() if k != "role"}
        role = line.get("role")
        if not isinstance(role, str) or not role:
            raise ValidationError(f"data[{i}].role", "is required in a script spoken by a cast")
        if role not in cast:
            raise ValidationError(f"data[{i}].role", _unknown(cast, role))
        if "voice_id" in fields or "voiceId" in fields:
            raise ValidationError(
                f"data[{i}]", "names a role and a voice: the cast gives the voice"
            )
        return role, fields
    raise ValidationError(f"data[{i}]", f"a line is a 'ROLE: text' string or a dict, got {line!r}")


def _unknown(cast: Roles, role: str) -> str:
    return f"{role!r} is not a role of the cast (its roles: {', '.join(cast.roles) or 'none'})"
