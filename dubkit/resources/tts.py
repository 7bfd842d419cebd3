"""Text to speech: ``client.tts``.

>>> line = client.tts.speak("Hello there!", "sv_s1_en_us_clear_f")      # one line, a player
>>> speech = client.tts.create(["Hi", {"text": "Bye", "emo_prompt": "sad"}],
...                            voice="sv_s1_en_us_clear_f", output_format="wav")
>>> client.tts.batch(thousand_lines, voice="sv_s1_en_us_clear_f")       # any number of lines
>>> task = client.tts.create_async(["Later"], voice="sv_s1_en_us_clear_f")   # a Task
>>> client.tts.audition("Welcome aboard!", ["sv_…", "sv_…", "cv_…"])   # side by side

A line is a string or a dict of the request line's fields (:class:`dubkit.schema.TTSLine`:
``text``, ``voice_id``, ``emo_prompt``, ``duration``, ...; wire camelCase works too). Keyword
options of the same names apply to every line that does not set its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._transport import Transport
from .._transport.plans import Call, Offload, Plan
from .._util.deprecation import renamed_keywords
from .._wire import checked, python_names, wire_name
from ..errors import DubkitError, ValidationError
from ..results import Audition, Speech, SpeechLine, Task
from ..results._lines import lined_up
from ..results.voices import VoiceLike, voice_id_of
from ..schema import (
    MAX_LINES,
    SpeechContext,
    TTSAsyncRequest,
    TTSLine,
    TTSRequest,
    TTSResult,
    TTSResultItem,
    prices,
)
from ..schema.prices import Quote
from ._base import (
    CastLike,
    Resource,
    as_list,
    cast_lines,
    chunk_failure,
    chunked,
    run_chunks,
    texts_of,
)
from .materials import MaterialsResource
from .voices import VoicesResource

Lines = str | Sequence[str | Mapping[str, Any]]  # a plain string is one line
# voice, locale, output_format, trim and the line options, as a create's plan takes them
_Options = tuple[Any, "str | None", "str | None", "bool | None", Mapping[str, Any]]
LINE_OPTIONS = tuple(name for name in TTSLine.model_fields if name != "text")
_RECORDINGS = ("timbre_ref_audio", "emo_ref_audio")  # may be local files, uploaded first


class TTSResource(Resource):
    """``client.tts``: ≤ 50 lines a call with :meth:`create`, any number with :meth:`batch`."""

    def __init__(
        self, transport: Transport, voices: VoicesResource, materials: MaterialsResource
    ) -> None:
        super().__init__(transport)
        self._voices, self._materials = voices, materials

    @renamed_keywords(language="locale")
    def create(
        self,
        lines: Lines | Mapping[str, Any],
        *,
        voice: VoiceLike | None = None,
        cast: CastLike | None = None,
        locale: str | None = None,
        output_format: str | None = None,
        trim: bool | None = None,
        idempotency_key: str | None = None,
        **line_options: Any,
    ) -> Speech:
        """Speak up to 50 lines of one provider and wait for the audio.

        ``voice`` is every line's voice unless it names its own (an id or a voice record);
        with ``cast`` (a :class:`dubkit.Cast`), each line names a role instead (``"ALICE: Hi!"``
        or ``{"role": "Alice", "text": "Hi!"}``) and speaks with that role's voice in ``locale``;
        ``locale`` the locale to speak (``language.target``);
        ``output_format`` wav, mp3 or m4a (the service's default); ``trim`` strips silence.
        A raw wire body dict (with ``data``) is accepted as the first argument.
        """
        return self._run(
            self._create(
                *self._create_args(
                    lines,
                    voice=voice,
                    cast=cast,
                    locale=locale,
                    output_format=output_format,
                    trim=trim,
                    idempotency_key=idempotency_key,
                    **line_options,
                )
            )
        )

    @renamed_keywords(language="locale")
    def _create_args(
        self,
        lines: Lines | Mapping[str, Any],
        *,
        voice: VoiceLike | None = None,
        cast: CastLike | None = None,
        locale: str | None = None,
        output_format: str | None = None,
        trim: bool | None = None,
        idempotency_key: str | None = None,
        **line_options: Any,
    ) -> tuple[Any, _Options, str | None]:
        """:meth:`create`'s arguments as its plan takes them (:meth:`speak` passes its own)."""
        lines = cast_lines(lines, cast, voice, locale)
        return lines, (voice, locale, output_format, trim, line_options), idempotency_key

    def _create(
        self, lines: Any, options: _Options, idempotency_key: str | None = None
    ) -> Plan[Speech]:
        voice, locale, output_format, trim, line_options = options
        body = yield from self._request(
            TTSRequest, lines, voice, locale, output_format, trim, line_options
        )
        data = yield Call("tts.create", body, idempotency_key=idempotency_key)
        # made off the event loop for the async client: the first clips are fetched with it
        speech: Speech = yield Offload(
            Speech.from_task, (self._transport.blocking, data, SpeechContext.of(body))
        )
        return speech

    def quote(
        self,
        lines: Lines | Mapping[str, Any],
        *,
        cast: CastLike | None = None,
        locale: str | None = None,
    ) -> Quote:
        """What speaking ``lines`` (any number, as :meth:`create` or :meth:`batch` take them)
        will cost, from the published prices; nothing is sent. A request is billed by all its
        lines' characters together; past 50 lines, each chunk of 50 is a request of its own.

        >>> client.tts.quote(["Hello there.", "A second line."])
        <Quote 2 credits (estimate): text to speech, 2 lines, 26 characters: ...>
        """
        lines = cast_lines(lines, cast, None, locale)  # "ROLE: text" is billed for its text
        return prices.speech_quote(chunked(texts_of(lines, "data"), MAX_LINES))

    def speak(self, text: str, voice: VoiceLike, **options: Any) -> SpeechLine:
        """The one-liner: one text, one voice, one :class:`SpeechLine` (with a player).

        Raises :class:`DubkitError` with the service's reason if the line was not spoken.
        """
        return self._run(self._speak(text, voice, options))

    def _speak(self, text: str, voice: VoiceLike, options: dict[str, Any]) -> Plan[SpeechLine]:
        lines, chosen, idempotency_key = self._create_args([text], voice=voice, **options)
        line = (yield from self._create(lines, chosen, idempotency_key))[0]
        if not line.ok:
            raise DubkitError(
                f"the line was not spoken: {line.error_message}", **self._transport.answered()
            )
        return line

    @renamed_keywords(language="locale")
    def create_async(
        self,
        lines: Lines | Mapping[str, Any],
        *,
        voice: VoiceLike | None = None,
        cast: CastLike | None = None,
        locale: str | None = None,
        output_format: str | None = None,
        trim: bool | None = None,
        extra_data: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        **line_options: Any,
    ) -> Task:
        """Like :meth:`create` but returns a :class:`Task` at once (webhook ``openapi-tts``)."""
        lines = cast_lines(lines, cast, voice, locale)
        options = (voice, locale, output_format, trim, line_options)
        return self._run(self._create_async(lines, options, extra_data, idempotency_key))

    def _create_async(
        self,
        lines: Any,
        options: _Options,
        extra_data: Mapping[str, Any] | None,
        idempotency_key: str | None,
    ) -> Plan[Task]:
        voice, locale, output_format, trim, line_options = options
        body = yield from self._request(
            TTSAsyncRequest, lines, voice, locale, output_format, trim, line_options
        )
        task: Task = yield from self._start(
            "tts.create_async", body, extra_data=extra_data, idempotency_key=idempotency_key
        )
        return task

    @renamed_keywords(language="locale")
    def batch(
        self,
        lines: Lines,
        *,
        voice: VoiceLike | None = None,
        cast: CastLike | None = None,
        locale: str | None = None,
        output_format: str | None = None,
        trim: bool | None = None,
        concurrency: int = 4,
        progress: bool = True,
        **line_options: Any,
    ) -> Speech:
        """Speak any number of lines: split by provider, chunks of 50, sent concurrently.

        Each chunk is a request, billed by its own characters (2 credits per started 200):
        the chunks add up to a little more than one request of all the lines would cost, and
        :meth:`quote` counts them so (in the lines' order, as when they share a provider).

        Results keep the input order. Every line is checked before the first request; a
        request that still fails (e.g. 402) marks its lines failed in ``errors`` instead of
        losing the chunks that succeeded (see :func:`~dubkit.resources._base.run_chunks`).
        """
        lines = cast_lines(lines, cast, voice, locale)
        options = (voice, locale, output_format, trim, line_options)
        return self._run(self._batch(lines, options, concurrency, progress))

    def _batch(
        self, lines: Any, options: _Options, concurrency: int, progress: bool
    ) -> Plan[Speech]:
        voice, locale, output_format, trim, line_options = options
        items = [self._line(line, voice, line_options, i) for i, line in enumerate(as_list(lines))]
        if not items:
            raise ValidationError("data", "at least one line is required")
        voiced = [i for i, item in enumerate(items) if item.get("voice_id")]
        found = yield from self._voices._looked_up(
            [items[i]["voice_id"] for i in voiced], [f"data[{i}].voiceId" for i in voiced]
        )
        providers = dict(zip(voiced, found))
        groups: dict[str, list[int]] = {}
        for i in range(len(items)):
            groups.setdefault(providers.get(i, "timbre"), []).append(i)
        jobs: list[tuple[Sequence[int], TTSRequest]] = []
        for group in groups.values():
            for indices in chunked(group, MAX_LINES):
                chunk = [items[i] for i in indices]
                body = yield from self._request(
                    TTSRequest, chunk, None, locale, output_format, trim, {}, offsets=indices
                )
                jobs.append((indices, body))

        def send(job: tuple[Sequence[int], TTSRequest]) -> Plan[TTSResult]:
            data = yield Call("tts.create", job[1])
            return self._transport.read(TTSResult, data)

        def failed(job: tuple[Sequence[int], TTSRequest], exc: DubkitError) -> TTSResult:
            return TTSResult(
                results=[TTSResultItem(error_message=chunk_failure(exc))] * len(job[0])
            )

        answers = yield from run_chunks(
            jobs,
            send,
            concurrency=concurrency,
            progress=progress,
            description="speaking",
            weight=lambda job: len(job[0]),
            on_error=failed,
        )
        ordered: list[TTSResultItem] = [TTSResultItem()] * len(items)
        for (indices, _), answer in zip(jobs, answers):  # each chunk lined up with its own lines
            lined = lined_up(answer.results, len(indices), _not_answered, "results")
            for i, item in zip(indices, lined):
                ordered[i] = item
        merged = TTSResult(results=ordered)
        speech: Speech = yield Offload(  # off the event loop: the first clips are fetched
            Speech.from_results,
            (
                self._transport.blocking,
                [merged],
                [item.get("text") for item in items],
                [item.get("voice_id") for item in items],
            ),
        )
        speech.task_ids = [a.task_id for a in answers if a.task_id]
        return speech

    @renamed_keywords(voice_ids="voices")
    def audition(self, text: str, voices: Sequence[VoiceLike], **options: Any) -> Audition:
        """Say ``text`` with each voice (ids or voice records) and show them side by side (any
        providers mixed)."""
        return self._run(self._audition(text, voices, options))

    def _audition(
        self, text: str, voices: Sequence[VoiceLike], options: dict[str, Any]
    ) -> Plan[Audition]:
        voice_ids = [voice_id_of(v) for v in as_list(voices)]
        # Checked here so an unknown id is named as the caller passed it (voices[i]).
        fields = [f"voices[{i}]" for i in range(len(voice_ids))]
        yield from self._voices._looked_up(voice_ids, fields)
        lines = [{"text": text, "voice_id": v} for v in voice_ids]
        chosen = (
            None,
            options.pop("locale", None),
            options.pop("output_format", None),
            options.pop("trim", None),
            options,
        )
        speech = yield from self._batch(lines, chosen, options.pop("concurrency", 4), False)
        return Audition(text, voice_ids, speech)

    # ----------------------------------------------------------------- building requests

    def _line(
        self, line: Any, voice: VoiceLike | None, options: Mapping[str, Any], index: int
    ) -> dict[str, Any]:
        """A line as a dict of Python field names, with the call's defaults filled in."""
        unknown = set(options) - set(LINE_OPTIONS)
        if unknown:
            raise ValidationError(
                sorted(unknown)[0],
                f"not an option of client.tts; line options are {', '.join(LINE_OPTIONS)}",
            )
        if not isinstance(line, (str, Mapping)):
            raise ValidationError(
                f"data[{index}]", f"a line is a string or a dict, got {type(line).__name__}"
            )
        item = {"text": line} if isinstance(line, str) else python_names(TTSLine, line)
        default_voice = voice_id_of(voice) if voice is not None else None
        for name, value in {"voice_id": default_voice, **options}.items():
            if value is None or item.get(name) is not None:
                continue
            if name == "voice_id" and item.get("timbre_ref_audio"):
                continue  # a timbre reference is this line's voice
            item[name] = value
        return item

    def _request(
        self,
        model: type[TTSRequest],
        lines: Any,
        voice: VoiceLike | None,
        locale: str | None,
        output_format: str | None,
        trim: bool | None,
        options: Mapping[str, Any],
        offsets: Sequence[int] | None = None,
    ) -> Plan[TTSRequest]:
        if isinstance(lines, Mapping):  # a raw wire body
            body = checked(model, lines)
            yield from self._check_voices(body, offsets)
            return body
        items = [self._line(line, voice, options, i) for i, line in enumerate(as_list(lines))]
        if len(items) > MAX_LINES:
            raise ValidationError(
                "data",
                f"at most {MAX_LINES} lines per request, got "
                f"{len(items)}; client.tts.batch() speaks any "
                f"number of lines in concurrent chunks of "
                f"{MAX_LINES}",
            )
        # Local recordings become materials, but only once everything else is known good:
        # validate with a stand-in URL first, so bad input never costs an upload.
        local = {
            (i, name): item[name]
            for i, item in enumerate(items)
            for name in _RECORDINGS
            if item.get(name) and not str(item[name]).startswith(("http://", "https://"))
        }
        for i, name in local:
            items[i][name] = "https://local.file.invalid/reference"
        request = {
            "data": items,
            "output_format": output_format,
            "trim": trim,
            "language": {"target": locale} if locale else None,
        }
        try:
            body = checked(model, {k: v for k, v in request.items() if v is not None})
        except ValidationError as exc:
            raise _renumbered(exc, offsets) from None
        yield from self._check_voices(body, offsets)
        for (i, name), path in local.items():
            # an upload: off the event loop for the async client
            url = yield Offload(self._materials._audio_url, (path, wire_name(TTSLine, name)))
            setattr(body.data[i], name, url)
        return body

    def _check_voices(self, body: TTSRequest, offsets: Sequence[int] | None) -> Plan[None]:
        """What the client can tell before sending: voices exist, one provider, timbre rules.

        Voices not seen yet are looked up in the service's own lists (once, then remembered),
        so no id the service would accept is refused and no create is sent for one it would not.
        """

        def name(i: int) -> str:
            return f"data[{offsets[i] if offsets else i}]"

        voiced = [i for i, line in enumerate(body.data) if line.voice_id]
        found = yield from self._voices._looked_up(
            [body.data[i].voice_id for i in voiced], [f"{name(i)}.voiceId" for i in voiced]
        )
        providers: dict[str, int] = {}
        for i, provider in zip(voiced, found):
            providers.setdefault(provider, i)
        if len(providers) > 1:
            (first, i), (second, j) = list(providers.items())[:2]
            raise ValidationError(
                f"{name(j)}.voiceId",
                f"all lines of one request must share one provider, but "
                f"{name(i)} is {first} and {name(j)} is {second}; "
                f"client.tts.batch() splits providers into separate "
                f"requests",
            )
        system = next(((p, i) for p, i in providers.items() if p.startswith("S")), None)
        if system:
            for i, line in enumerate(body.data):
                if line.timbre_ref_audio:
                    raise ValidationError(
                        f"{name(i)}.timbreRefAudio",
                        f"needs a cloned voice (provider V1-V5), but {name(system[1])}.voiceId "
                        f"{body.data[system[1]].voice_id!r} is a preset voice ({system[0]})",
                    )


def _renumbered(exc: ValidationError, offsets: Sequence[int] | None) -> ValidationError:
    """Name a chunk's line by its index in the caller's whole list."""
    if not offsets or not exc.field.startswith("data["):
        return exc
    local = int(exc.field[5 : exc.field.index("]")])
    return ValidationError(
        f"data[{offsets[local]}]" + exc.field[exc.field.index("]") + 1 :], exc.problem
    )


def _not_answered(why: str) -> TTSResultItem:
    return TTSResultItem(error_message=why)


class AsyncTTSResource(TTSResource):
    """``client.tts`` of :class:`dubkit.AsyncClient`: the same calls, awaited; the same
    checks before the network and the same :class:`Speech` results (made off the loop).

    >>> speech = await client.tts.create(["Hello there!"], voice="sv_s1_en_us_clear_f")
    >>> speech = await client.tts.batch(thousand_lines, voice="sv_…", concurrency=8)
    """

    @renamed_keywords(language="locale")
    async def create(  # type: ignore[override]
        self,
        lines: Lines | Mapping[str, Any],
        *,
        voice: VoiceLike | None = None,
        cast: CastLike | None = None,
        locale: str | None = None,
        output_format: str | None = None,
        trim: bool | None = None,
        idempotency_key: str | None = None,
        **line_options: Any,
    ) -> Speech:
        """Speak up to 50 lines of one provider (see :meth:`TTSResource.create`)."""
        args = self._create_args(
            lines,
            voice=voice,
            cast=cast,
            locale=locale,
            output_format=output_format,
            trim=trim,
            idempotency_key=idempotency_key,
            **line_options,
        )
        return await self._arun(self._create(*args))

    async def speak(self, text: str, voice: VoiceLike, **options: Any) -> SpeechLine:  # type: ignore[override]
        """One text, one voice, one :class:`SpeechLine` (see :meth:`TTSResource.speak`)."""
        return await self._arun(self._speak(text, voice, options))

    @renamed_keywords(language="locale")
    async def create_async(  # type: ignore[override]
        self,
        lines: Lines | Mapping[str, Any],
        *,
        voice: VoiceLike | None = None,
        cast: CastLike | None = None,
        locale: str | None = None,
        output_format: str | None = None,
        trim: bool | None = None,
        extra_data: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        **line_options: Any,
    ) -> Task:
        """An :class:`~dubkit.results.AsyncTask` at once (see :meth:`TTSResource.create_async`)."""
        lines = cast_lines(lines, cast, voice, locale)
        options = (voice, locale, output_format, trim, line_options)
        plan = self._create_async(lines, options, extra_data, idempotency_key)
        return await self._arun(plan)

    @renamed_keywords(language="locale")
    async def batch(  # type: ignore[override]
        self,
        lines: Lines,
        *,
        voice: VoiceLike | None = None,
        cast: CastLike | None = None,
        locale: str | None = None,
        output_format: str | None = None,
        trim: bool | None = None,
        concurrency: int = 4,
        progress: bool = True,
        **line_options: Any,
    ) -> Speech:
        """Any number of lines, ``concurrency`` requests at a time on the event loop (see
        :meth:`TTSResource.batch`)."""
        lines = cast_lines(lines, cast, voice, locale)
        options = (voice, locale, output_format, trim, line_options)
        return await self._arun(self._batch(lines, options, concurrency, progress))

    @renamed_keywords(voice_ids="voices")
    async def audition(  # type: ignore[override]
        self, text: str, voices: Sequence[VoiceLike], **options: Any
    ) -> Audition:
        """``text`` in each voice, side by side (see :meth:`TTSResource.audition`)."""
        return await self._arun(self._audition(text, voices, options))
