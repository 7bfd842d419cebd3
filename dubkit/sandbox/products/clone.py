"""Voice cloning, sync and async (interface §2.3): a clone that speaks with the reference's
pitch and pace.

How a clone is made (every provider):

1. ``refAudio`` is read as :mod:`dubkit.sandbox.references` says: files this sandbox serves
   from disk, other URLs only as its fetch policy allows (a refused URL, or a missing
   ``refAudio``, is 400 before anything is charged). A URL that cannot be used (unreachable,
   an HTTP error, not audio: one message for all) or has no speech in it is 422 naming
   ``refAudio``.
2. The first ``MAX_REFERENCE_SECONDS`` are measured (``engines.voiceprint.measure``): median
   pitch, intonation range, syllables per second of speech, and gender by pitch.
3. An espeak variant of that gender is chosen and its prosody derived
   (``engines.voiceprint.derive_prosody``, calibrated per voice) so that TTS with the clone is
   measurably closer in pitch and pace to the reference than a default voice.
4. The clone is stored (:func:`dubkit.sandbox.products.voices.insert_clone`): ``name`` is
   ``voiceName`` (*choice* default: "Clone of <reference file name>"), ``exampleLanguage``
   ``sampleLanguage`` (*choice* default ``en-US``: the sandbox does not identify languages),
   ``content`` ``sampleText``, ``audio`` the reference (a copy served by the sandbox when it
   came from elsewhere), ``taskId`` the clone task.

What each provider does here (*choice*; the sandbox has one cloning method, tuned per engine):

====  ======================================================================================
V1    simple: pitch and pace; the intonation range stays espeak's default
V2    film and drama: pitch, pace and the measured intonation range
V3    English: as V2, and the clone's own language is English (``sampleLanguage`` if it is
      an English locale, else ``en-US``)
V4    emotion and nuance: as V2 (the sandbox has no finer nuance to copy)
V5    multilingual: as V2, and the clone's own language is ``sampleLanguage``'s
====  ======================================================================================

V1, V2 and V4 also speak ``sampleLanguage``'s language by default. TTS with
``language.target`` speaks the target language in the clone's timbre whatever the provider.
*choice* Without ``provider``: V5 for a non-English ``sampleLanguage``, else V3.
*choice* A clone costs ``CLONE_CREDITS`` credits, taken before any work and given back if the
clone fails. The result carries two labelled extras: ``provider`` (the engine used) and
``measured`` (what was heard in the reference).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ... import locales
from ...media import av, speech
from ...schema import CloneAsyncRequest, CloneMeasurement, CloneRequest, CloneResult
from ...schema.prices import CLONE_CREDITS
from ..backend import Backend, now_iso
from ..call import Call
from ..catalogue import speaking_voice_from_audio
from ..engines import voiceprint
from ..references import UnusableAudio, check_reference, fetch_audio
from ..service_error import ServiceError
from .common import Work, accepted, check_locale, run_sync, start_async
from .voices import StoredClone, insert_clone

MAX_REFERENCE_SECONDS = 60
DEFAULT_LANGUAGE = "en-US"


def _provider(request: CloneRequest, language: str) -> str:
    if request.provider:
        return request.provider
    return "V3" if language.lower().startswith("en") else "V5"


def _espeak_language(provider: str, language: str) -> str:
    if provider == "V3" and not language.lower().startswith("en"):
        language = "en-US"
    try:
        return speech.voice_for_locale(language)
    except speech.SpeechError:
        raise ServiceError(
            422, f"sampleLanguage: the sandbox has no voice that speaks {language!r}"
        ) from None


def _check(backend: Backend, request: CloneRequest) -> None:
    if not request.ref_audio:
        raise ServiceError(
            400,
            "invalid request: refAudio: is required (an http(s) URL of a "
            "short recording of the voice to clone)",
        )
    check_reference(backend, request.ref_audio, "refAudio")
    if request.sample_language:
        check_locale("sampleLanguage", request.sample_language, locales.SOURCE | locales.TARGET)


def _plan(backend: Backend, api_key: str, request: CloneRequest) -> Work:
    """Check and charge now; the work clones the voice, giving the credits back if it fails."""
    _check(backend, request)
    language = request.sample_language or DEFAULT_LANGUAGE
    provider = _provider(request, language)
    espeak = _espeak_language(provider, language)
    backend.charge(api_key, CLONE_CREDITS, "cloning a voice")

    def run(task_id: str) -> dict[str, Any]:
        try:
            clone, heard = _clone(backend, api_key, request, task_id, provider, language, espeak)
        except BaseException:
            backend.refund(api_key, CLONE_CREDITS)
            raise
        return _result(task_id, clone, heard, now_iso()).to_wire()

    return run


def _clone(
    backend: Backend,
    api_key: str,
    request: CloneRequest,
    task_id: str,
    provider: str,
    language: str,
    espeak: str,
) -> tuple[StoredClone, voiceprint.Voiceprint]:
    url = request.ref_audio or ""
    try:
        samples, rate = fetch_audio(backend, url, "refAudio")
    except UnusableAudio as exc:
        raise ServiceError(422, str(exc)) from None
    samples = samples[: MAX_REFERENCE_SECONDS * rate]
    try:
        heard = voiceprint.measure(samples, rate)
        voice = speaking_voice_from_audio(samples, rate, espeak)
    except ValueError as exc:
        raise ServiceError(422, f"refAudio: {exc}") from None
    if provider == "V1":
        voice = voice.with_prosody(pitch_range=speech.Prosody().pitch_range)
    stem = Path(unquote(urlparse(url).path)).stem or "reference"
    clone = insert_clone(
        backend,
        api_key,
        voice,
        name=request.voice_name or f"Clone of {stem}",
        provider=provider,
        language=language,
        content=request.sample_text,
        audio=_served_reference(backend, url, samples, rate, task_id),
        task_id=task_id,
    )
    return clone, heard


def _served_reference(backend: Backend, url: str, samples: Any, rate: int, task_id: str) -> str:
    """The reference's URL if this sandbox serves it, else the URL of a copy it now serves."""
    if url.startswith(backend.base_url + "/files/"):
        return url
    relpath = f"clones/{task_id}/reference.wav"
    target = backend.file_path(relpath)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".reference.{os.getpid()}.wav")
    av.encode_audio(samples, rate, "wav", partial)
    os.replace(partial, target)
    return backend.file_url(relpath)


# --------------------------------------------------------------------------- answers


def _result(
    task_id: str, clone: StoredClone, heard: voiceprint.Voiceprint, created_at: str
) -> CloneResult:
    measured = CloneMeasurement(
        pitch_hz=round(heard.median_pitch_hz, 1),
        pitch_range_hz=round(heard.pitch_range_hz, 1),
        syllables_per_second=round(heard.speaking_rate, 2),
        gender=heard.gender,
    )
    return CloneResult(
        task_id=task_id,
        voice_id=clone.record.voice_id,
        created_at=created_at,
        provider=clone.provider,
        measured=measured,
    )


# --------------------------------------------------------------------------- handlers


def create(call: Call[CloneRequest]) -> dict[str, Any]:
    return run_sync(call, _plan(call.backend, call.api_key, call.body))


def create_async(call: Call[CloneAsyncRequest]) -> dict[str, Any]:
    return accepted(start_async(call, _plan(call.backend, call.api_key, call.body)))
