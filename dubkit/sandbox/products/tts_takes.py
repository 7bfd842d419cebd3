"""Spoken lines as files: a line's samples, the files a request's new lines become, and the cache
that serves an identical line again (the storage side of :mod:`dubkit.sandbox.products.tts`).

A request's new lines are encoded together (:func:`dubkit.media.av.encode_clips`: one ffmpeg
run for m4a or mp3, whose start-up costs more than encoding a spoken line), at most
``BATCH_SECONDS`` of audio at a time so a request of long lines never holds them all at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...media import av, mixing, speech
from ...schema import TTSLine, TTSRequest
from ..backend import Backend
from ..catalogue import SpeakingVoice
from ..database import Database
from ..references import UnusableAudio

LEAD_IN, TAIL = 0.1, 0.2  # seconds of silence around a line unless trimmed
BATCH_SECONDS = 600.0  # audio held before it is encoded (about 53 MB of samples)
CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS tts_cache (key TEXT PRIMARY KEY, relpath TEXT NOT NULL,
                                      duration REAL NOT NULL);
CREATE TABLE IF NOT EXISTS tts_answers (relpath TEXT NOT NULL, task_id TEXT NOT NULL,
                                        PRIMARY KEY (relpath, task_id));
"""


class LineError(UnusableAudio):
    """This line cannot be spoken; the others go on (a bad reference recording is one case)."""


@dataclass(frozen=True)
class Take:
    """A line spoken but not yet written: its samples and the cache key it will be kept under."""

    key: str
    fmt: str
    samples: np.ndarray

    @property
    def relpath(self) -> str:
        return f"tts/{self.key[:2]}/{self.key}.{self.fmt}"

    @property
    def duration(self) -> float:
        return round(self.samples.size / speech.SAMPLE_RATE, 3)


def cache_key(
    api_key: str, request: TTSRequest, spec: TTSLine, voice: SpeakingVoice, language: str
) -> str:
    """The same file for the same key, the same line (every field of it, and every field of
    the request but its lines and ``extraData``), heard as the same voice in the same
    language. A field added to the line or the request is in the key without a word here."""
    how = request.model_dump(mode="json", exclude={"data", "extra_data"})
    line = spec.model_dump(mode="json")
    return hashlib.sha256(
        json.dumps([api_key, line, how, voice.to_json(), language], sort_keys=True).encode()
    ).hexdigest()


def cached(backend: Backend, key: str) -> tuple[str, float] | None:
    """The file and duration an identical line was already given, if its file is still there."""
    row = _table(backend).one("SELECT relpath, duration FROM tts_cache WHERE key = ?", (key,))
    if row is None or not backend.file_path(row["relpath"]).is_file():
        return None
    return row["relpath"], row["duration"]


def render(spec: TTSLine, voice: SpeakingVoice, language: str, trim: bool) -> np.ndarray:
    """The line's samples: spoken, trimmed or padded, stretched to ``duration`` if asked."""
    rate = speech.SAMPLE_RATE
    try:
        samples = voice.speak(spec.text, espeak=language)
    except speech.SpeechError as exc:
        raise LineError(f"text: {exc}") from None
    if trim:
        samples = mixing.trim_silence(samples, rate)
    else:
        samples = np.concatenate(
            [
                np.zeros(round(LEAD_IN * rate), np.float32),
                samples,
                np.zeros(round(TAIL * rate), np.float32),
            ]
        )
    if samples.size == 0 or float(np.abs(samples).max()) < 1e-3:
        raise LineError("text: nothing audible to say (only silence came out)")
    if spec.duration is not None:
        natural = samples.size / rate
        factor = spec.duration / natural
        if not 0.25 <= factor <= 4:
            raise LineError(
                f"duration: {spec.duration:g} s cannot be met; the natural reading "
                f"takes {natural:.1f} s and speech stretches only 0.25x to 4x"
            )
        samples = av.time_stretch(samples, rate, factor)
    return samples


def store(backend: Backend, takes: Sequence[Take]) -> dict[str, Exception | None]:
    """Write the takes' files and cache them; by key, None or why that take's file failed.

    All takes of one format in one encoding run; if that run fails, each is tried alone so one
    bad take fails only its own line.
    """
    unique = list({take.key: take for take in takes}.values())
    errors: dict[str, Exception | None] = {}
    for fmt in {take.fmt for take in unique}:
        batch = [take for take in unique if take.fmt == fmt]
        try:
            _write(backend, batch)
            errors.update((take.key, None) for take in batch)
        except av.MediaError:
            for take in batch:
                try:
                    _write(backend, [take])
                    errors[take.key] = None
                except av.MediaError as exc:
                    errors[take.key] = exc
    return errors


def _write(backend: Backend, takes: Sequence[Take]) -> None:
    targets = [backend.file_path(take.relpath) for take in takes]
    # Written aside then renamed: a concurrent identical line never serves a half-written file.
    partials = [t.with_name(f".{t.name}.{threading.get_ident()}.part") for t in targets]
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        av.encode_clips(
            [take.samples for take in takes], speech.SAMPLE_RATE, takes[0].fmt, partials
        )
        for partial, target in zip(partials, targets):
            os.replace(partial, target)
    finally:
        for partial in partials:
            partial.unlink(missing_ok=True)
    _table(backend).store_many(
        "INSERT OR REPLACE INTO tts_cache VALUES (?, ?, ?)",
        [(take.key, take.relpath, take.duration) for take in takes],
    )


def record_answers(backend: Backend, task_id: str, relpaths: Sequence[str]) -> None:
    """Which task answered with which files (a file is served while such a task lives)."""
    _table(backend).store_many(
        "INSERT OR IGNORE INTO tts_answers (relpath, task_id) VALUES (?, ?)",
        [(relpath, task_id) for relpath in relpaths],
    )


def answered_by_live_task(backend: Backend, relpath: str) -> bool:
    """Whether a task that is not deleted answered with the file ``relpath``."""
    return (
        _table(backend).one(
            "SELECT 1 FROM tts_answers a JOIN tasks t ON t.task_id = a.task_id WHERE "
            "a.relpath = ? AND t.deleted = 0 LIMIT 1",
            (relpath,),
        )
        is not None
    )


def _table(backend: Backend) -> Database:
    return backend.db.ensure(CACHE_SCHEMA)
