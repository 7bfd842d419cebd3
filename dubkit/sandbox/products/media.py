"""Media translation (interface §2.4): translate and dub a registered material, async only.

The work itself is :mod:`dubkit.sandbox.pipeline`; this module checks the request, charges,
makes the task and hands the pipeline the key's material and voices.

Choices where the interface is silent (*choice*):

* Cost: the published price (:mod:`dubkit.schema.prices`): 60 credits per minute of the
  material, a clip under a minute billed as a full minute, per started minute past it (*choice*);
  lip sync asked for on a video adds 90 per minute, though the sandbox cannot apply it (the
  result's notices say so): a class learns what the service charges. Charged before the task
  is made (402 when short, nothing started); a task that fails gets its credits back.
* *choice* ``taskType: at`` on a video material runs as ``vt`` (the acceptance and the task say
  ``vt``); ``vt`` on an audio material is 400 (there is no picture to dub).
* *choice* Checked before any credit is spent, each a 400 naming the field: locales
  (``language.source`` may be ``auto``), a target the sandbox cannot speak, every
  ``selectedVoicesList`` voice (a preset or one of the key's live clones; a ``provider`` given
  with it must be that voice's), ``options.text`` values. An unknown, unfinished or deleted
  ``source.materialId`` is 404 with the reason.
* *choice* Deliverables are served under ``/files/media/<taskId>/``; ``result`` carries the
  §3.6 shape plus labelled extras (see :mod:`dubkit.sandbox.pipeline.result`).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ... import locales
from ...media import av, speech
from ...schema import DubbedSource, Material, MediaAcceptance, MediaTranslationRequest, prices
from .. import pipeline, storage
from ..backend import Backend
from ..call import Call
from ..catalogue import preset as find_preset
from ..catalogue import presets as all_presets
from ..references import fetch_media
from ..service_error import ServiceError
from . import task_voices
from .buckets import Bucket
from .common import Work, check_locale, start_async
from .materials import find_material, material_path, register_fetched
from .voices import find_clone, served_preset


class KeyVoices:
    """The voices one API key may dub with: every preset and the key's live clones."""

    def __init__(self, backend: Backend, api_key: str) -> None:
        self.backend, self.api_key = backend, api_key

    def find(self, voice_id: str) -> pipeline.Voice | None:
        found = find_preset(voice_id)
        if found is not None:
            record = served_preset(self.backend, found)
            return pipeline.Voice(
                voice_id,
                record.provider or "",
                record.display_name or voice_id,
                record.gender or "",
                "preset",
                found.speaking,
                locale=record.locale,
                sample_url=record.audio or "",
                sample_text=found.sample_text,
            )
        clone = find_clone(self.backend, self.api_key, voice_id)
        if clone is None:
            kept = task_voices.find(self.backend, self.api_key, voice_id)
            if kept is None:
                return None
            return pipeline.Voice(
                voice_id, kept.provider, kept.name, kept.gender, "task-clone", kept.speaking
            )
        cloned = clone.record
        gender = "female" if (clone.voice.variant or "").startswith("f") else "male"
        return pipeline.Voice(
            voice_id,
            clone.provider,
            cloned.name or voice_id,
            gender,
            "clone",
            clone.voice,
            locale=cloned.example_language,
            sample_url=cloned.audio or "",
            sample_text=cloned.content or "",
        )

    def keep(self, task_id: str, voice: pipeline.Voice) -> None:
        """Remember a clone a dub made, so the key can speak its lines again."""
        task_voices.keep(
            self.backend,
            self.api_key,
            task_id,
            task_voices.TaskVoice(
                voice.voice_id, voice.provider, voice.name, voice.gender, voice.speaking
            ),
        )

    def presets(self) -> list[pipeline.Voice]:
        """Every preset, light (no preview URL): ``find`` gives the full voice once chosen."""
        return [
            pipeline.Voice(
                p.voice_id,
                p.record.provider or "",
                p.record.display_name or p.voice_id,
                p.record.gender or "",
                "preset",
                p.speaking,
                locale=p.record.locale,
            )
            for p in all_presets()
        ]


def _check_voices(settings: pipeline.Settings, library: KeyVoices) -> None:
    for i, (voice_id, provider) in enumerate(settings.selected):
        field = f"options.voiceSpeakers.selectedVoicesList[{i}]"
        if not voice_id:
            raise ServiceError(400, f"invalid request: {field}.voiceId is required")
        voice = library.find(voice_id)
        if voice is None:
            raise ServiceError(
                400,
                f"invalid request: {field}.voiceId: voice {voice_id!r} not "
                f"found in system or clone voice library (see "
                f"assets/voice/basic/list and assets/voice/clone/list)",
            )
        if provider and provider != voice.provider:
            raise ServiceError(
                400,
                f"invalid request: {field}.provider: {provider!r} does not "
                f"match voice {voice_id!r}, whose provider is "
                f"{voice.provider!r}; send them together as returned",
            )


def _task_type(requested: str, material: Material) -> str:
    if material.category == "video":
        return "vt"
    if requested == "vt":
        raise ServiceError(
            400,
            f"invalid request: taskType: 'vt' needs a video material; "
            f"{material.material_id} is {material.category} (use 'at')",
        )
    return "at"


def _fetched(backend: Backend, api_key: str, url: str) -> Material:
    """The file at ``url`` (``source.sourceUrl``), fetched within the fetch policy and the
    upload limit, probed, and registered as a material of the key (the same bytes again are
    the same material); a 400, 413 or 422 names the field otherwise."""
    name = re.sub(r"[^\w.-]", "_", Path(unquote(urlsplit(url).path)).name)[:100].strip(".")
    backend.scratch_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=backend.scratch_dir, prefix="fetch-") as folder:
        path = Path(folder) / (name or "fetched")
        with open(path, "wb") as out:
            md5 = fetch_media(backend, url, "source.sourceUrl", out, storage.upload_limit(backend))
        try:
            info = av.probe(path)
        except av.MediaError:
            raise ServiceError(
                422, "source.sourceUrl: the file is not audio or video the service can read"
            ) from None
        return register_fetched(backend, api_key, path, name or "fetched", md5, info)


def _plan(
    backend: Backend, api_key: str, request: MediaTranslationRequest
) -> tuple[str, int, Work]:
    """Check and charge now: the effective task type, the credits taken, the dubbing work."""
    check_locale("language.source", request.language.source, locales.SOURCE, allow_auto=True)
    check_locale("language.target", request.language.target, locales.TARGET)
    try:
        speech.voice_for_locale(request.language.target)
    except speech.SpeechError:
        raise ServiceError(
            400,
            f"invalid request: language.target: the sandbox has no voice "
            f"that speaks {request.language.target!r}",
        ) from None
    url = request.source.source_url
    if url is not None:  # fetched and registered before anything is charged
        material = _fetched(backend, api_key, url)
    else:
        material = find_material(backend, api_key, request.source.material_id or "")
    path = material_path(backend, api_key, material.material_id or "")
    task_type = _task_type(request.task_type, material)
    settings = pipeline.read_settings(request, task_type)
    library = KeyVoices(backend, api_key)
    _check_voices(settings, library)
    seconds = (material.duration or 0) / 1000
    lipsync = task_type == "vt" and settings.lipsync
    bucket = Bucket.of(request.output)  # one the sandbox cannot deliver to costs nothing
    credits = prices.dub_credits(seconds, lipsync=lipsync)
    minutes = prices.dub_minutes(seconds)
    backend.charge(
        api_key,
        credits,
        f"dubbing {seconds:g} s of media ({minutes} min{' with lip sync' if lipsync else ''})",
    )
    gains = dict(backend.setting("faults", {}).get("lineGainDb") or {})
    source = DubbedSource(
        source_url=url,
        material_id=material.material_id,
        url=material.address_url,
        category=material.category,
        name=material.name,
        duration=seconds,
        credits=credits,
    )

    def work(task_id: str) -> dict[str, Any]:
        folder = f"media/{task_id}"
        outputs = pipeline.Outputs(
            backend.file_path(folder), lambda name: backend.file_url(f"{folder}/{name}")
        )
        try:
            result = pipeline.run(
                pipeline.Job(
                    task_id,
                    Path(path),
                    settings,
                    library,
                    outputs,
                    source,
                    scratch_dir=backend.scratch_dir,
                    line_gain_db=gains,
                )
            )
            if bucket is not None:
                result["delivery"] = bucket.deliver(backend, api_key, task_id, result)
            return result
        except BaseException:
            backend.refund(api_key, credits)
            raise

    return task_type, credits, work


def create_async(call: Call[MediaTranslationRequest]) -> dict[str, Any]:
    task_type, credits, work = _plan(call.backend, call.api_key, call.body)
    try:
        task = start_async(call, work, task_type)
    except BaseException:
        call.backend.refund(call.api_key, credits)
        raise
    return MediaAcceptance(
        task_id=task["task_id"],
        created_at=task["created_at"],
        task_type=task_type,
        status="running",
    ).to_wire()
