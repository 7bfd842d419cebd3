"""A new clone's facts with its reference, and the reference against the clone (A/B)."""

from __future__ import annotations

import html
from typing import Any

from ..media.mime import format_of, mime_type
from .players import player_html
from .shapes import ABPlayersShape, CloneShape


def clone_html(clone: CloneShape) -> str:
    facts: list[tuple[str, Any]] = [
        ("voice", clone.voice_id),
        ("name", clone.name),
        ("provider", clone.provider),
        ("language", clone.locale),  # a person's word for it (the attribute: locale)
        ("text", clone.text),
    ]
    if clone.measured:
        facts.append(("measured", ", ".join(f"{k} {v}" for k, v in clone.measured.items())))
    rows = "".join(
        f"<tr><th style='text-align:left'>{k}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in facts
        if v
    )
    player = (
        player_html(
            clone.ref_audio,
            mime_type(format_of(clone.ref_audio)),
            label=f"reference recording of {clone.name or clone.voice_id}",
        )
        if clone.ref_audio
        else ""
    )
    return (
        f"<table class='dubkit-clone'>{rows}<tr><th style='text-align:left'>reference"
        f"</th><td>{player}</td></tr></table>"
    )


def ab_html(players: ABPlayersShape) -> str:
    def cell(title: str, url: str | None, data: bytes | None) -> str:
        mime = mime_type(format_of(url or ""))
        player = player_html(url, mime, data=data, label=title) if url else "<i>none</i>"
        return f"<td style='padding:4px 12px'><b>{html.escape(title)}</b><br>{player}</td>"

    clone = players.clone
    return (
        f"<table class='dubkit-ab'><tr>"
        f"{cell('A: reference', clone.ref_audio, players.reference_bytes)}"
        f"{cell(f'B: clone {clone.name or clone.voice_id}', players.clone_uri, players.clone_bytes)}"
        f"</tr><tr><td colspan='2' style='padding:4px 12px'><small>text: "
        f"{html.escape(players.text)}</small></td></tr></table>"
    )
