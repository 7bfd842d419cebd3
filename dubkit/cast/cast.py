"""The cast at work: its file, the scripts and dubs it voices, its checks on a key.

Built on :class:`~dubkit.cast.roles.Roles` (the data), from the modules beside it, each of which
sees only the data: ``file`` (the JSON file), ``script`` (role-named lines, speakers mapped to
roles), ``checks`` (missing voices, re-cloning, the sound check), ``audition``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import audition, checks, file, script
from .roles import Roles

if TYPE_CHECKING:
    from ..client import Client


class Cast(Roles):
    """Roles and the voice that plays each in each locale, kept as one file.

    >>> cast = Cast("The harbour", default_locale="en-US")
    >>> cast.assign("Narrator", "sv_s3_en_us_story_f", emotion="calm")
    >>> cast.save("cast.json"); Cast.load("cast.json")
    >>> client.tts.create(["NARRATOR: Hello."], cast=cast, locale="fr-FR")
    """

    def lines_for(self, lines: Sequence[Any], locale: str | None = None) -> list[dict[str, Any]]:
        """TTS lines for a script whose lines name roles (see :mod:`dubkit.cast.script`)."""
        return script.lines_for(self, lines, locale)

    def speaker_voices(self, speakers: Mapping[int, str], locale: str) -> list[str]:
        """A dub's voices for speakers 1, 2, ... mapped to roles (``{1: "Alice"}``)."""
        return script.speaker_voices(self, speakers, locale)

    def fingerprint(self, client: Client, *, again: bool = False) -> int:
        """Keep the sound of each role's voice (the sample line, spoken once per role and
        locale, charged as TTS); how many were taken. ``again``: retake every one."""
        return checks.take_fingerprints(self, client, again=again)

    def check(self, client: Client) -> checks.CastCheck:
        """Per role and locale: ``same``, ``changed`` (with a similarity) or ``missing``."""
        return checks.check(self, client)

    def missing(self, client: Client) -> checks.Gaps:
        """The voices this key lacks, what re-cloning the clones would cost, and the nearest
        presets to any preset that is gone. Nothing is spent."""
        return checks.find_gaps(self, client)

    def restore(self, client: Client) -> dict[str, str]:
        """Re-clone the missing clones from their kept references (under the client's
        budget); the cast then names the new clones. Old id -> new id."""
        return checks.restore(self, client)

    def audition(self, client: Client, text: str | None = None) -> audition.CastAudition:
        """Every role's voice in every locale of the cast saying ``text`` (default: the
        sample line), side by side: a table of players, a row per role, a column per locale."""
        return audition.audition(self, client, text)

    def save(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write the cast file (default: where it was loaded from); the path written."""
        return file.save(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Cast:
        """Read a cast file; a mistake in it is a ValidationError naming the file and line."""
        return file.load(path, cls)

    def __repr__(self) -> str:
        title = f"{self.title!r}, " if self.title else ""
        return f"Cast({title}{len(self)} roles, locales {self.locales})"

    def _repr_html_(self) -> str:
        from ..views.cast import cast_html

        return cast_html(self)
