"""Which language a transcript is in, for ``language.source: "auto"``.

py3langid (BSD-3-Clause; its model ships inside the 4.6 MB wheel, so this works offline) is
restricted to the languages of the service's source locales, and its language is named as a
locale the service lists: the preferred one of the language (en-US, zh-CN...), else the one
whose region repeats the language (fr-FR, de-DE), else the first in order. The model loads on
first use (about 0.4 s), never at import.
"""

from __future__ import annotations

import threading
from typing import Any

from ...locales import SOURCE

# A language's usual locale where no region repeats its code.
PREFERRED = {"en": "en-US", "zh": "zh-CN", "ar": "ar-SA", "pt": "pt-BR", "sw": "sw-KE"}
MIN_PROBABILITY = 0.5  # below this the guess is not reported

_lock = threading.Lock()
_identifier: Any = None


def locale_of(language: str) -> str | None:
    """The service locale that stands for ``language`` (an ISO 639-1 code)."""
    candidates = sorted(code for code in SOURCE if code.split("-")[0] == language)
    if not candidates:
        return None
    repeated = f"{language}-{language.upper()}"
    return PREFERRED.get(language) or (repeated if repeated in candidates else candidates[0])


def detect(text: str) -> tuple[str, float] | None:
    """``(locale, probability)`` of the text's language, or None when unsure or no text."""
    if not text.strip():
        return None
    language, probability = _model().classify(text)
    locale = locale_of(str(language))
    if locale is None or probability < MIN_PROBABILITY:
        return None
    return locale, float(probability)


def _model() -> Any:
    global _identifier
    with _lock:
        if _identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            ours = {code.split("-")[0] for code in SOURCE}
            identifier.set_languages([lang for lang in identifier.labels if lang in ours])
            _identifier = identifier
        return _identifier
