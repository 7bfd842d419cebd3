"""The media-translation result in the interface's shape (§3.6), plus labelled extras.

Extras beyond §3.6 (the wire keeps unknown fields): ``source`` (the material dubbed),
``subtitles`` on ``build`` (SRT/VTT URLs), ``timings`` (seconds per stage), ``notices`` (every
option the sandbox could not honour as asked, and what it did instead), ``options`` (the
settings as understood), ``engine`` labels, ``lipsync`` (requested / applied).

*choice* ``tts.result[].duration`` is in milliseconds (an integer, like material durations).
*choice* ``alignment`` tracks: ``tracksTimes`` is ``[start, end]`` on the output timeline,
``timeRange`` the ``[start, end]`` used from the file. The audio tracks are what was mixed:
the background stem at full level, the original speech stem at the separation's level
(``volumeScale`` 0 removed, ~0.126 ducked by 18 dB, 1 kept), then one track per dubbed line.
"""

from __future__ import annotations

import re
from typing import Any

from ...media import speech
from ..engines import translate as translation_engine
from .render import DUCK_DB
from .settings import Settings
from .transcript import Line

SPEECH_ENGINE = "sandbox-espeak-ng"
_VOWELS = re.compile(r"[aeiouyàâäéèêëîïôöùûüáíóúãõåæøœ]+", re.IGNORECASE)


def syllables(text: str) -> int:
    """A rough syllable count (vowel groups; one per other-script character)."""
    latin = len(_VOWELS.findall(text))
    other = sum(1 for ch in text if ch.isalpha() and ord(ch) > 0x2FF)
    return latin + other


def assemble(
    *,
    task_id: str,
    settings: Settings,
    category: str,
    lines: list[Line],
    speakers: int,
    matches: list[dict[str, Any]],
    files: dict[str, Any],
    scale: float,
    total: float,
    source: dict[str, Any],
    timings: dict[str, float],
    notices: list[str],
) -> dict[str, Any]:
    """Everything the task's ``result`` holds once finished."""
    target, source_locale = settings.target, settings.source
    asr = [
        {
            "id": line.id,
            "speaker": line.speaker_label(),
            "text": line.text,
            "locale": source_locale,
            "emotion": "",
            "name": line.speaker_label(),
            "gender": line.measured.gender if line.measured else "",
            "age": "",
            "textWithBracket": line.text,
            "textWithBreak": line.text,
            "start": line.start,
            "end": line.end,
            "placeholder": line.placeholder,
        }
        for line in lines
    ]
    translated = [
        {
            "id": line.id,
            "start": line.at,
            "end": round(line.at + _heard(line), 3),
            "sourceText": line.text,
            "text": line.translation,
            "speaker": line.speaker_label(),
            "locale": target,
            "gender": line.voice.gender,
            "voiceId": line.voice.voice_id,
            "provider": line.voice.provider,
            "speakerDisplayName": line.voice.name,
            "emotion": "",
            "age": "",
            "mode": settings.mode,
            "sourceSyllable": syllables(line.text),
            "targetSyllable": syllables(line.translation),
            "sourceStart": line.start,
            "sourceEnd": line.end,
        }
        for line in lines
    ]
    tts = [
        {
            "id": line.id,
            "text": line.translation,
            "ttsFile": files["lines"][line.id],
            "provider": line.voice.provider,
            "voiceId": line.voice.voice_id,
            "cloneMode": settings.mode,
            "duration": round(_heard(line) * 1000),
            "rawDuration": line.raw_duration,
            "stretch": line.stretch,
            "truncated": line.truncated,
        }
        for line in lines
    ]
    output_total = round(total * scale, 3)
    alignment = {
        "audio": [
            _track(files["background"], 0, output_total, 0, output_total, 1.0),
            _track(files["speech"], 0, output_total, 0, output_total, _speech_level(settings)),
        ]
        + [
            _track(files["lines"][line.id], line.at, line.at + _heard(line), 0, _heard(line), 1.0)
            for line in lines
        ],
        "subtitle": [
            {
                "id": line.id,
                "start": line.at,
                "end": round(line.at + _heard(line), 3),
                "text": line.translation,
            }
            for line in lines
        ],
        "video": (
            [_track(source["url"], 0, output_total, 0, total, 0.0)] if category == "video" else []
        ),
    }
    first_clone = next((m for m in matches if m["voiceId"].startswith("cv_")), None)
    return {
        "taskId": task_id,
        "compress": files["compress"],
        "asrScripts": {
            "asrResults": asr,
            "monoAudio": files["mono"],
            "speakerNum": speakers,
            "language": {"source": source_locale, "target": target},
            "category": category,
            "industry": "",
            "keywords": [],
            "ctcEnabled": False,
        },
        "audioSeparation": {
            "sfxUrl": "",
            "musicUrl": "",
            "vocalUrl": files["speech"],
            "speechUrl": files["speech"],
            "otherUrl": "",
            "mnsUrl": files["background"],
        },
        "translatedScripts": {
            "result": translated,
            "prompt": settings.prompt,
            "mode": settings.translate_mode,
            "engine": translation_engine.ENGINE_LABEL,
        },
        "voiceClone": {
            "provider": settings.clone_provider,
            "mode": settings.mode,
            "refAudio": first_clone["audio"] if first_clone else "",
            "style": settings.style,
            "timbreMethod": settings.timbre,
        },
        "voiceMatch": matches,
        "tts": {"result": tts, "engine": SPEECH_ENGINE, "sampleRate": speech.SAMPLE_RATE},
        "alignment": {**alignment, "timelineStretch": scale},
        "build": {
            "video": files.get("video"),
            "images": files.get("images", []),
            "audio": files["audio"],
            "subtitles": files["subtitles"],
        },
        "source": source,
        "lipsync": {
            "requested": settings.lipsync,
            "applied": False,
            **({"reason": "lip sync is not available in the sandbox"} if settings.lipsync else {}),
        },
        "options": settings.echo(),
        "notices": notices,
        "timings": timings,
    }


def _speech_level(settings: Settings) -> float:
    if settings.separation == "remove":
        return 0.0
    return 1.0 if settings.separation == "keep" else round(10 ** (DUCK_DB / 20), 3)


def _heard(line: Line) -> float:
    return line.clip.duration if line.clip is not None else 0.0


def _track(
    url: str, start: float, end: float, used_from: float, used_to: float, volume: float
) -> dict[str, Any]:
    return {
        "file": url,
        "templateId": 0,
        "tracksTimes": [round(start, 3), round(end, 3)],
        "timeRange": [round(used_from, 3), round(used_to, 3)],
        "volumeScale": volume,
    }
