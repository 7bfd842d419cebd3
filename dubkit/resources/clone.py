"""Voice cloning (interface §2.3), behind ``client.voices.clone`` and ``clone_async``.

>>> clone = client.voices.clone("me.wav", name="Me", language="en-US",
...                             text="The words I say in me.wav.")
>>> client.tts.speak("Now I say anything.", clone.voice_id)
>>> task = client.voices.clone_async("https://example.com/ref.mp3", provider="V5")
>>> task.wait().result                                   # a Clone

The reference is a local file (uploaded as a material first; its URL becomes ``refAudio``), an
http(s) URL, or a :class:`~dubkit.resources.materials.Material`. ``provider`` is a clone
engine V1-V5 (§6.3): V3 suits English, V5 other languages, V1 short everyday speech.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._transport import new_idempotency_key
from ..errors import ValidationError
from ..schema import CloneAsyncRequest, CloneRequest, CloneResult
from .._wire import parse
from ..uploads import check_media_file
from .materials import Material
from .tasks import RESULT_TYPES, Task

if TYPE_CHECKING:
    from ..client import Client

PROVIDERS = ("V1", "V2", "V3", "V4", "V5")
AudioSource = "str | os.PathLike[str] | Material"


class Clone:
    """A new cloned voice: ``voice_id`` for TTS, and what it was cloned from."""

    def __init__(self, result: CloneResult, context: Mapping[str, Any]) -> None:
        extra = result.model_extra or {}
        self.voice_id = result.voice_id
        self.task_id = result.task_id
        self.created_at = result.created_at
        self.provider: str | None = extra.get("provider") or context.get("provider")
        self.measured: dict[str, Any] | None = extra.get("measured")   # sandbox extra
        self.name: str | None = context.get("name")
        self.language: str | None = context.get("language")
        self.text: str | None = context.get("text")
        self.ref_audio: str | None = context.get("refAudio")

    def __repr__(self) -> str:
        return f"Clone({self.voice_id!r}, name={self.name!r}, provider={self.provider!r})"

    def _repr_html_(self) -> str:
        from ..media.audio import format_of, mime_type
        from ..widgets.audio import player_html
        facts = [("voice", self.voice_id), ("name", self.name), ("provider", self.provider),
                 ("language", self.language), ("text", self.text)]
        if self.measured:
            facts.append(("measured", ", ".join(f"{k} {v}" for k, v in self.measured.items())))
        rows = "".join(f"<tr><th style='text-align:left'>{k}</th><td>{html.escape(str(v))}"
                       f"</td></tr>" for k, v in facts if v)
        player = player_html(self.ref_audio, mime_type(format_of(self.ref_audio))) \
            if self.ref_audio else ""
        return (f"<table class='dubkit-clone'>{rows}<tr><th style='text-align:left'>reference"
                f"</th><td>{player}</td></tr></table>")


def resolve_audio_url(client: "Client", path_or_url: Any, field: str = "refAudio") -> str:
    """An http(s) URL for a recording: URLs pass, Materials give their audio URL, local files
    are uploaded as materials first (checked before any request: missing, empty, text).

    >>> resolve_audio_url(client, "voice.wav")   # 'http://…/files/materials/mat_…/voice.wav'
    """
    if isinstance(path_or_url, Material):
        url = path_or_url.audio_url or path_or_url.address_url
        if not url:
            raise ValidationError(field, f"material {path_or_url.material_id} has no audio URL")
        return url
    if path_or_url is None or (isinstance(path_or_url, str) and not path_or_url.strip()):
        raise ValidationError(field, "is required: a local audio file, an http(s) URL or a "
                                     "Material")
    if isinstance(path_or_url, str) and path_or_url.startswith(("http://", "https://")):
        return path_or_url
    if not isinstance(path_or_url, (str, os.PathLike)):
        raise ValidationError(field, f"expected a local audio file, an http(s) URL or a "
                                     f"Material, got {type(path_or_url).__name__}")
    check_media_file(path_or_url, field)
    material = client.materials.upload(path_or_url, progress=False)
    return resolve_audio_url(client, material, field)


def _request(client: "Client", model: type[CloneRequest], source: Any, name: str | None,
             provider: str | None, language: str | None, text: str | None) -> CloneRequest:
    fields = {"voiceName": name, "provider": provider, "sampleLanguage": language,
              "sampleText": text}
    fields = {k: v for k, v in fields.items() if v is not None}
    parse(model, fields)              # a bad provider is refused before anything is uploaded
    return parse(model, {**fields, "refAudio": resolve_audio_url(client, source)})


def _context(body: CloneRequest) -> dict[str, Any]:
    return {"name": body.voice_name, "provider": body.provider,
            "language": body.sample_language, "text": body.sample_text,
            "refAudio": body.ref_audio}


def clone_voice(client: "Client", source: Any, *, name: str | None = None,
                provider: str | None = None, language: str | None = None,
                text: str | None = None, idempotency_key: str | None = None) -> Clone:
    """Clone the voice in ``source`` and wait for it (see the module docstring).

    ``language`` is the sample's locale (``sampleLanguage``), ``text`` its transcript
    (``sampleText``).
    """
    body = _request(client, CloneRequest, source, name, provider, language, text)
    data = client.call("clone.create", body, idempotency_key=idempotency_key)
    clone = Clone(CloneResult.model_validate(data), _context(body))
    client.voices.remember(clone.voice_id, clone.provider)
    return clone


def clone_voice_async(client: "Client", source: Any, *, name: str | None = None,
                      provider: str | None = None, language: str | None = None,
                      text: str | None = None, extra_data: Mapping[str, Any] | None = None,
                      idempotency_key: str | None = None) -> Task:
    """Like :func:`clone_voice`, but returns a :class:`Task` at once (webhook
    ``openapi-clone-voice``); ``task.wait().result`` is the :class:`Clone`."""
    key = idempotency_key or new_idempotency_key()
    body = _request(client, CloneAsyncRequest, source, name, provider, language, text)
    # The key rides in extraData so the webhook can be matched to this call.
    body.extra_data = {"dubkitIdempotencyKey": key, **(body.extra_data or {}),
                       **(extra_data or {})}
    data = client.call("clone.create_async", body, idempotency_key=key)
    return Task(client, data["taskId"], task_type="cloneVoice", status="running",
                created_at=data.get("createdAt"), idempotency_key=key, context=_context(body))


def _clone_result(client: "Client", raw: dict[str, Any], context: dict[str, Any]) -> Clone:
    clone = Clone(CloneResult.model_validate(raw), context)
    if clone.voice_id:
        client.voices.remember(clone.voice_id, clone.provider)
    return clone


RESULT_TYPES["cloneVoice"] = _clone_result
