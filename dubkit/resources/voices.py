"""Preset and cloned voices: ``client.voices``.

>>> client.voices.presets(locale="en-US", gender="female", quality="high").to_frame()
>>> client.voices.presets(search="ava", limit=5)          # a table with a play control a voice
>>> client.voices.clones(search="narrator")
>>> client.voices.rename("cv_…", "Narrator (warm)"); client.voices.delete("cv_…")

Every listing pages through the service for you (``limit`` caps the count) and remembers
each voice's provider, which ``client.tts`` and ``client.dubbing`` use to check voices before
anything is sent. A voice is passed as ``voice=`` (several: ``voices=``): its id, or any record
with a ``voice_id`` (a listed voice, a :class:`~dubkit.results.Clone`).

A voice id the key's preset catalogue and clone library do not have is a
:class:`~dubkit.ValidationError` naming the argument it came in (:func:`unknown_voice`),
wherever it is passed: looked up in the service's own lists before anything is sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar, cast

from .._transport.plans import Call, Plan
from .._util.deprecation import renamed, renamed_keywords
from ..errors import UnexpectedAnswerError, ValidationError
from ..results import VoiceList
from ..results.voices import VoiceLike, voice_id_of
from ..schema import ClonedVoice, PresetVoice
from ._base import Resource

V = TypeVar("V", PresetVoice, ClonedVoice)


LISTING_HINT = "find ids with client.voices.presets() or client.voices.clones()"


def unknown_voice(
    field: str, voice_id: Any, *, presets_only: bool = False, req_id: str | None = None
) -> ValidationError:
    """The one error for a voice id the service's lists do not have (field: where it came in).

    >>> raise unknown_voice("voices[1]", "sv_nowhere")
    """
    if not isinstance(voice_id, str) or not voice_id.strip():
        return ValidationError(field, f"a voice id is required, got {voice_id!r}; {LISTING_HINT}")
    if presets_only:
        # cv_ is the interface's own prefix of cloned voices: say where those are found.
        clone = (
            f"; {voice_id!r} looks like a cloned voice id: client.voices.clones(voice=...)"
            if voice_id.startswith("cv_")
            else ""
        )
        return ValidationError(
            field,
            f"no preset voice {voice_id!r} in the catalogue; find "
            f"ids with client.voices.presets(){clone}",
            req_id=req_id,
        )
    return ValidationError(
        field,
        f"no voice {voice_id!r} in the preset or clone library of this key; {LISTING_HINT}",
        req_id=req_id,
    )


class VoicesResource(Resource):
    """``client.voices``: the preset catalogue and this key's cloned voices."""

    def __init__(self, transport: Any) -> None:
        super().__init__(transport)
        self._providers: dict[str, str] = {}

    # ----------------------------------------------------------------- presets

    @renamed_keywords(voice_id="voice")
    def presets(
        self,
        *,
        locale: str | None = None,
        gender: str | None = None,
        age: str | None = None,
        quality: str | None = None,
        category: str | None = None,
        emotion_prompt: str | None = None,
        search: str | None = None,
        voice: VoiceLike | None = None,
        top_ids: Sequence[str] | None = None,
        order_by: str | None = None,
        order: str | None = None,
        limit: int | None = None,
        page_size: int = 50,
        **wire: Any,
    ) -> VoiceList[PresetVoice]:
        """Preset voices matching every filter given, all pages (``limit`` caps the count).

        ``age``: young, adult, senior; ``quality``: any, high; ``emotion_prompt``: include,
        exclude; ``search`` matches display or local name; ``voice`` one voice (an id or a
        voice record); ``top_ids`` pins voices first;
        ``order_by``: voiceId, score, create_time, update_time, is_preferred; ``order``: asc,
        desc. Other wire fields pass through ``**wire``.
        """
        query = {
            "voice_id": voice_id_of(voice) if voice is not None else None,
            "search_name": search,
            "locale": locale,
            "age": age,
            "gender": gender,
            "quality": quality,
            "category": category,
            "emotion_prompt": emotion_prompt,
            "top_ids": list(top_ids) if top_ids is not None else None,
            "order_by": order_by,
            "order": order,
            **wire,
        }
        return self._run(self._list("voices.presets", PresetVoice, query, limit, page_size))

    def presets_page(
        self, page: int = 1, page_size: int = 10, **filters: Any
    ) -> VoiceList[PresetVoice]:
        """One page of presets (for paged views; filters as :meth:`presets`); ``total``
        counts every match."""
        return self._run(self._page("voices.presets", PresetVoice, page, page_size, filters))

    @renamed_keywords(voice_id="voice")
    def preset(self, voice: VoiceLike) -> PresetVoice:
        """The preset ``voice`` (its id, or a record with one); a
        :class:`~dubkit.ValidationError` naming ``voice`` if the catalogue has none (as for any
        unknown voice id, see :func:`unknown_voice`)."""
        return self._run(self._preset(voice))

    def _preset(self, voice: VoiceLike) -> Plan[PresetVoice]:
        voice = voice_id_of(voice)
        if not isinstance(voice, str) or not voice.strip():
            # An empty filter would list the whole catalogue: refuse it rather than answer
            # with some other voice.
            raise unknown_voice("voice", voice)
        found = yield from self._list("voices.presets", PresetVoice, {"voice_id": voice}, 1, 50)
        if not found:  # the list was asked: the error keeps its answer's req_id
            raise unknown_voice(
                "voice", voice, presets_only=True, req_id=self._transport.answered().get("req_id")
            )
        if found[0].voice_id != voice:  # a filter the service ignored: not the voice asked for
            raise UnexpectedAnswerError(
                f"asked for preset {voice!r}, the list answered {found[0].voice_id!r}",
                operation="voices.presets",
                **self._transport.answered(),
            )
        return found[0]

    # ----------------------------------------------------------------- clones

    @renamed_keywords(voice_id="voice", voice_ids="voices")
    def clones(
        self,
        *,
        voice: VoiceLike | None = None,
        voices: Sequence[VoiceLike] | None = None,
        search: str | None = None,
        order_by: str | None = None,
        order: str | None = None,
        limit: int | None = None,
        page_size: int = 50,
        **wire: Any,
    ) -> VoiceList[ClonedVoice]:
        """This key's cloned voices, all pages: ``voice`` one, ``voices`` several (ids or
        voice records). ``order_by``: voiceId, name, create_time, update_time; ``order``: asc,
        desc. Make new ones with ``client.clones``."""
        query = {
            "voice_id": voice_id_of(voice) if voice is not None else None,
            "search_name": search,
            "voice_ids": [voice_id_of(v) for v in voices] if voices is not None else None,
            "order_by": order_by,
            "order": order,
            **wire,
        }
        return self._run(self._list("voices.clones", ClonedVoice, query, limit, page_size))

    @renamed_keywords(voice_id="voice")
    def rename(self, voice: VoiceLike, name: str) -> None:
        """Give a cloned voice (its id, or its record) a new display name."""
        # returned: on the async client's transport it is the awaitable of the call
        return self._run(  # type: ignore[no-any-return]
            self._call("voices.rename", {"voice_id": voice_id_of(voice), "voice_name": name})
        )

    @renamed_keywords(voice_id="voice")
    def delete(self, voice: VoiceLike) -> None:
        """Delete a cloned voice (its id, or its record): it leaves lists and TTS."""
        return self._run(self._delete(voice))

    def _delete(self, voice: VoiceLike) -> Plan[None]:
        voice_id = voice_id_of(voice)
        yield Call("voices.delete", {"voice_id": voice_id})
        if isinstance(voice_id, str):
            self._providers.pop(voice_id, None)

    # ----------------------------------------------------------------- providers

    def _provider_of(self, voice_id: str) -> str | None:
        """The provider (S1…, V1…) the service gave for a voice seen in a listing, else None.

        Never guessed from the id's shape: ids are opaque, the service's records decide.
        """
        return self._providers.get(voice_id)

    def _require(self, voice_ids: Sequence[Any], fields: Sequence[str]) -> list[str]:
        """The provider of each voice, looked up in the service's own lists where not seen yet
        (cloned ``cv_`` ids in one clone-list call, the others by id in the catalogue).

        The first id neither list has raises :func:`unknown_voice` naming ``fields[i]``.
        """
        return self._run(self._looked_up(voice_ids, fields))

    def _looked_up(self, voice_ids: Sequence[Any], fields: Sequence[str]) -> Plan[list[str]]:
        """:meth:`_require` as a plan."""
        wanted = {
            v
            for v in voice_ids
            if isinstance(v, str) and v.strip() and self._provider_of(v) is None
        }
        clones = sorted(v for v in wanted if v.startswith("cv_"))
        if clones:
            yield from self._list("voices.clones", ClonedVoice, {"voice_ids": clones}, None, 50)
        for preset_id in sorted(wanted - set(clones)):
            yield from self._list("voices.presets", PresetVoice, {"voice_id": preset_id}, 1, 50)
        # An error keeps the req_id of the lists it was looked up in (its hint names Python calls,
        # not REST paths, so the path stays out of its text).
        asked = self._transport.answered().get("req_id") if wanted else None
        providers = []
        for voice_id, field in zip(voice_ids, fields):
            provider = self._provider_of(voice_id) if isinstance(voice_id, str) else None
            if provider is None:
                raise unknown_voice(field, voice_id, req_id=asked)
            providers.append(provider)
        return providers

    def _remember(self, voice_id: str | None, provider: str | None) -> None:
        """Note a voice's provider (new clones are noted as they are made)."""
        if voice_id and provider:
            self._providers[voice_id] = provider

    provider_of = renamed("_provider_of")
    require = renamed("_require")
    remember = renamed("_remember")

    # ----------------------------------------------------------------- paging

    def _list(
        self, op: str, model: type[V], query: dict[str, Any], limit: int | None, page_size: int
    ) -> Plan[VoiceList[V]]:
        totals: list[int] = []
        records = yield from self._all_pages(op, _clean(query), page_size, limit, totals)
        voices = [self._seen(self._transport.read(model, r, op)) for r in records]
        return VoiceList(voices, totals[0] if totals else 0)

    def _page(
        self, op: str, model: type[V], page: int, page_size: int, filters: dict[str, Any]
    ) -> Plan[VoiceList[V]]:
        names = {"search": "search_name"}  # the friendly name of presets()'s filter
        query = {names.get(k, k): v for k, v in filters.items()}
        answer = yield from self._page_of(
            op, _clean({**query, "current_page": page, "page_size": page_size})
        )
        return VoiceList(
            [self._seen(self._transport.read(model, r, op)) for r in answer.records],
            answer.total or 0,
        )

    def _seen(self, voice: V) -> V:
        self._remember(voice.voice_id, voice.provider)
        return voice


def _clean(query: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in query.items() if v is not None and v != ""}


class AsyncVoicesResource(VoicesResource):
    """``client.voices`` of :class:`dubkit.AsyncClient`: the same lists, awaited, with the same
    filters (``**filters`` are :meth:`VoicesResource.presets`'s and :meth:`~VoicesResource.clones`'s).

    The sync methods build each query and hand its plan to ``_run``, which on the async
    client's transport gives an awaitable: awaiting them here keeps one query builder.
    """

    async def presets(self, **filters: Any) -> VoiceList[PresetVoice]:  # type: ignore[override]
        """Preset voices matching every filter given, all pages (``limit`` caps the count)."""
        return await cast(Awaitable[VoiceList[PresetVoice]], super().presets(**filters))

    async def clones(self, **filters: Any) -> VoiceList[ClonedVoice]:  # type: ignore[override]
        """This key's cloned voices, all pages."""
        return await cast(Awaitable[VoiceList[ClonedVoice]], super().clones(**filters))

    async def presets_page(  # type: ignore[override]
        self, page: int = 1, page_size: int = 10, **filters: Any
    ) -> VoiceList[PresetVoice]:
        """One page of presets; ``total`` counts every match."""
        made = super().presets_page(page, page_size, **filters)
        return await cast(Awaitable[VoiceList[PresetVoice]], made)

    async def preset(self, voice: VoiceLike) -> PresetVoice:  # type: ignore[override]
        """The preset ``voice``, or a ValidationError naming ``voice``."""
        return await self._arun(self._preset(voice))

    async def rename(self, voice: VoiceLike, name: str) -> None:  # type: ignore[override]
        """Give a cloned voice a new display name."""
        await cast(Awaitable[None], super().rename(voice, name))

    async def delete(self, voice: VoiceLike) -> None:  # type: ignore[override]
        """Delete a cloned voice: it leaves lists and TTS."""
        await self._arun(self._delete(voice))
