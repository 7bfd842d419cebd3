"""Text translation, sync and async (interface §2.2), on the pseudo-translation engine.

Credits: the published price (:mod:`dubkit.schema.prices`), 1 per started 100 characters of all
segments, charged before any work; 402 when short.
Each item carries the interface's ``text``/``errorMessage`` plus two labelled extras (sent in the
extras header beside the body, :mod:`dubkit.sandbox.extras`):
``contextUsed`` (the neighbour lines that informed it) and, on the result, ``engine``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import locales
from ...schema import (
    TranslateAsyncRequest,
    TranslateItem,
    TranslateRequest,
    TranslateResult,
    prices,
)
from ..backend import Backend, now_iso
from ..call import Call
from ..engines import translate as engine
from .common import Work, accepted, check_locale, run_sync, start_async

# --------------------------------------------------------------------------- rules


def _plan(backend: Backend, api_key: str, request: TranslateRequest) -> Work:
    """Check and charge now; the work translates every segment."""
    check_locale("language.source", request.language.source, locales.SOURCE)
    check_locale("language.target", request.language.target, locales.TARGET)
    for i, segment in enumerate(request.segments):
        check_locale(f"segments[{i}].locale", segment.locale, locales.SOURCE)
    backend.charge(
        api_key,
        prices.translation_credits(s.text for s in request.segments),
        f"translating {len(request.segments)} segment(s)",
    )
    options = request.options
    context = options.source_context if options and options.source_context else None
    scene = options.scene_customized if options and options.scene_customized else None

    def run(task_id: str) -> dict[str, Any]:
        outcomes = engine.translate_segments(
            [s.text for s in request.segments],
            request.language.source,
            request.language.target,
            glossary=options.glossary if options else None,
            mode=(context.mode if context and context.mode else "independent"),
            window=(context.context_window if context and context.context_window else 5),
            provided=[s.context for s in request.segments],
            allow_stutter=scene.allow_stutter is not False if scene else True,
            scene=(scene.scene if scene and scene.scene else "video"),
            skip_missing_check=bool(options and options.skip_missing_translation_check),
        )
        return _result(task_id, outcomes, now_iso()).to_wire()

    return run


# --------------------------------------------------------------------------- answers


def _result(task_id: str, outcomes: Sequence[engine.Outcome], created_at: str) -> TranslateResult:
    items = [
        TranslateItem(text=o.text, error_message=o.error, context_used=list(o.context_used))
        for o in outcomes
    ]
    return TranslateResult(
        task_id=task_id, items=items, created_at=created_at, engine=engine.ENGINE_LABEL
    )


# --------------------------------------------------------------------------- handlers


def create(call: Call[TranslateRequest]) -> dict[str, Any]:
    return run_sync(call, _plan(call.backend, call.api_key, call.body))


def create_async(call: Call[TranslateAsyncRequest]) -> dict[str, Any]:
    return accepted(start_async(call, _plan(call.backend, call.api_key, call.body)))
