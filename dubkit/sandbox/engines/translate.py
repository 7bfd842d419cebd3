"""Deterministic pseudo-translation: the sandbox's stand-in for a translation model.

No offline translation model exists here, so the sandbox does not pretend: every word is
replaced by a made-up word that is stable for (word, target language) and pronounceable in that
language, so dubbing still sounds like speech. Everything a real engine is asked to honour is
honoured and observable:

* glossary terms are replaced by exactly the preferred translation (longest term first,
  whole words, case-insensitive);
* the context lines (segment ``context``, or ``neighbor`` with ``contextWindow``) are reported
  per segment as ``contextUsed`` so a caller can see which lines informed each translation;
* ``allowStutter: false`` removes disfluencies ("uh", "um", immediate word repeats) first;
* scene ``subtitle`` keeps lines short (at most 42 characters a line, wrapped);
* a segment with nothing translatable (digits, punctuation) fails with an ``errorMessage``
  unless ``skipMissingTranslationCheck`` is true, when it passes through unchanged;
* source language == target language returns the text as is.

Results are labelled ``engine: "sandbox-pseudo-translation"`` so nobody mistakes them for a
translation.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

ENGINE_LABEL = "sandbox-pseudo-translation"

# Syllables that read naturally in each language family, so espeak pronounces the result
# convincingly. Keyed by the language part of the locale.
_SYLLABLES = {
    "fr": "la le ri mon dé su pa ve ton chan bel ou ai neu qui rè ment lon sa vi".split(),
    "es": "la lo ra mi te so pa ve ro can tar el os ia ne qui do men sa vi".split(),
    "de": "ge ber ka lin schu mar te ha nor sten ei au we zu rich fel lan kö".split(),
    "it": "la lo ri mi te so pa ve ro can to el ia ne chi do men sa vi gio".split(),
    "pt": "la lo ra mi te so pa ve ro ção tar el os ia nhe qui do men sa vi".split(),
    "en": "ta lo ri mer ten so pa ver ro can ter el ing ne ly do men sa vi ber".split(),
    "ja": "ka ki ku ke ko sa shi su se so ta chi tsu te to na ni nu ne no".split(),
    "zh": "ba ma shi li wen zhong guo hao ren da xiao tian di shan he yun feng".split(),
}
_DEFAULT_SYLLABLES = "ka lo ri ma te so pa ve ro an el ia ne do mi sa vi ur".split()
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", re.UNICODE)
_FILLERS = re.compile(r"\b(?:uh+|um+|erm|er|ah+|hmm+)\b[,.]?\s*", re.IGNORECASE)
_REPEATS = re.compile(r"\b(\w+)(?:[\s,]+\1\b)+", re.IGNORECASE)
SUBTITLE_LINE = 42


@dataclass(frozen=True)
class Outcome:
    text: str | None
    error: str | None
    context_used: tuple[str, ...]


def pseudo_word(word: str, target: str) -> str:
    """A made-up word, stable for (word, target language), about as long as ``word``."""
    language = target.split("-")[0].lower()
    syllables = _SYLLABLES.get(language, _DEFAULT_SYLLABLES)
    digest = hashlib.sha256(f"{language}:{word.lower()}".encode()).digest()
    count = max(1, min(5, round(len(word) / 3)))
    made = "".join(syllables[digest[i] % len(syllables)] for i in range(count))
    if word.isupper() and len(word) > 1:
        return made.upper()
    return made.capitalize() if word[0].isupper() else made


def apply_glossary(text: str, glossary: dict[str, str]) -> tuple[str, list[str]]:
    """Replace glossary terms by placeholders; returns the text and the replacements in order."""
    kept: list[str] = []
    for term in sorted(glossary, key=len, reverse=True):
        pattern = re.compile(rf"(?<!\w){re.escape(term)}(?!\w)", re.IGNORECASE)

        def keep(_: re.Match[str], term: str = term) -> str:
            kept.append(glossary[term])
            return f"\x00{len(kept) - 1}\x00"

        text = pattern.sub(keep, text)
    return text, kept


def translate_text(
    text: str,
    source: str,
    target: str,
    *,
    glossary: dict[str, str] | None = None,
    allow_stutter: bool = True,
    scene: str = "video",
) -> str:
    if not allow_stutter:
        text = _REPEATS.sub(r"\1", _FILLERS.sub("", text)).strip()
    if source.split("-")[0].lower() == target.split("-")[0].lower():
        return text
    masked, kept = apply_glossary(text, glossary or {})
    translated = _WORD.sub(lambda m: pseudo_word(m.group(0), target), masked)
    translated = re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], translated)
    if scene == "subtitle":
        translated = _wrap(translated, SUBTITLE_LINE)
    return translated


def context_for(
    index: int, texts: Sequence[str], mode: str, window: int, provided: Sequence[str] | None
) -> tuple[str, ...]:
    """The neighbour lines that inform segment ``index``: a segment's own context wins."""
    if provided is not None:
        return tuple(provided)
    if mode == "neighbor":
        before = texts[max(0, index - window) : index]
        after = texts[index + 1 : index + 1 + window]
        return tuple(before) + tuple(after)
    return ()


def translate_segments(
    texts: Sequence[str],
    source: str,
    target: str,
    *,
    glossary: dict[str, str] | None = None,
    mode: str = "independent",
    window: int = 5,
    provided: Sequence[Sequence[str] | None] | None = None,
    allow_stutter: bool = True,
    scene: str = "video",
    skip_missing_check: bool = False,
) -> list[Outcome]:
    """Translate index-aligned segments; a failing segment never fails the others."""
    provided = provided or [None] * len(texts)
    outcomes = []
    for i, text in enumerate(texts):
        used = context_for(i, texts, mode, window, provided[i])
        if not _WORD.search(text) and not skip_missing_check:
            outcomes.append(
                Outcome(
                    None,
                    "missing translation: the segment has no words to "
                    "translate (set skipMissingTranslationCheck to pass "
                    "it through)",
                    used,
                )
            )
            continue
        outcomes.append(
            Outcome(
                translate_text(
                    text,
                    source,
                    target,
                    glossary=glossary,
                    allow_stutter=allow_stutter,
                    scene=scene,
                ),
                None,
                used,
            )
        )
    return outcomes


def _wrap(text: str, width: int) -> str:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    return "\n".join(lines)
