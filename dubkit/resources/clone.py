"""Voice cloning (interface §2.3): ``client.clones``.

>>> clone = client.clones.create("me.wav", name="Me", locale="en-US",
...                              text="The words I say in me.wav.")
>>> client.tts.speak("Now I say anything.", clone.voice_id)
>>> task = client.clones.create_async("https://example.com/ref.mp3", provider="V5")
>>> task.wait().result                                   # a Clone
>>> client.clones.ab(clone, "Any text at all.")          # reference against clone

The reference is a local file (uploaded as a material first; its URL becomes ``refAudio``), an
http(s) URL, or a :class:`~dubkit.results.Material`. ``provider`` is a clone engine V1-V5
(§6.3): V3 suits English, V5 other languages, V1 short everyday speech.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Union

from .._transport import Transport
from .._util.deprecation import renamed_keywords
from .._wire import checked
from ..errors import UnexpectedAnswerError, ValidationError
from ..results import ABPlayers, Clone, Material, Task
from ..schema import CloneAsyncRequest, CloneContext, CloneProvider, CloneRequest, prices
from ..schema.prices import Quote
from ._base import Offloaded, Resource, offloaded, offloaded_task
from .materials import MaterialsResource
from .tts import TTSResource
from .voices import VoicesResource

Recording = Union[str, "os.PathLike[str]", Material]  # a local file, an http(s) URL, a Material
DEFAULT_TEXT = "Hello! This is my voice, cloned from a short recording."


class CloneResource(Resource):
    """``client.clones``: make cloned voices (list, rename, delete them with ``client.voices``)."""

    def __init__(
        self,
        transport: Transport,
        voices: VoicesResource,
        materials: MaterialsResource,
        tts: TTSResource,
    ) -> None:
        super().__init__(transport)
        self._voices, self._materials, self._tts = voices, materials, tts

    @renamed_keywords(language="locale")
    def create(
        self,
        source: Recording,
        *,
        name: str | None = None,
        provider: CloneProvider | None = None,
        locale: str | None = None,
        text: str | None = None,
        idempotency_key: str | None = None,
    ) -> Clone:
        """Clone the voice in ``source`` and wait for it (see the module docstring).

        ``locale`` is the sample's locale (``sampleLanguage``), ``text`` its transcript
        (``sampleText``). Everything is checked before a local file is uploaded.
        """
        body = self._request(CloneRequest, source, name, provider, locale, text)
        data = self._transport.call("clone.create", body, idempotency_key=idempotency_key)
        clone = Clone.from_task(self._transport, data, CloneContext.of(body))
        if not clone.voice_id:  # allowed by the document, and no voice to speak with
            raise UnexpectedAnswerError(
                "the answer has no voiceId: no voice was made",
                operation="clone.create",
                **self._transport.answered(),
            )
        self._voices._remember(clone.voice_id, clone.provider)
        return clone

    def quote(self) -> Quote:
        """What a clone costs (flat, charged only if it succeeds); nothing is sent."""
        return prices.clone_quote()

    @renamed_keywords(language="locale")
    def create_async(
        self,
        source: Recording,
        *,
        name: str | None = None,
        provider: CloneProvider | None = None,
        locale: str | None = None,
        text: str | None = None,
        extra_data: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Task:
        """Like :meth:`create`, but returns a :class:`Task` at once (webhook
        ``openapi-clone-voice``); ``task.wait().result`` is the :class:`Clone`."""
        body = self._request(CloneAsyncRequest, source, name, provider, locale, text)
        return self._run(
            self._start(
                "clone.create_async", body, extra_data=extra_data, idempotency_key=idempotency_key
            )
        )

    def ab(self, clone: Clone, text: str | None = None, **tts: Any) -> ABPlayers:
        """Speak ``text`` (default: the clone's transcript) with the clone, to play against
        the reference: A/B players. ``tts`` options go to ``client.tts.speak``."""
        words = text or clone.text or DEFAULT_TEXT
        if not clone.voice_id:
            raise ValidationError("clone", "has no voice_id to speak with (its task made no voice)")
        line = self._tts.speak(words, clone.voice_id, **tts)
        return ABPlayers(self._transport, clone, line.uri or "", words)

    def _request(
        self,
        model: type[CloneRequest],
        source: Any,
        name: str | None,
        provider: str | None,
        locale: str | None,
        text: str | None,
    ) -> CloneRequest:
        fields = {
            "voice_name": name,
            "provider": provider,
            "sample_language": locale,
            "sample_text": text,
        }
        fields = {k: v for k, v in fields.items() if v is not None}
        checked(model, fields)  # a bad provider is refused before anything is uploaded
        return checked(
            model, {**fields, "ref_audio": self._materials._audio_url(source, "refAudio")}
        )


class AsyncCloneResource(Offloaded[CloneResource]):
    """``client.clones`` of :class:`dubkit.AsyncClient`: :class:`CloneResource`'s calls,
    awaited (a local reference is uploaded off the loop, see
    :class:`~dubkit.resources._base.Offloaded`); ``create_async`` gives an
    :class:`~dubkit.results.AsyncTask`.

    >>> clone = await client.clones.create("me.wav", name="Me", locale="en-US", text="…")
    """

    create = offloaded(CloneResource.create)
    create_async = offloaded_task(CloneResource.create_async)
    ab = offloaded(CloneResource.ab)

    def quote(self) -> Quote:
        """What a clone costs (flat, charged only if it succeeds); nothing is sent."""
        return self._sync.quote()
