"""The cast file: one JSON document a course or a team keeps in git and reviews in a diff.

    {
      "title": "The harbour",
      "default_locale": "en-US",
      "fallbacks": [],
      "sample_line": "The harbour wakes before the sun, ...",
      "roles": [
        {"name": "Narrator", "note": "warm, unhurried",
         "voices": {"en-US": {"voice_id": "sv_s3_en_us_story_f", "kind": "preset", ...}}}
      ],
      "terms": {"Harbour Lights": {"fr-FR": "Phare du Port"}},
      "pronunciations": {"Nguyen": {"*": "Win"}}
    }

``terms`` is the series glossary (translations send it as ``options.glossary``; a dub's check
flags a line that misses a rendering); ``pronunciations`` are spellings TTS says a name by
(``"*"``: every locale). Both are left out of a file that has none.

Written with sorted settings and two-space indents, so a change shows as the lines it changed;
a file loaded and saved unchanged is written back byte for byte, whatever its layout. A file
edited by hand is checked as it is read: a typo in a setting, a kind that is neither ``preset``
nor ``clone``, a role named twice, is an error naming the file and the line.
"""

from __future__ import annotations

import json
import os
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ValidationError
from .roles import SAMPLE_LINE, Role, Roles, RoleVoice

R = TypeVar("R", bound=Roles)

TOP = {"title", "default_locale", "fallbacks", "sample_line", "roles", "terms", "pronunciations"}
ROLE = {"name", "note", "voices"}
VOICE = {f.name for f in fields(RoleVoice)}


def text_of(cast: Roles) -> str:
    """The cast file's text: sorted settings, two-space indents, a final newline."""
    return json.dumps(cast.state(), indent=2, ensure_ascii=False) + "\n"


def save(cast: Roles, path: str | os.PathLike[str] | None = None) -> Path:
    """Write ``cast`` to ``path`` (default: where it was loaded from); the path written."""
    target = Path(path) if path is not None else cast.path
    if target is None:
        raise ValidationError("path", "where to save the cast: it was not loaded from a file")
    state = cast.state()
    if cast._saved is not None and cast._saved[1] == state:
        text = cast._saved[0]  # unchanged: the bytes it was read from, layout and all
    else:
        text = text_of(cast)
    Path(target).write_text(text, encoding="utf-8")
    cast.path, cast._saved = Path(target), (text, state)
    return Path(target)


def load(path: str | os.PathLike[str], kind: type[R]) -> R:
    """Read a cast file as a ``kind`` (a :class:`Roles` class); an error names the file and
    the line of what is wrong."""
    where = Path(path)
    try:
        text = where.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(str(where), f"cannot read the cast file: {exc.strerror}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"{where}, line {exc.lineno}", f"not JSON: {exc.msg} (column {exc.colno})"
        ) from None
    cast = _read(document, _Lines(where, text), kind)
    cast.path, cast._saved = where, (text, cast.state())
    return cast


class _Lines:
    """Says where in the file a key sits, for errors about what a hand edit got wrong."""

    def __init__(self, path: Path, text: str) -> None:
        self.path, self.lines = path, text.splitlines()

    def error(self, key: str, problem: str, after: int = 0) -> ValidationError:
        number = self.line_of(key, after)
        where = f"{self.path}, line {number}" if number > after else str(self.path)
        return ValidationError(where, problem)

    def line_of(self, key: str, after: int = 0) -> int:
        """The line (from 1) where ``key`` first stands below line ``after``; ``after`` if nowhere."""
        needle = json.dumps(key, ensure_ascii=False)
        for number, line in enumerate(self.lines[after:], start=after + 1):
            if needle in line:
                return number
        return after


def _read(document: Any, at: _Lines, kind: type[R]) -> R:
    if not isinstance(document, dict):
        raise ValidationError(str(at.path), "a cast file holds one JSON object")
    _known(document, TOP, "the cast", at)
    roles = document.get("roles", [])
    if not isinstance(roles, list):
        raise at.error("roles", "roles: a list of roles is expected")
    cast = kind(
        _text(document, "title", at),
        default_locale=_text(document, "default_locale", at) or "en-US",
        fallbacks=document.get("fallbacks") or [],
        sample_line=_text(document, "sample_line", at) or SAMPLE_LINE,
    )
    for entry in roles:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise at.error("roles", 'each role is an object with a "name"')
        name = entry["name"]
        after = at.line_of(name) - 1  # errors inside a role point below its name
        if name in cast.roles:
            raise at.error(name, f"the role {name!r} is named twice", after + 1)
        _known(entry, ROLE, f"role {name!r}", at, after)
        role = Role(name, _text(entry, "note", at))
        for locale, voice in (entry.get("voices") or {}).items():
            role.voices[locale] = _voice(
                voice, f"role {name!r}, {locale}", at, at.line_of(locale, after) - 1
            )
        cast.roles[name] = role
    _glossary(document, cast, at)
    return cast


def _glossary(document: dict[str, Any], cast: Roles, at: _Lines) -> None:
    """``terms`` (term -> locale -> rendering) and ``pronunciations`` (name -> locale or
    ``"*"`` -> spelling); an unknown locale is an error naming its line."""
    for key in ("terms", "pronunciations"):
        entries = document.get(key) or {}
        if not isinstance(entries, dict):
            raise at.error(key, f"{key}: an object of {{text: {{locale: text}}}} is expected")
        after = at.line_of(key) - 1
        for name, per_locale in entries.items():
            below = at.line_of(name, after) - 1
            if not isinstance(per_locale, dict) or not per_locale:
                raise at.error(
                    name, f"{key} {name!r}: an object of {{locale: text}} is expected", below
                )
            for locale, text in per_locale.items():
                try:
                    if key == "terms":
                        cast.add_term(name, {locale: text})
                    else:
                        cast.add_pronunciation(name, text, locale=None if locale == "*" else locale)
                except ValidationError as exc:
                    raise at.error(locale, f"{key} {name!r}: {exc.problem}", below) from None


def _voice(entry: Any, what: str, at: _Lines, after: int) -> RoleVoice:
    if not isinstance(entry, dict) or not isinstance(entry.get("voice_id"), str):
        raise at.error("voice_id", f'{what}: each voice needs a "voice_id"', after)
    _known(entry, VOICE, what, at, after)
    if entry.get("kind", "preset") not in ("preset", "clone"):
        raise at.error("kind", f'{what}: kind is "preset" or "clone", got {entry["kind"]!r}', after)
    for name in ("weight", "speed"):
        value = entry.get(name)
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)):
            raise at.error(name, f"{what}: {name} is a number, got {value!r}", after)
    if entry.get("weight") is not None and not 0 <= entry["weight"] <= 1:
        raise at.error("weight", f"{what}: weight is from 0 to 1, got {entry['weight']}", after)
    found = dict(entry)
    if found.get("fingerprint") is not None:
        found["fingerprint"] = tuple(found["fingerprint"])
    return RoleVoice(**found)


def _known(entry: dict[str, Any], allowed: set[str], what: str, at: _Lines, after: int = 0) -> None:
    for key in entry:
        if key not in allowed:
            raise at.error(
                key,
                f"{what}: {key!r} is not a setting (known: {', '.join(sorted(allowed))})",
                after,
            )


def _text(entry: dict[str, Any], key: str, at: _Lines) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str):
        raise at.error(key, f"{key}: a text is expected, got {value!r}")
    return value
