"""The voices a dub cloned for its speakers, kept so the key can speak its lines again.

*choice* A task's clones (``cv_…`` on a dub's lines and in ``voiceMatch``) are not added to the
key's clone library (clone/list does not show them), but the interface says a line's
``voiceId`` and ``provider`` are resent together when lines are edited: so TTS and later dubs
of the same key accept them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..backend import Backend
from ..catalogue import SpeakingVoice
from ..database import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS task_voices (
    voice_id TEXT NOT NULL, api_key TEXT NOT NULL, provider TEXT NOT NULL, name TEXT NOT NULL,
    gender TEXT NOT NULL, prosody TEXT NOT NULL, task_id TEXT NOT NULL,
    PRIMARY KEY (api_key, voice_id));
"""


@dataclass(frozen=True)
class TaskVoice:
    voice_id: str
    provider: str
    name: str
    gender: str
    speaking: SpeakingVoice


def _table(backend: Backend) -> Database:
    return backend.db.ensure(SCHEMA)


def keep(backend: Backend, api_key: str, task_id: str, voice: TaskVoice) -> None:
    _table(backend).execute(
        "INSERT OR REPLACE INTO task_voices VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            voice.voice_id,
            api_key,
            voice.provider,
            voice.name,
            voice.gender,
            json.dumps(voice.speaking.to_json()),
            task_id,
        ),
    )


def find(backend: Backend, api_key: str, voice_id: str) -> TaskVoice | None:
    row = _table(backend).one(
        "SELECT * FROM task_voices WHERE api_key = ? AND voice_id = ?", (api_key, voice_id)
    )
    if row is None:
        return None
    return TaskVoice(
        row["voice_id"],
        row["provider"],
        row["name"],
        row["gender"],
        SpeakingVoice.from_json(json.loads(row["prosody"])),
    )
