"""A row's files: stable names under the output folder, written whole or not at all.

``<out>/<locale>/<file stem>.<ext>`` for a row's first revision, ``<stem>.r<N>.<ext>`` for
revision N: the dubbed video (or audio, for an audio file) and its subtitles as SRT and WebVTT.
A name is chosen once, before the first byte is written, and kept in the ledger, so a row
saved again after a crash writes the same names with the same task's bytes. A file already
there that no row of the ledger wrote (an earlier result made some other way) is never
overwritten: the row's file takes the task's id in its name instead. Each file is written to
``<name>.part`` and renamed into place, so a name never holds half a file.

Where the service gives no subtitle files (the interface does not list them), they are made
from the dub's own script: each translated line at its time.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from .. import schema
from ..media import subtitles
from ..media.mime import format_of
from .rows import Row

PART = ".part"


class Downloads(Protocol):
    def download(self, url: str) -> bytes: ...
    def read(self, model: Any, data: Any, operation: str | None = None) -> Any: ...


def charge_of(raw: dict[str, Any] | None) -> float | None:
    """What the dub was charged, where the service says so (the sandbox's ``source`` extra);
    None where it does not (the interface reports no charge per task)."""
    source = (raw or {}).get("source")
    credits = source.get("credits") if isinstance(source, dict) else None
    return float(credits) if isinstance(credits, (int, float)) else None


def sources_of(raw: dict[str, Any]) -> dict[str, tuple[str | None, str]]:
    """kind -> (URL or None, suffix): the dubbed media and its two subtitle files."""
    result = schema.MediaTranslationResult.model_validate(raw)
    build = result.build or schema.Build()
    made: dict[str, tuple[str | None, str]] = {}
    if build.video and build.video.url:
        made["video"] = (build.video.url, format_of(build.video.url) or "mp4")
    elif build.audio and build.audio.url:
        made["audio"] = (build.audio.url, format_of(build.audio.url) or "m4a")
    files = build.subtitles or schema.SubtitleFiles()
    made["srt"] = (files.srt, "srt")
    made["vtt"] = (files.vtt, "vtt")
    return made


def plan(out: Path, row: Row, raw: dict[str, Any] | None, ledger: Any) -> dict[str, str]:
    """The names the row's files get (relative to ``out``), chosen once."""
    if row.outputs:
        return row.outputs
    ours = {
        path
        for other in ledger.history(row.key)
        for path in other.outputs.values()
        if other.revision != row.revision
    }
    stem = row.file_name + (f".r{row.revision}" if row.revision > 1 else "")
    names: dict[str, str] = {}
    for kind, (_, suffix) in sources_of(raw or {}).items():
        name = f"{row.locale}/{stem}.{suffix}"
        if (out / name).exists() or name in ours:  # an earlier result stays as it is
            name = f"{row.locale}/{stem}.{(row.task_id or 'task')[-8:]}.{suffix}"
        names[kind] = name
    return names


def download(transport: Downloads, out: Path, row: Row, raw: dict[str, Any]) -> None:
    """Write each of the row's files: fetched whole to ``.part``, then renamed into place."""
    found = sources_of(raw)
    for kind, name in row.outputs.items():
        url, _ = found.get(kind, (None, ""))
        if url:
            data = transport.download(url)
        elif kind in ("srt", "vtt"):
            data = _script_subtitles(raw, kind).encode("utf-8")
        else:
            raise ValueError(f"the finished dub gives no {kind} file")
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(target.name + PART)
        part.write_bytes(data)
        os.replace(part, target)


def _script_subtitles(raw: dict[str, Any], kind: str) -> str:
    result = schema.MediaTranslationResult.model_validate(raw)
    lines = (result.translated_scripts or schema.TranslatedScripts()).result
    cues = [
        subtitles.Cue(line.start or 0.0, max(line.start or 0.0, line.end or 0.0), line.text)
        for line in lines
        if line.text and line.text.strip()
    ]
    return subtitles.to_srt(cues) if kind == "srt" else subtitles.to_vtt(cues)
