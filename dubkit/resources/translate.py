"""Text translation: ``client.translate``.

>>> t = client.translate.create(["Hello there", "General Kenobi"], source="en-US",
...                             target="fr-FR", glossary={"Kenobi": "Kenobi"})
>>> t.to_frame()                  # source | translation | error, side by side
>>> task = client.translate.create_async(["Hello"], source="en-US", target="de-DE")
>>> client.translate.batch(many_lines, source="en-US", target="es-ES")   # any number of lines
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Union, Sequence

import pandas as pd

from ..errors import DubkitError, ValidationError
from ..schema import (MAX_LINES, TranslateAsyncRequest, TranslateItem, TranslateRequest,
                      TranslateResult)
from .._wire import parse
from ._base import Resource, as_list, chunk_failure, chunked, run_chunks
from .tasks import RESULT_TYPES, Task

if TYPE_CHECKING:
    from ..client import Client

Segments = Union[str, Sequence[Union[str, Mapping[str, Any]]]]   # a plain string is one segment
PSEUDO_NOTE = ("Sandbox pseudo-translation: made-up words, stable per word and language; "
               "not a real translation.")


class Translation:
    """A translation result, aligned with its source segments."""

    def __init__(self, result: TranslateResult, sources: Sequence[str] | None = None, *,
                 pseudo: bool = False) -> None:
        self.raw = result
        self.task_id = result.task_id
        self.items: list[TranslateItem] = result.items
        self.sources = list(sources) if sources is not None else [None] * len(self.items)
        # The sandbox labels its results; trust the label, not where the client points.
        self.pseudo = pseudo or (result.model_extra or {}).get("engine", "").startswith("sandbox")

    def __len__(self) -> int:
        return len(self.items)

    @property
    def texts(self) -> list[str | None]:
        return [item.text for item in self.items]

    @property
    def errors(self) -> dict[int, str]:
        """Index -> error message of every segment that failed."""
        return {i: item.error_message for i, item in enumerate(self.items) if item.error_message}

    def to_frame(self) -> pd.DataFrame:
        """source | translation | error; ``error`` is None for a segment that succeeded."""
        # object dtype: pandas would infer a string column and show "no error" as NaN
        # wherever another segment failed, and as None where none did.
        return pd.DataFrame({"source": self.sources, "translation": self.texts,
                             "error": pd.Series([item.error_message for item in self.items],
                                                dtype=object)})

    def __repr__(self) -> str:
        label = ", pseudo" if self.pseudo else ""
        count = len(self)
        return (f"Translation({count} segment{'' if count == 1 else 's'}, "
                f"{len(self.errors)} failed{label})")

    def _repr_html_(self) -> str:
        note = f"<p><em>{html.escape(PSEUDO_NOTE)}</em></p>" if self.pseudo else ""
        return note + self.to_frame().to_html(na_rep="", escape=True)


class TranslateResource(Resource):
    """``client.translate``: ≤ 50 segments per call, or :meth:`batch` for any number."""

    def create(self, segments: Segments | Mapping[str, Any], *, source: str | None = None,
               target: str | None = None, idempotency_key: str | None = None,
               **options: Any) -> Translation:
        """Translate up to 50 segments and wait for the answer.

        ``segments`` are strings or segment dicts (``text``, ``speaker``, ``start``/``end``,
        ``context``...). Options: ``glossary``, ``context_mode`` (independent, provided_only,
        neighbor), ``context_window`` (1-20), ``scene``, ``allow_stutter``, ``prompt``,
        ``skip_missing_translation_check``, or ``options={...}`` as on the wire. A raw wire
        body dict is accepted as the first argument.
        """
        body = self._request(TranslateRequest, segments, source, target, options)
        data = self._client.call("translate.create", body, idempotency_key=idempotency_key)
        return Translation(TranslateResult.model_validate(data), [s.text for s in body.segments])

    def create_async(self, segments: Segments | Mapping[str, Any], *, source: str | None = None,
                     target: str | None = None, extra_data: Mapping[str, Any] | None = None,
                     idempotency_key: str | None = None, **options: Any) -> Task:
        """Like :meth:`create`, but returns a :class:`Task` at once; results by webhook or poll."""
        from .._transport import new_idempotency_key
        key = idempotency_key or new_idempotency_key()
        body = self._request(TranslateAsyncRequest, segments, source, target, options)
        # The key rides in extraData so a webhook can be matched to this call even if the
        # acceptance answer is lost.
        body.extra_data = {"dubkitIdempotencyKey": key, **(body.extra_data or {}),
                           **(extra_data or {})}
        data = self._client.call("translate.create_async", body, idempotency_key=key)
        return Task(self._client, data["taskId"], task_type="textTranslation", status="running",
                    created_at=data.get("createdAt"), idempotency_key=key,
                    context={"sources": [s.text for s in body.segments]})

    def batch(self, segments: Segments, *, source: str, target: str, concurrency: int = 4,
              progress: bool = True, **options: Any) -> Translation:
        """Translate any number of segments: chunks of 50, sent concurrently, order kept.

        Every chunk is validated before the first is sent. Per-segment failures come back in
        ``errors``; so do the segments of a chunk whose request failed (e.g. 402), without
        losing the chunks that succeeded (see :func:`~dubkit.resources._base.run_chunks`).
        """
        items = as_list(segments)
        bodies = [self._request(TranslateRequest, chunk, source, target, options,
                                offset=i * MAX_LINES)
                  for i, chunk in enumerate(chunked(items, MAX_LINES))]
        def failed(body: TranslateRequest, exc: DubkitError) -> dict[str, Any]:
            return {"items": [{"errorMessage": chunk_failure(exc)}] * len(body.segments)}

        results = run_chunks(bodies, lambda body: self._client.call("translate.create", body),
                             concurrency=concurrency, progress=progress,
                             description="translating", weight=lambda b: len(b.segments),
                             on_error=failed)
        merged = TranslateResult(task_id=None, items=[
            item for data in results for item in TranslateResult.model_validate(data).items])
        pseudo = any((TranslateResult.model_validate(d).model_extra or {}).get("engine")
                     for d in results)
        return Translation(merged, [s.text for b in bodies for s in b.segments], pseudo=pseudo)

    def _request(self, model: type[TranslateRequest], segments: Any, source: str | None,
                 target: str | None, options: dict[str, Any], offset: int = 0
                 ) -> TranslateRequest:
        if isinstance(segments, Mapping):       # a raw wire body
            return parse(model, segments)
        segments = [{"text": s} if isinstance(s, str) else dict(s) for s in as_list(segments)]
        if len(segments) > MAX_LINES:
            raise ValidationError("segments", f"at most {MAX_LINES} per request, got "
                                              f"{len(segments)}; client.translate.batch() "
                                              f"sends any number in concurrent chunks")
        try:
            return parse(model, {"language": {"source": source, "target": target},
                                 "segments": segments, "options": _options(**options)})
        except ValidationError as exc:
            if offset and exc.field.startswith("segments["):
                index = int(exc.field[9:exc.field.index("]")])
                raise ValidationError(f"segments[{index + offset}]"
                                      + exc.field[exc.field.index("]") + 1:],
                                      exc.problem) from None
            raise


def _options(*, glossary: Mapping[str, str] | None = None, context_mode: str | None = None,
             context_window: int | None = None, scene: str | None = None,
             allow_stutter: bool | None = None, prompt: str | None = None,
             skip_missing_translation_check: bool | None = None,
             options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Typed keyword options -> the wire ``options`` object (a raw ``options`` dict wins)."""
    wire: dict[str, Any] = {}
    if context_mode is not None or context_window is not None:
        wire["sourceContext"] = {"mode": context_mode, "contextWindow": context_window}
    if scene is not None or allow_stutter is not None:
        wire["sceneCustomized"] = {"scene": scene, "allowStutter": allow_stutter}
    for name, value in (("glossary", glossary), ("prompt", prompt),
                        ("skipMissingTranslationCheck", skip_missing_translation_check)):
        if value is not None:
            wire[name] = dict(value) if isinstance(value, Mapping) else value
    return {**wire, **(options or {})}


RESULT_TYPES["textTranslation"] = lambda client, raw, context: Translation(
    TranslateResult.model_validate(raw), context.get("sources"))
