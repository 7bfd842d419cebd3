"""Uploads and materials: a progress line, and a material card with its player."""

from __future__ import annotations

import html

from ..media.mime import format_of, mime_type
from .players import picture_src, player_html
from .shapes import MaterialShape, UploadProgressShape

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(count: float) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    for unit in _UNITS:
        if abs(count) < 1024 or unit == _UNITS[-1]:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TiB"


def progress_text(p: UploadProgressShape) -> str:
    """One line: what is happening, how much, how fast, which parts."""
    if p.phase == "hashing":
        return f"hashing {human_bytes(p.hashed)} of {human_bytes(p.total)} (MD5)"
    parts = f" · parts {p.parts_done}/{p.parts_total}" if p.parts_total > 1 else ""
    resumed = f" (resumed with {p.resumed_parts} done)" if p.resumed_parts else ""
    if p.phase == "done":
        if p.duplicate:
            return (
                f"already on the service: material {p.material_id}, nothing uploaded "
                f"({human_bytes(p.total)})"
            )
        return (
            f"registered as material {p.material_id}: {human_bytes(p.total)} in "
            f"{p.elapsed:.1f} s · {human_bytes(p.rate)}/s{parts}{resumed}"
        )
    verb = "registering" if p.phase == "registering" else "uploading"
    return (
        f"{verb} {human_bytes(p.sent)} of {human_bytes(p.total)} · "
        f"{human_bytes(p.rate)}/s{parts}{resumed}"
    )


def fraction(p: UploadProgressShape) -> float:
    done = p.hashed if p.phase == "hashing" else p.sent
    return min(1.0, done / p.total) if p.total else 1.0


def progress_html(name: str, p: UploadProgressShape | None) -> str:
    """The static view: file name, a <progress> element, the line of :func:`progress_text`."""
    text = progress_text(p) if p is not None else "starting"
    value = fraction(p) if p is not None else 0.0
    return (
        f"<div class='dubkit-upload'><b>{html.escape(name)}</b> "
        f"<progress max='1' value='{value:.3f}' style='width:240px'></progress> "
        f"<span>{html.escape(text)}</span></div>"
    )


def material_html(material: MaterialShape) -> str:
    """A card: the picture or player, then the record's facts."""
    url = material.address_url or ""
    if material.category == "video" and url:
        # The frame embedded when the result holds it (it survives a saved notebook); the
        # stream from where the front end reaches it, loaded when played.
        poster = picture_src(material.thumbnail_url, material.held_thumbnail())
        media = player_html(
            url,
            material.mime_type or "video/mp4",
            kind="video",
            poster=poster,
            label=f"material {material.name or material.material_id}",
        )
    elif url:
        media = player_html(
            url,
            material.mime_type or mime_type(format_of(url)),
            label=f"material {material.name or material.material_id}",
        )
    else:
        media = ""
    facts = [
        ("id", material.material_id),
        ("name", material.name),
        ("category", material.category),
        ("type", material.mime_type),
        (
            "duration",
            f"{material.duration_seconds:.2f} s" if material.duration_seconds is not None else None,
        ),
        ("resolution", material.resolution),
        ("MD5", material.file_hash),
    ]
    rows = "".join(
        f"<tr><th style='text-align:left'>{k}</th><td><code>{html.escape(str(v))}</code></td></tr>"
        for k, v in facts
        if v
    )
    return (
        f"<div class='dubkit-material' style='display:flex;gap:12px;align-items:flex-start'>"
        f"<div>{media}</div><table>{rows}</table></div>"
    )
