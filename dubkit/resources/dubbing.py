"""Dubbing (the service's media translation: translate and dub a video or audio):
``client.dubbing``.

>>> task = client.dubbing.create("talk.mp4", target="fr-FR")         # uploads, then dubs
>>> dubkit.monitor(task)                              # a cell that refreshes until it ends
>>> dub = task.wait().result
>>> dub.video.url, dub.subtitles.srt                 # the dubbed mp4 and its subtitles
>>> dub.script.to_frame()                            # start, end, speaker, source, translation
>>> dub                                              # original and dub side by side, per-line players

Options are keyword arguments named after the wire fields (``clone_mode`` is
``options.voiceClone.mode``, ``speaker_num`` is ``options.voiceSpeakers.speakerNum``...);
``options={...}`` is sent as is on top of them, for anything dubkit does not name.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypedDict, Union

from typing_extensions import Unpack

from .._transport import Transport
from .._util.deprecation import renamed, renamed_keywords
from .._util.urls import is_web_url
from .._wire import checked, python_names
from ..errors import ValidationError
from ..results import DubbingResult, Material, Redub, Task
from ..results.voices import VoiceLike, voice_id_of
from ..schema import DubbingContext, MediaOptions, MediaTranslationRequest, prices
from ..schema.prices import Quote
from ._base import CastLike, Offloaded, Resource, offloaded, offloaded_task
from .materials import MaterialsResource
from .redub import Pronouncing, redub
from .tts import TTSResource
from .voices import VoicesResource

MaterialLike = Union[Material, str, "os.PathLike[str]"]  # a Material, its id, or a local file


class DubOptions(TypedDict, total=False):
    """A dub's options: the keywords :meth:`DubbingResource.create`, ``draft`` and ``batch``
    take besides the material and the target, named after the wire fields (``clone_mode`` is
    ``options.voiceClone.mode``...); ``options`` is sent as is on top of them."""

    source: str  # the source locale, or "auto" (the default)
    task_type: Literal["vt", "at"] | None
    clone_mode: Literal["role", "mix", "sentence"] | None
    clone_style: Literal["emotional", "consistent"] | None
    clone_provider: str | None
    speaker_num: int | Literal["auto"] | None
    timbre_method: Literal["clone", "smart"] | None
    voices: Sequence[VoiceLike | Mapping[str, Any]] | None
    cast: CastLike | None
    speakers: Mapping[int, str] | None
    separation_mode: str | None
    dynamic_video_length: bool | None
    lipsync: bool | None
    text: Mapping[str, Any] | None
    translate_mode: Literal["default", "machine"] | None
    translate_prompt: str | None
    transcribe_mode: Literal["fast", "normal"] | None
    options: Mapping[str, Any] | None
    output: Mapping[str, Any] | None


class BatchOptions(DubOptions, total=False):
    """``DubbingResource.batch``'s keywords: a dub's options and how the batch runs."""

    ledger: str | os.PathLike[str] | None
    name: str | None
    budget: float | None
    over_budget: Literal["raise", "skip"]
    max_in_flight: int
    retries: int
    strict_locales: bool
    start: bool


BATCH_SETTINGS = BatchOptions.__optional_keys__ - DubOptions.__optional_keys__


@dataclass(frozen=True)
class DubDraft:
    """A dub's request, checked, that waits only for its material (``DubbingResource.draft``).

    ``options`` is the ``options`` object in Python names; ``task_type`` None follows the
    material (``vt`` for a video, ``at`` for audio)."""

    source: str
    target: str
    task_type: str | None
    options: dict[str, Any]
    # the customer's bucket settings may hold its credentials: never in a repr
    output: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def lipsync(self) -> bool:
        asked = self.options.get("lipsync") or {}
        return bool(asked.get("enable")) if isinstance(asked, Mapping) else False

    def request(
        self, material_id: str | None, category: str | None = None, *, source_url: str | None = None
    ) -> MediaTranslationRequest:
        """The request for a material, or for the file at ``source_url``. A URL's category is
        unknown until the service fetches it: ``at``, which a video runs as ``vt``."""
        kind = self.task_type or ("vt" if category == "video" else "at")
        source = {"source_url": source_url} if source_url else {"material_id": material_id}
        return checked(
            MediaTranslationRequest,
            {
                "task_type": kind,
                "source": source,
                "language": {"source": self.source, "target": self.target},
                "options": self.options,
                **({"output": self.output} if self.output is not None else {}),
            },
        )


class DubbingResource(Resource):
    """``client.dubbing``: dub registered materials into another language (async; results by
    poll or webhook), and re-dub edited lines here."""

    def __init__(
        self,
        transport: Transport,
        voices: VoicesResource,
        materials: MaterialsResource,
        tts: TTSResource,
        *,
        batches: Callable[..., Any] | None = None,
    ) -> None:
        super().__init__(transport)
        self._voices, self._materials, self._tts = voices, materials, tts
        self._batches = batches  # the Client's batch runner (dubkit.batch sits above resources)

    def batch(
        self,
        files: Any,
        *,
        targets: str | Sequence[str],
        out: str | os.PathLike[str],
        **options: Unpack[BatchOptions],
    ) -> Any:
        """Dub many files into several locales as one :class:`dubkit.batch.DubbingBatch`
        that survives any crash and never pays twice.

        ``files``: paths, a glob, a folder, or registered materials (one upload per distinct
        file, by content). ``targets``: locales from the service's list (``strict_locales``).
        Results go to ``out/<locale>/<file stem>.<ext>`` with their subtitles; an earlier
        result there is never overwritten. The ledger (``out/dubkit-batch.sqlite3``, or
        ``ledger="postgresql://…"`` shared by several processes or hosts, rows of batch
        ``name``) writes down every paid step before and after it is sent, so the same call
        run again after a restart, Ctrl-C or ``kill -9`` reuses every material and task and
        creates nothing twice; a changed option, voice or cast makes a new revision of only
        the rows it touches. Every row is quoted first; ``budget`` refuses (``over_budget=
        "raise"``, before any upload) or leaves unstarted (``"skip"``) the rows it cannot
        cover. At most ``max_in_flight`` tasks run at once; a transient failure is tried again
        ``retries`` times; ``start=False`` plans and quotes only. The other options are
        :meth:`create`'s (``cast=``, ``speakers=``, ``voices=``, ``lipsync=``...). Everything
        is checked before anything is uploaded: a missing file, an unknown locale, a cast
        lacking a role's voice in one target.

        >>> course = client.dubbing.batch("lessons/", targets=["fr-FR", "de-DE"], out="dubs")
        >>> course.wait().to_frame()
        """
        if self._batches is None:
            raise ValidationError("batch", "batches run through a Client: client.dubbing.batch")
        return self._batches(files, targets=targets, out=out, **options)

    def redub(
        self,
        result: DubbingResult,
        folder: str | os.PathLike[str] | None = None,
        *,
        audio_format: str = "m4a",
        progress: bool = True,
        cast: Pronouncing | None = None,
    ) -> Redub:
        """Re-dub the lines of ``result`` edited since it was made (``result.edit(...)``,
        ``result.edit_from_subtitles(...)`` or changing ``result.script[i]``), and render the
        dub again on this machine. With ``cast``, names are said as its pronunciations spell
        them (the subtitles keep the translation as written).

        Only the edited lines cost TTS; the rest keep the service's audio. Every edit is
        checked first (a line that does not exist, an unknown voice, an end before its start,
        a slot shorter than a syllable: a ValidationError naming the line and field). Files
        go to ``folder`` (a new temporary folder by default).

        >>> dub.edit("2", translation="Bonjour à tous !")
        >>> again = client.dubbing.redub(dub, "redub")
        >>> dubkit.compare(dub, again)
        """
        return redub(
            self._transport,
            self._tts,
            self._voices,
            result,
            folder,
            audio_format=audio_format,
            progress=progress,
            cast=cast,
        )

    @renamed_keywords(selected_voices="voices")
    def create(
        self,
        material: MaterialLike,
        *,
        target: str,
        max_minutes: float | None = None,
        extra_data: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        **options: Unpack[DubOptions],
    ) -> Task:
        """Start dubbing ``material`` into ``target``; returns the running :class:`Task`.

        ``material`` is a registered :class:`~dubkit.resources.materials.Material`, its id,
        a local file, which is uploaded first, or the http(s) URL of a file the service
        fetches (``source.sourceUrl``: nothing is uploaded; its length is known only once it
        is fetched, so with a budget give ``max_minutes``, the longest it may be, which the
        budget reserves). ``task_type`` defaults to the material's
        category (``vt`` for video, ``at`` for audio). ``voices`` are the voices of speakers
        1, 2, ...: ids, voice records, or ``{"voiceId", "provider"}``; or, with a ``cast``,
        ``speakers`` maps them to roles (``{1: "Alice", 2: "Bob"}``), each spoken by its role's
        voice in ``target``: episode 2 is dubbed with episode 1's voices; ``text`` is ``options.text``, whose content the interface
        leaves to the product (the sandbox reads ``burn``, ``soft`` and ``style``, e.g.
        ``{"burn": True, "style": {"size": 28, "position": "top"}}``).
        Everything is checked before the request is sent, and before a local file is
        uploaded: a voice the key's preset or clone library does not have is a
        ValidationError naming ``voices[i]``; an unregistered or deleted material is refused
        here, before any credit is spent.

        >>> task = client.dubbing.create(material, target="de-DE", speaker_num=2,
        ...                              timbre_method="smart", text={"burn": True})
        """
        draft = self.draft(target=target, **options)
        url = _source_url(material)
        if url is not None:
            return self._start_from_url(draft, url, max_minutes, extra_data, idempotency_key)
        # Bad options, unknown voices and a dub over the budget never cost an upload.
        if self._transport.budget is not None and _is_local_file(material):
            self._transport.budget.check(self.quote(material, lipsync=draft.lipsync))
        return self.start(
            draft, self._material(material), extra_data=extra_data, idempotency_key=idempotency_key
        )

    def draft(self, *, target: str, **options: Unpack[DubOptions]) -> DubDraft:
        """A dub's request checked whole, waiting only for its material: the options of
        :meth:`create`, with every voice looked up; nothing is uploaded or charged.

        >>> draft = client.dubbing.draft(target="fr-FR", cast=cast, speakers={1: "Host"})
        >>> task = client.dubbing.start(draft, material)
        """
        if not isinstance(target, str) or not target.strip():
            raise ValidationError(
                "language.target", "is required: the locale to dub into, e.g. 'fr-FR'"
            )
        unknown = sorted(set(options) - DubOptions.__optional_keys__)
        if unknown:
            raise TypeError(f"dubbing options have no {', '.join(map(repr, unknown))}")
        voices = _cast_voices(
            options.get("voices"), options.get("cast"), options.get("speakers"), target
        )
        given: dict[str, Any] = {**options, "voices": voices}
        if options.get("speakers") and options.get("speaker_num") is None:
            given["speaker_num"] = len(options["speakers"] or {})  # the roles say how many
        raw = options.get("options")
        wire_options = _merge(_options(given), python_names(MediaOptions, raw or {}))
        made = DubDraft(
            options.get("source", "auto"),
            target,
            options.get("task_type"),
            wire_options,
            _output(options.get("output")),
        )
        self._check_voices(made.request("not-uploaded-yet"), raw=_chooses_voices(raw))
        return made

    def _start_from_url(
        self,
        draft: DubDraft,
        url: str,
        max_minutes: float | None,
        extra_data: Mapping[str, Any] | None,
        idempotency_key: str | None,
    ) -> Task:
        """Send a :meth:`draft` for the file at ``url``, priced (for a budget) at
        ``max_minutes``."""
        if self._transport.budget is not None and max_minutes is None:
            raise ValidationError("max_minutes", _URL_UNPRICED)
        body = draft.request(None, source_url=url)
        worst = _worst_case.set(None if max_minutes is None else _minutes(max_minutes) * 60)
        try:
            context = DubbingContext(draft.source, draft.target)
            return self._send(body, context, extra_data, idempotency_key)
        finally:
            _worst_case.reset(worst)

    def start(
        self,
        draft: DubDraft,
        material: Material,
        *,
        extra_data: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Task:
        """Send a :meth:`draft` for a registered ``material``; the running :class:`Task`."""
        self._materials._require_registered(material)
        body = draft.request(material.material_id or "", material.category)
        context = DubbingContext(draft.source, draft.target, material)
        return self._send(body, context, extra_data, idempotency_key)

    def _send(
        self,
        body: MediaTranslationRequest,
        context: DubbingContext,
        extra_data: Mapping[str, Any] | None,
        idempotency_key: str | None,
    ) -> Task:
        """Send a dub's request; the running :class:`Task` holding its ``context``."""
        return self._run(
            self._start(
                "media.create_async",
                body,
                extra_data=extra_data,
                idempotency_key=idempotency_key,
                context=context,
            )
        )

    translate = renamed("create")

    def quote(
        self, material: MaterialLike, *, lipsync: bool = False, max_minutes: float | None = None
    ) -> Quote:
        """What dubbing ``material`` (a Material, its id, or a local file, which is measured
        here, not uploaded) will cost, with or without lip sync; nothing is sent. A URL's
        length is known once the service has fetched it: its quote is for ``max_minutes``
        (the most it may cost), or for one minute, the least, and says so."""
        url = _source_url(material)
        if url is not None:
            most = None if max_minutes is None else _minutes(max_minutes)
            quote = prices.dub_quote((most or 1) * 60, lipsync=lipsync)
            basis = (
                f"at most {most:g} minutes (max_minutes)"
                if most is not None
                else "at least: one minute; pass max_minutes= for the most it may cost"
            )
            known = "a file fetched from a URL, whose length is known once the service fetched it"
            return replace(quote, basis=f"{known}: {basis}", estimate=True)
        seconds, video = self.material_facts(material)
        return prices.dub_quote(seconds, lipsync=lipsync and video)

    def material_facts(self, material: MaterialLike) -> tuple[float, bool]:
        """``(seconds, is video)`` of a material, or of a local file measured here.

        A material whose length the service has not given cannot be priced: a ValidationError
        says so rather than a quote that could hide most of the cost."""
        if _source_url(material) is not None:  # priced at the most the caller allows
            worst = _worst_case.get()
            if worst is None:
                raise ValidationError("max_minutes", _URL_UNPRICED)
            return worst, True
        if _is_local_file(material):
            from ..media.av import probe  # numpy and ffmpeg load on the first local file

            info = probe(material)  # type: ignore[arg-type]
            return info.duration, info.has_video
        chosen = material if isinstance(material, Material) else self._materials._known(material)  # type: ignore[arg-type]
        if chosen.duration_seconds is None:
            raise ValidationError(
                "source.materialId",
                f"{chosen.material_id!r} has no duration yet, so its dub cannot be priced "
                "(60 credits per minute of it); try again once the service has measured it",
            )
        return chosen.duration_seconds, chosen.category == "video"

    def _check_voices(self, body: MediaTranslationRequest, *, raw: bool) -> None:
        """Every chosen voice exists for this key (looked up in the service's own lists), with
        the provider the lists give it. ``raw``: the list came in ``options=``, so the fields
        are named as on the wire."""
        speakers = body.options.voice_speakers if body.options else None
        slots = (
            [
                (i, v)
                for i, v in enumerate(speakers.selected_voices_list or [])
                if v.voice_id is not None
            ]
            if speakers
            else []
        )
        if not slots:
            return  # no voice chosen: the service picks them
        field = "options.voiceSpeakers.selectedVoicesList[{}]" if raw else "voices[{}]"
        providers = self._voices._require(
            [v.voice_id for _, v in slots],
            [field.format(i) + (".voiceId" if raw else "") for i, _ in slots],
        )
        for (i, voice), provider in zip(slots, providers):
            if voice.provider and voice.provider != provider:
                raise ValidationError(
                    f"{field.format(i)}.provider",
                    f"{voice.provider!r} is not the provider of "
                    f"{voice.voice_id!r}, which is {provider!r}; give the "
                    f"voice id alone, or with the provider "
                    f"client.voices.presets()/clones() list for it",
                )

    def _material(self, material: MaterialLike) -> Material:
        """The registered material; a local file (a path, or a string naming a file with an
        extension) is uploaded first."""
        if _is_local_file(material):
            material = self._materials.upload(material)  # type: ignore[arg-type]
        material_id = self._materials._require_registered(material)  # type: ignore[arg-type]
        if isinstance(material, Material):
            return material
        return self._materials.get(material_id)


class AsyncDubbingResource(Offloaded[DubbingResource]):
    """``client.dubbing`` of :class:`dubkit.AsyncClient`: :class:`DubbingResource`'s calls,
    awaited. A dub's upload, probe and voice checks run off the loop (see
    :class:`~dubkit.resources._base.Offloaded`); ``create`` and ``start`` give an
    :class:`~dubkit.results.AsyncTask`; ``batch`` gives the same
    :class:`~dubkit.batch.DubbingBatch` (its methods are the sync ones: run its ``wait`` with
    ``asyncio.to_thread``), ``redub`` the same :class:`~dubkit.results.Redub`.

    >>> task = await client.dubbing.create("talk.mp4", target="fr-FR")
    >>> dub = (await task.wait()).result
    """

    create = offloaded_task(DubbingResource.create)
    start = offloaded_task(DubbingResource.start)
    draft = offloaded(DubbingResource.draft)
    quote = offloaded(DubbingResource.quote)
    material_facts = offloaded(DubbingResource.material_facts)
    batch = offloaded(DubbingResource.batch)
    redub = offloaded(DubbingResource.redub)


# The longest a dub from a URL may be (seconds), as its caller said, while it is being sent:
# what the budget reserves for it (see DubbingResource._start_from_url).
_worst_case: ContextVar[float | None] = ContextVar("dubkit_dub_worst_case", default=None)
_URL_UNPRICED = (
    "a dub from a URL is priced once the service has fetched the file; with a budget, give "
    "max_minutes=, the longest it may be, which the budget reserves"
)


def _source_url(material: Any) -> str | None:
    """``material`` as a URL to dub (``source.sourceUrl``), None when it is no URL (a file, a
    material or its id); a URL of another scheme than http(s) is refused, naming the field."""
    if not isinstance(material, str) or "://" not in material:
        return None
    if not is_web_url(material):
        raise ValidationError(
            "source.sourceUrl", f"expected an http:// or https:// URL, got {material!r}"
        )
    return material.strip()


def _output(value: Any) -> dict[str, Any] | None:
    """``output``: the customer's bucket, an object whose fields the vendor's pages do not
    show (interface §8.2); so dubkit checks only that it is one, and sends it as given."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValidationError(
            "output", f"expected an object (a mapping), got {type(value).__name__}"
        )
    return dict(value)


def _minutes(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValidationError("max_minutes", f"expected a number of minutes > 0, got {value!r}")
    return float(value)


def _is_local_file(material: MaterialLike) -> bool:
    """A path, or a string naming a file or with an extension (a material id has none)."""
    return isinstance(material, os.PathLike) or (
        isinstance(material, str)
        and (os.path.isfile(material) or bool(os.path.splitext(material)[1]))
    )


def _options(given: Mapping[str, Any]) -> dict[str, Any]:
    """Typed keyword options -> the ``options`` object (``voice_clone`` always present)."""
    options: dict[str, Any] = {
        "voice_clone": _present(
            mode=given.get("clone_mode"),
            style=given.get("clone_style"),
            provider=given.get("clone_provider"),
        )
    }
    chosen = None
    if given.get("voices") is not None:
        chosen = [
            dict(v) if isinstance(v, Mapping) else {"voice_id": voice_id_of(v)}
            for v in given["voices"]
        ]
    number = given.get("speaker_num")
    speakers = _present(
        selected_voices_list=chosen,
        timbre_method=given.get("timbre_method"),
        speaker_num=None if number is None else str(number),
    )
    text = given.get("text")
    parts = {
        "voice_speakers": speakers,
        "separation": _present(mode=given.get("separation_mode")),
        "dynamic_video_length": _present(enable=given.get("dynamic_video_length")),
        "lipsync": _present(enable=given.get("lipsync")),
        "translate": _present(
            mode=given.get("translate_mode"), prompt=given.get("translate_prompt")
        ),
        "transcribe": _present(mode=given.get("transcribe_mode")),
        "text": dict(text) if text is not None else {},
    }
    options.update({name: value for name, value in parts.items() if value})
    return python_names(MediaOptions, options)


def _chooses_voices(options: Mapping[str, Any] | None) -> bool:
    """Whether raw ``options`` carry the voice list (it then replaces ``voices``)."""
    speakers = python_names(MediaOptions, options or {}).get("voice_speakers")
    return isinstance(speakers, Mapping) and "selected_voices_list" in speakers


def _present(**fields: Any) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


def _cast_voices(
    voices: Any, cast: CastLike | None, speakers: Mapping[int, str] | None, target: str
) -> Any:
    """``voices`` as given, or those of the roles ``speakers`` are mapped to in ``cast``."""
    if cast is None and speakers is None:
        return voices
    if cast is None or speakers is None:
        raise ValidationError("speakers", "a dub cast by roles needs both cast= and speakers=")
    if voices is not None:
        raise ValidationError("voices", "are given by the cast: pass voices= or cast=, not both")
    return cast.speaker_voices(speakers, target)


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` over ``base``, nested objects merged key by key."""
    out = dict(base)
    for name, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(name), dict):
            out[name] = _merge(out[name], value)
        else:
            out[name] = value
    return out
