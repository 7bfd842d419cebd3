"""A new cloned voice, and the reference played against it (A/B)."""

from __future__ import annotations

from typing import Any

from .._transport import Transport
from .._util.deprecation import renamed
from ..schema import CloneContext, CloneResult
from ..views.clone import ab_html, clone_html
from ._display import ShowsMedia
from ._held import fetch_held


class Clone(ShowsMedia):
    """A new cloned voice: ``voice_id`` for TTS, and what it was cloned from."""

    def __init__(self, result: CloneResult, context: CloneContext | None = None) -> None:
        context = context or CloneContext()
        self.voice_id = result.voice_id
        self.task_id = result.task_id
        self.created_at = result.created_at
        self.provider = result.provider or context.provider
        # what the sandbox heard in the recording, as it says it
        self.measured = result.measured.to_wire() if result.measured else None
        self.name = context.name
        self.locale = context.locale  # the sample's
        self.text = context.text
        self.ref_audio = context.ref_audio

    language = renamed("locale")

    @classmethod
    def from_task(
        cls, transport: Transport, raw: dict[str, Any], context: CloneContext | None
    ) -> Clone:
        return cls(transport.read(CloneResult, raw), context)

    def __repr__(self) -> str:
        return f"Clone({self.voice_id!r}, name={self.name!r}, provider={self.provider!r})"

    def _repr_html_(self) -> str:
        return clone_html(self)


class ABPlayers(ShowsMedia):
    """The reference (A) and the clone saying ``text`` (B), side by side.

    The local sandbox's recordings are fetched when this is made, so the players embed them.
    """

    def __init__(self, transport: Transport, clone: Clone, clone_uri: str, text: str) -> None:
        self.clone, self.clone_uri, self.text = clone, clone_uri, text
        held = fetch_held(transport, [clone.ref_audio, clone_uri])
        self.reference_bytes = held.get(clone.ref_audio or "")
        self.clone_bytes = held.get(clone_uri)

    def __repr__(self) -> str:
        return f"ABPlayers(reference vs {self.clone.voice_id}, text={self.text!r:.60})"

    def _repr_html_(self) -> str:
        return ab_html(self)
