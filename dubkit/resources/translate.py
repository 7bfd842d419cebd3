"""Text translation: ``client.translate``.

>>> t = client.translate.create(["Hello there", "General Kenobi"], source="en-US",
...                             target="fr-FR", glossary={"Kenobi": "Kenobi"})
>>> t.to_frame()                  # source | translation | error, side by side
>>> task = client.translate.create_async(["Hello"], source="en-US", target="de-DE")
>>> client.translate.batch(many_lines, source="en-US", target="es-ES")   # any number of lines
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._transport.plans import Call, Plan
from .._wire import checked, python_names
from ..errors import DubkitError, ValidationError
from ..results import Task, Translation
from ..results.translation import is_pseudo
from ..schema import (
    MAX_LINES,
    TranslateAsyncRequest,
    TranslateItem,
    TranslateOptions,
    TranslateRequest,
    TranslateResult,
    TranslationContext,
    prices,
)
from ..schema.prices import Quote
from ._base import Resource, as_list, chunk_failure, chunked, run_chunks, texts_of

Segments = str | Sequence[str | Mapping[str, Any]]  # a plain string is one segment


class TranslateResource(Resource):
    """``client.translate``: ≤ 50 segments per call, or :meth:`batch` for any number."""

    def create(
        self,
        segments: Segments | Mapping[str, Any],
        *,
        source: str | None = None,
        target: str | None = None,
        idempotency_key: str | None = None,
        **options: Any,
    ) -> Translation:
        """Translate up to 50 segments and wait for the answer.

        ``segments`` are strings or segment dicts (``text``, ``speaker``, ``start``/``end``,
        ``context``...). Options: ``glossary``, ``context_mode`` (independent, provided_only,
        neighbor), ``context_window`` (1-20), ``scene``, ``allow_stutter``, ``prompt``,
        ``skip_missing_translation_check``, or ``options={...}`` as on the wire. ``cast=``
        (a :class:`dubkit.Cast`) sends its terms for ``target`` as the ``glossary``. A raw
        wire body dict is accepted as the first argument.
        """
        return self._run(self._create(segments, source, target, idempotency_key, options))

    def _create(
        self,
        segments: Segments | Mapping[str, Any],
        source: str | None,
        target: str | None,
        idempotency_key: str | None,
        options: dict[str, Any],
    ) -> Plan[Translation]:
        body = self._request(TranslateRequest, segments, source, target, options)
        data = yield Call("translate.create", body, idempotency_key=idempotency_key)
        return Translation.from_task(self._transport, data, TranslationContext.of(body))

    def quote(self, segments: Segments | Mapping[str, Any]) -> Quote:
        """What translating ``segments`` (any number: :meth:`batch` sends 50 a request, each
        rounded up on its own) will cost, from the published prices; nothing is sent."""
        texts = texts_of(segments, "segments")
        return prices.translation_quote(chunked(texts, MAX_LINES))

    def create_async(
        self,
        segments: Segments | Mapping[str, Any],
        *,
        source: str | None = None,
        target: str | None = None,
        extra_data: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        **options: Any,
    ) -> Task:
        """Like :meth:`create`, but returns a :class:`Task` at once; results by webhook or poll."""
        body = self._request(TranslateAsyncRequest, segments, source, target, options)
        return self._run(
            self._start(
                "translate.create_async",
                body,
                extra_data=extra_data,
                idempotency_key=idempotency_key,
            )
        )

    def batch(
        self,
        segments: Segments,
        *,
        source: str,
        target: str,
        concurrency: int = 4,
        progress: bool = True,
        **options: Any,
    ) -> Translation:
        """Translate any number of segments: chunks of 50, sent concurrently, order kept.

        Every chunk is validated before the first is sent. Per-segment failures come back in
        ``errors``; so do the segments of a chunk whose request failed (e.g. 402), without
        losing the chunks that succeeded (see :func:`~dubkit.resources._base.run_chunks`).
        """
        return self._run(self._batch(segments, source, target, concurrency, progress, options))

    def _batch(
        self,
        segments: Segments,
        source: str,
        target: str,
        concurrency: int,
        progress: bool,
        options: dict[str, Any],
    ) -> Plan[Translation]:
        items = as_list(segments)
        bodies = [
            self._request(TranslateRequest, chunk, source, target, options, offset=i * MAX_LINES)
            for i, chunk in enumerate(chunked(items, MAX_LINES))
        ]

        def send(body: TranslateRequest) -> Plan[TranslateResult]:
            data = yield Call("translate.create", body)
            return self._transport.read(TranslateResult, data)

        def failed(body: TranslateRequest, exc: DubkitError) -> TranslateResult:
            return TranslateResult(
                items=[TranslateItem(error_message=chunk_failure(exc))] * len(body.segments)
            )

        results = yield from run_chunks(
            bodies,
            send,
            concurrency=concurrency,
            progress=progress,
            description="translating",
            weight=lambda b: len(b.segments),
            on_error=failed,
        )
        items = [  # each chunk's answer lined up with its own segments: nothing shifts
            item
            for body, result in zip(bodies, results)
            for item in Translation(result, [s.text for s in body.segments]).items
        ]
        merged = TranslateResult(task_id=None, items=items)
        return Translation(
            merged,
            [s.text for b in bodies for s in b.segments],
            pseudo=any(is_pseudo(r) for r in results),
        )

    def _request(
        self,
        model: type[TranslateRequest],
        segments: Any,
        source: str | None,
        target: str | None,
        options: dict[str, Any],
        offset: int = 0,
    ) -> TranslateRequest:
        if isinstance(segments, Mapping):  # a raw wire body
            return checked(model, segments)
        options = _with_glossary(dict(options), target)
        segments = [{"text": s} if isinstance(s, str) else dict(s) for s in as_list(segments)]
        if len(segments) > MAX_LINES:
            raise ValidationError(
                "segments",
                f"at most {MAX_LINES} per request, got "
                f"{len(segments)}; client.translate.batch() "
                f"sends any number in concurrent chunks",
            )
        try:
            body = {"language": {"source": source, "target": target}, "segments": segments}
            if options:  # none given: no empty ``options`` object on the wire
                body["options"] = _options(**options)
            return checked(model, body)
        except ValidationError as exc:
            if offset and exc.field.startswith("segments["):
                index = int(exc.field[9 : exc.field.index("]")])
                raise ValidationError(
                    f"segments[{index + offset}]" + exc.field[exc.field.index("]") + 1 :],
                    exc.problem,
                ) from None
            raise


def _with_glossary(options: dict[str, Any], target: str | None) -> dict[str, Any]:
    """``cast=`` (a :class:`dubkit.Cast`) becomes its terms for ``target`` as the glossary;
    a ``glossary=`` given too wins term by term."""
    cast = options.pop("cast", None)
    if cast is None:
        return options
    if not hasattr(cast, "glossary"):
        raise ValidationError("cast", f"a dubkit.Cast is expected, got {cast!r}")
    if not target:
        raise ValidationError("target", "a cast's glossary is kept per locale: give target=")
    terms = {**cast.glossary(target), **dict(options.get("glossary") or {})}
    if terms:
        options["glossary"] = terms
    return options


def _options(
    *,
    glossary: Mapping[str, str] | None = None,
    context_mode: str | None = None,
    context_window: int | None = None,
    scene: str | None = None,
    allow_stutter: bool | None = None,
    prompt: str | None = None,
    skip_missing_translation_check: bool | None = None,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Typed keyword options -> the ``options`` object (a raw ``options`` dict wins)."""
    typed: dict[str, Any] = {
        "source_context": {"mode": context_mode, "context_window": context_window},
        "scene_customized": {"scene": scene, "allow_stutter": allow_stutter},
        "glossary": dict(glossary) if isinstance(glossary, Mapping) else glossary,
        "prompt": prompt,
        "skip_missing_translation_check": skip_missing_translation_check,
    }
    typed = {
        name: value
        for name, value in typed.items()
        if value is not None
        and (
            not isinstance(value, dict)
            or name == "glossary"
            or any(v is not None for v in value.values())
        )
    }
    return {**typed, **python_names(TranslateOptions, options or {})}


class AsyncTranslateResource(TranslateResource):
    """``client.translate`` of :class:`dubkit.AsyncClient`: the same calls, awaited.

    >>> t = await client.translate.create(["Hello"], source="en-US", target="fr-FR")
    """

    async def create(  # type: ignore[override]
        self,
        segments: Segments | Mapping[str, Any],
        *,
        source: str | None = None,
        target: str | None = None,
        idempotency_key: str | None = None,
        **options: Any,
    ) -> Translation:
        """Translate up to 50 segments (see :meth:`TranslateResource.create`)."""
        return await self._arun(self._create(segments, source, target, idempotency_key, options))

    async def create_async(  # type: ignore[override]
        self,
        segments: Segments | Mapping[str, Any],
        *,
        source: str | None = None,
        target: str | None = None,
        extra_data: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        **options: Any,
    ) -> Task:
        """An :class:`~dubkit.results.AsyncTask` at once (see
        :meth:`TranslateResource.create_async`)."""
        body = self._request(TranslateAsyncRequest, segments, source, target, options)
        plan = self._start(
            "translate.create_async", body, extra_data=extra_data, idempotency_key=idempotency_key
        )
        return await self._arun(plan)

    async def batch(  # type: ignore[override]
        self,
        segments: Segments,
        *,
        source: str,
        target: str,
        concurrency: int = 4,
        progress: bool = True,
        **options: Any,
    ) -> Translation:
        """Any number of segments, ``concurrency`` requests at a time on the event loop (see
        :meth:`TranslateResource.batch`)."""
        plan = self._batch(segments, source, target, concurrency, progress, options)
        return await self._arun(plan)
