"""Text translation, sync and async (interface §2.2), on the pseudo-translation engine.

Credits: one per source character (*choice*), charged before any work; 402 when short.
Each item carries the interface's ``text``/``errorMessage`` plus two labelled extras:
``contextUsed`` (the neighbour lines that informed it) and, on the result, ``engine``.
"""

from __future__ import annotations

from typing import Any

from ... import locales
from ...schema import TranslateRequest
from ..backend import now_iso
from ..engines import translate as engine
from ..operations import Call
from .common import check_locale, sync_and_async


def _plan(call: Call) -> Any:
    request: TranslateRequest = call.body  # type: ignore[assignment]
    check_locale("language.source", request.language.source, locales.SOURCE)
    check_locale("language.target", request.language.target, locales.TARGET)
    for i, segment in enumerate(request.segments):
        check_locale(f"segments[{i}].locale", segment.locale, locales.SOURCE)
    call.backend.charge(call.api_key, sum(len(s.text) for s in request.segments),
                        f"translating {len(request.segments)} segment(s)")
    options = request.options
    context = options.source_context if options and options.source_context else None
    scene = options.scene_customized if options and options.scene_customized else None

    def run(task_id: str) -> dict[str, Any]:
        outcomes = engine.translate_segments(
            [s.text for s in request.segments],
            request.language.source, request.language.target,
            glossary=options.glossary if options else None,
            mode=(context.mode if context and context.mode else "independent"),
            window=(context.context_window if context and context.context_window else 5),
            provided=[s.context for s in request.segments],
            allow_stutter=scene.allow_stutter is not False if scene else True,
            scene=(scene.scene if scene and scene.scene else "video"),
            skip_missing_check=bool(options and options.skip_missing_translation_check))
        items = [{"text": o.text, "errorMessage": o.error, "contextUsed": list(o.context_used)}
                 for o in outcomes]
        return {"taskId": task_id, "items": items, "createdAt": now_iso(),
                "engine": engine.ENGINE_LABEL}
    return run


sync_and_async("translate", "textTranslation", _plan)
