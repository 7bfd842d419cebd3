"""Voice listings as results, and one text said by several voices (an audition)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from .._util.words import count
from ..schema import ClonedVoice, PresetVoice
from ..views.voices import audition_html, voice_table_html
from ._display import ShowsMedia
from .speech import Speech

if TYPE_CHECKING:
    import pandas as pd  # imported where a table is made: pandas is slow to import

PRESET_COLUMNS = [
    "voice_id",
    "display_name",
    "locale",
    "gender",
    "age",
    "provider",
    "style",
    "is_hd",
    "is_preferred",
    "score",
    "audio",
]
CLONE_COLUMNS = [
    "voice_id",
    "name",
    "provider",
    "example_language",
    "content",
    "audio",
    "create_time",
]


V = TypeVar("V", bound=PresetVoice | ClonedVoice)


class HasVoiceId(Protocol):
    @property
    def voice_id(self) -> str | None: ...


VoiceLike = str | HasVoiceId  # a voice id, or a record that has one (a listed voice, a Clone)


def voice_id_of(voice: Any) -> Any:
    """The id of ``voice``: a string as it is, a record's ``voice_id``. Anything else comes back
    unchanged, so the request's own check names the field it was passed as."""
    if isinstance(voice, str):
        return voice
    return getattr(voice, "voice_id", voice)


class VoiceList(list[V], Generic[V], ShowsMedia):
    """Voices from a listing; ``.to_frame()`` for a table, a play control a voice in notebooks.

    ``total`` is what the service counted for the query (may exceed ``len`` with ``limit``).
    """

    def __init__(self, voices: Iterable[V] = (), total: int | None = None) -> None:
        super().__init__(voices)
        self.total = len(self) if total is None else total

    @property
    def ids(self) -> list[str]:
        return [v.voice_id for v in self if v.voice_id]

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        clones = bool(self) and isinstance(self[0], ClonedVoice)
        columns = CLONE_COLUMNS if clones else PRESET_COLUMNS
        rows = [{c: v.model_dump().get(c) for c in columns} for v in self]
        return pd.DataFrame(rows, columns=columns)

    def __repr__(self) -> str:
        return f"VoiceList({count(len(self), 'voice')} of {self.total})"

    def _repr_html_(self) -> str:
        return voice_table_html(self)


class Audition(ShowsMedia):
    """One text said by several voices, shown side by side."""

    def __init__(self, text: str, voice_ids: Sequence[str], speech: Speech) -> None:
        self.text, self.voice_ids, self.speech = text, list(voice_ids), speech

    def __repr__(self) -> str:
        return (
            f"Audition({self.text!r:.40}, {len(self.voice_ids)} "
            f"voice{'' if len(self.voice_ids) == 1 else 's'})"
        )

    def _repr_html_(self) -> str:
        return self.html()

    def html(self, *, embed: bool = True) -> str:
        """Cards side by side; ``embed=False`` plays from URLs (for live widgets)."""
        return audition_html(self.text, self.speech, embed=embed)
