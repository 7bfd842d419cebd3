"""Text to speech, sync and async (interface §2.1), spoken by espeak-ng, encoded by ffmpeg.

Before anything is charged, a request is checked in the interface's order: each ``voiceId``
exists (preset catalogue or this key's clones), one provider per batch, ``timbreRefAudio``
only with clone providers. Then the published price is taken (:mod:`dubkit.schema.prices`: 2
credits per started 200 characters of all the request's lines together) and each line is spoken
on its own: a line that fails gets its ``errorMessage`` (and its share of the charge back, in
proportion to its characters), the others are unaffected.

How the options sound in the sandbox (*choice*, the interface leaves the effect open):

* ``language.target``: the line's voice keeps its timbre (variant, pitch, pace) and speaks the
  target language's espeak voice. A target espeak cannot speak is 422. Without it, each voice
  speaks its own locale.
* ``emoPrompt``: keywords (see ``EMOTIONS``; e.g. "happy", "sad and tired", "angry") move pace,
  pitch, intonation range and loudness; an unknown prompt keeps a neutral delivery. Several
  keywords average. ``emoWeight`` (default 0.6 when a prompt or reference is given) scales the
  change; without a prompt or reference it has no effect.
* ``emoRefAudio``: the reference's pace and intonation range are measured and the voice's
  delivery moves toward them by ``emoWeight``; its own timbre and base pitch stay.
* ``timbreRefAudio``: the line is spoken with an espeak voice imitating the reference's pitch
  and pace (variant by its gender). It wins over a clone ``voiceId``'s own timbre. Lines with
  ``timbreRefAudio`` and no ``voiceId`` belong to the batch's clone engine, ``V1`` if none.
* Lines start after 0.1 s and end 0.2 s before the end of the file (espeak-ng itself starts
  and stops on the first and last sound; service engines leave such breathing room).
  ``trim`` cuts leading and trailing silence; ``duration`` then time-stretches (pitch kept)
  to exactly that length. Factors beyond 0.25x..4x of the natural reading fail that line.
* Each result item carries a labelled extra ``emotion`` describing the delivery applied.
* Lines longer than ``MAX_TEXT`` characters, and reference URLs the sandbox will not read
  (:mod:`dubkit.sandbox.references`), are refused (400) before any credit is taken.
* Identical lines (same key, text, voice, delivery, options and format) are served from a
  cache of earlier results: same ``uri``, no new synthesis.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ... import locales
from ...media import speech
from ...schema import TTSAsyncRequest, TTSLine, TTSRequest, TTSResult, TTSResultItem, prices
from ..backend import Backend
from ..call import Call
from ..catalogue import SpeakingVoice, preset, speaking_voice_from_audio
from ..engines import voiceprint
from ..references import UnusableAudio, check_reference, fetch_audio
from ..service_error import ServiceError
from . import task_voices, tts_takes
from .common import Work, accepted, check_locale, run_sync, start_async
from .tts_takes import LineError
from .voices import find_clone

log = logging.getLogger("dubkit.sandbox")

MAX_TEXT = 10_000  # characters per line
DEFAULT_EMO_WEIGHT = 0.6
TIMBRE_ONLY_PROVIDER = "V1"
# keyword: (pace factor, pitch step, intonation-range step, loudness step) at emoWeight 1
EMOTIONS: dict[str, tuple[float, int, int, int]] = {
    "happy": (1.10, 8, 30, 10),
    "joy": (1.12, 10, 35, 15),
    "cheerful": (1.12, 10, 35, 10),
    "excited": (1.20, 12, 40, 25),
    "sad": (0.82, -8, -25, -15),
    "melanchol": (0.85, -6, -25, -15),
    "tired": (0.85, -6, -20, -20),
    "angry": (1.08, 4, 25, 45),
    "furious": (1.12, 6, 30, 60),
    "calm": (0.90, -3, -15, -10),
    "gentle": (0.92, -2, -10, -15),
    "soft": (0.92, 0, -10, -25),
    "relaxed": (0.90, -3, -15, -10),
    "fear": (1.15, 10, 15, 0),
    "scared": (1.15, 10, 15, 0),
    "nervous": (1.12, 8, 10, -5),
    "anxious": (1.12, 8, 10, -5),
    "surprise": (1.05, 12, 45, 10),
    "serious": (0.95, -4, -20, 0),
    "whisper": (0.90, 0, -20, -55),
}


@dataclass
class Line:
    index: int
    spec: TTSLine
    voice: SpeakingVoice | None  # None: timbre comes from timbreRefAudio
    provider: str


@dataclass(frozen=True)
class Spoken:
    """What became of one line: its file (under the files dir) or why it failed."""

    relpath: str | None = None
    duration: float | None = None
    emotion: str | None = None  # the delivery applied, a labelled extra
    error: str | None = None
    take: tts_takes.Take | None = None  # spoken, its file not yet written


# --------------------------------------------------------------------------- checks


def _resolve(backend: Backend, api_key: str, request: TTSRequest) -> tuple[list[Line], str | None]:
    """Check the request the way the service does; return its lines and target espeak."""
    target = request.language.target if request.language else None
    check_locale("language.target", target, locales.TARGET)
    for i, line in enumerate(request.data):
        if len(line.text) > MAX_TEXT:
            raise ServiceError(
                400,
                f"invalid request: data[{i}].text: at most {MAX_TEXT} "
                f"characters per line, got {len(line.text)}",
            )
        for name, url in (
            ("timbreRefAudio", line.timbre_ref_audio),
            ("emoRefAudio", line.emo_ref_audio),
        ):
            if url:
                check_reference(backend, url, f"data[{i}].{name}")
    found: dict[int, tuple[SpeakingVoice, str]] = {}
    missing = []
    for i, line in enumerate(request.data):
        if not line.voice_id:
            continue
        if (voice := preset(line.voice_id)) is not None:
            found[i] = (voice.speaking, voice.record.provider or "")
        elif (clone := find_clone(backend, api_key, line.voice_id)) is not None:
            found[i] = (clone.voice, clone.provider)
        elif (kept := task_voices.find(backend, api_key, line.voice_id)) is not None:
            found[i] = (kept.speaking, kept.provider)  # a dub's speaker, resent to edit a line
        else:
            missing.append(f"data[{i}] voiceId={line.voice_id}")
    if missing:  # the guide's words
        raise ServiceError(
            400,
            "voiceId not found in system or clone voice library: "
            f"{', '.join(missing)}. Use POST /openapi/v1/assets/voice/basic/list for system "
            "voices or POST /openapi/v1/assets/voice/clone/list for clone voices.",
        )
    by_provider: dict[str, list[int]] = {}
    for i, (_, voice_provider) in found.items():
        by_provider.setdefault(voice_provider, []).append(i)
    if len(by_provider) > 1:
        # The errors page's sentence (its newest version), then, after it, which line has
        # which voice: the sandbox's own detail.
        detail = ", ".join(
            f"data[{i}] {request.data[i].voice_id} -> {found[i][1]}" for i in sorted(found)
        )
        raise ServiceError(
            400,
            "all voiceId in one batch must share the same provider, but found multiple: "
            f"{', '.join(sorted(by_provider))}. Please use voices from the same provider, or "
            f"split into separate requests. (Sandbox detail: {detail}.)",
        )
    provider = next(iter(by_provider), None)
    if provider and provider.startswith("S") and any(ln.timbre_ref_audio for ln in request.data):
        with_reference = [f"data[{i}]" for i, ln in enumerate(request.data) if ln.timbre_ref_audio]
        raise ServiceError(
            400,
            "timbreRefAudio requires a clone provider (V1-V5), but voiceId in this batch "
            f"resolved to a system provider ({provider}). Use a cloned voice with "
            f"timbreRefAudio, or leave it out. (Sandbox detail: timbreRefAudio on "
            f"{', '.join(with_reference)}.)",
        )
    espeak = None
    if target:
        try:
            espeak = speech.voice_for_locale(target)
        except speech.SpeechError:
            raise ServiceError(
                422,
                f"language.target: the sandbox cannot speak {target!r} (no espeak-ng voice for it)",
            ) from None
    lines = [
        Line(i, spec, found[i][0] if i in found else None, provider or TIMBRE_ONLY_PROVIDER)
        for i, spec in enumerate(request.data)
    ]
    return lines, espeak


# --------------------------------------------------------------------------- speaking one line


def _delivery(
    backend: Backend, line: Line, voice: SpeakingVoice
) -> tuple[SpeakingVoice, str | None]:
    """Apply emoPrompt / emoRefAudio at emoWeight; say what was done."""
    spec = line.spec
    if not spec.emo_prompt and not spec.emo_ref_audio:
        return voice, None
    weight = DEFAULT_EMO_WEIGHT if spec.emo_weight is None else spec.emo_weight
    p = voice.prosody
    if spec.emo_ref_audio:
        samples, rate = fetch_audio(backend, spec.emo_ref_audio, "emoRefAudio")
        try:
            heard = voiceprint.derive_prosody(
                voiceprint.measure(samples, rate), voice.espeak, voice.variant
            )
        except ValueError as exc:
            raise LineError(f"emoRefAudio: {exc}") from None
        voice = voice.with_prosody(
            rate_wpm=_clip(p.rate_wpm + weight * (heard.rate_wpm - p.rate_wpm), 80, 450),
            pitch_range=_clip(p.pitch_range + weight * (heard.pitch_range - p.pitch_range), 0, 100),
        )
        return voice, f"delivery of emoRefAudio x{weight:.2f}"
    prompt = spec.emo_prompt.lower()  # type: ignore[union-attr]
    hits = [values for word, values in EMOTIONS.items() if word in prompt]
    if not hits:
        return voice, f"prompt {spec.emo_prompt!r} not recognised: neutral delivery"
    pace, pitch, spread, loud = (sum(v[k] for v in hits) / len(hits) for k in range(4))
    voice = voice.with_prosody(
        rate_wpm=_clip(p.rate_wpm * (1 + weight * (pace - 1)), 80, 450),
        pitch=_clip(p.pitch + weight * pitch, 0, 100),
        pitch_range=_clip(p.pitch_range + weight * spread, 0, 100),
        volume=_clip(p.volume + weight * loud, 0, 200),
    )
    words = ", ".join(w for w, v in EMOTIONS.items() if v in hits and w in prompt)
    return voice, f"{words} x{weight:.2f}"


def _clip(value: float, low: int, high: int) -> int:
    return int(min(high, max(low, round(value))))


def _speak(
    backend: Backend, api_key: str, line: Line, request: TTSRequest, espeak: str | None
) -> Spoken:
    """The line's file if an identical line has one; else its take, to be written with the
    request's other new lines."""
    spec = line.spec
    voice = line.voice
    language = espeak or (voice.espeak if voice else "en-us")
    if spec.timbre_ref_audio:
        samples, rate = fetch_audio(backend, spec.timbre_ref_audio, "timbreRefAudio")
        try:
            voice = speaking_voice_from_audio(samples, rate, language)
        except ValueError as exc:
            raise LineError(f"timbreRefAudio: {exc}") from None
    assert voice is not None
    voice, emotion = _delivery(backend, line, voice)
    fmt, trim = request.output_format or "m4a", bool(request.trim)
    key = tts_takes.cache_key(api_key, request, spec, voice, language)
    if (found := tts_takes.cached(backend, key)) is not None:
        return Spoken(*found, emotion)
    take = tts_takes.Take(key, fmt, tts_takes.render(spec, voice, language, trim))
    return Spoken(emotion=emotion, take=take)


# --------------------------------------------------------------------------- the plan


def _plan(backend: Backend, api_key: str, request: TTSRequest) -> Work:
    """Check and charge now; the work speaks each line, giving back a failed line's share."""
    lines, espeak = _resolve(backend, api_key, request)
    credits = prices.speech_shares(line.spec.text for line in lines)  # sums to the charge
    characters = sum(len(line.spec.text) for line in lines)
    backend.charge(
        api_key, sum(credits), f"speaking {len(lines)} line(s) of {characters} characters"
    )

    def run(task_id: str) -> dict[str, Any]:
        def failed(index: int, exc: Exception) -> Spoken:  # never fails the other lines
            if not isinstance(exc, UnusableAudio):
                log.exception("tts line %d of task %s", index, task_id)
            backend.refund(api_key, credits[index])
            return Spoken(error=str(exc))

        def write_takes() -> None:
            made = tts_takes.store(backend, [s.take for s in spoken if s.take])
            for i, line in enumerate(spoken):
                if line.take and (error := made[line.take.key]) is not None:
                    spoken[i] = failed(i, error)
                elif line.take:
                    spoken[i] = Spoken(line.take.relpath, line.take.duration, line.emotion)

        spoken: list[Spoken] = []
        for line in lines:
            try:
                spoken.append(_speak(backend, api_key, line, request, espeak))
            except Exception as exc:
                spoken.append(failed(line.index, exc))
            held = sum(s.take.duration for s in spoken if s.take)
            if held > tts_takes.BATCH_SECONDS:
                write_takes()
        write_takes()
        tts_takes.record_answers(backend, task_id, [s.relpath for s in spoken if s.relpath])
        created = backend.task_row(task_id)["created_at"]
        return _result(backend, task_id, created, spoken, _stand_ins(request)).to_wire()

    return run


def _stand_ins(request: TTSRequest) -> list[str] | None:
    """Which locales asked for (the target, else each preset voice's own) another language
    spoke, and by what: the result's notices."""
    target = request.language.target if request.language else None
    if target:
        asked = {"language.target": target}
    else:
        asked = {
            f"data[{i}].voiceId": found.record.locale
            for i, line in enumerate(request.data)
            if line.voice_id and (found := preset(line.voice_id)) and found.record.locale
        }
    said = [f"{field}: {why}" for field, code in asked.items() if (why := speech.stand_in(code))]
    return said or None


# --------------------------------------------------------------------------- answers


def _result(
    backend: Backend,
    task_id: str,
    created_at: str,
    spoken: list[Spoken],
    notices: list[str] | None = None,
) -> TTSResult:
    items = [
        TTSResultItem(
            uri=backend.file_url(s.relpath) if s.relpath else None,
            duration=s.duration,
            error_message=s.error,
            emotion=s.emotion,
        )
        for s in spoken
    ]
    return TTSResult(task_id=task_id, results=items, created_at=created_at, notices=notices)


# --------------------------------------------------------------------------- handlers


def create(call: Call[TTSRequest]) -> dict[str, Any]:
    return run_sync(call, _plan(call.backend, call.api_key, call.body))


def create_async(call: Call[TTSAsyncRequest]) -> dict[str, Any]:
    return accepted(start_async(call, _plan(call.backend, call.api_key, call.body)))
