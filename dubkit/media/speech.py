"""Real text to speech, offline: libespeak-ng driven through ctypes. The sandbox speaks with it;
:mod:`dubkit.samples` makes its sample recordings with it.

The library and its voice data come from the ``espeakng-loader`` wheel, so nothing is
downloaded at run time; it is initialised lazily on first use, never at import. Loading it and
its ctypes signatures live in :mod:`._espeak`, which holds the one lock every call takes.

Example::

    >>> from dubkit.media import speech
    >>> audio = speech.synthesize("Hello there.", speech.voice_for_locale("en-US"))
    >>> audio.dtype, audio.ndim
    (dtype('float32'), 1)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import numbers
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _espeak
from ._espeak import SpeechError

__all__ = [
    "SAMPLE_RATE",
    "EspeakVoice",
    "Prosody",
    "SpeechError",
    "list_variants",
    "list_voices",
    "synthesize",
    "voice_for_locale",
]

#: Output rate of libespeak-ng; overwritten with what the library reports once initialised.
SAMPLE_RATE: int = 22050


@dataclass(frozen=True)
class Prosody:
    """espeak-ng prosody parameters, in espeak's own units.

    >>> Prosody(rate_wpm=140, pitch=70)
    Prosody(rate_wpm=140, pitch=70, pitch_range=50, volume=100)
    """

    rate_wpm: int = 175  # words per minute, 80..450
    pitch: int = 50  # base pitch within the voice's own range, 0..100
    pitch_range: int = 50  # intonation range, 0..100 (0 is monotone)
    volume: int = 100  # 0..200

    def __post_init__(self) -> None:
        for name, low, high in (
            ("rate_wpm", 80, 450),
            ("pitch", 0, 100),
            ("pitch_range", 0, 100),
            ("volume", 0, 200),
        ):
            value = getattr(self, name)
            if (
                not isinstance(value, numbers.Integral)
                or isinstance(value, bool)
                or not low <= int(value) <= high
            ):
                raise SpeechError(
                    f"Prosody.{name} must be an integer in {low}..{high}, got {value!r}"
                )
            object.__setattr__(self, name, int(value))  # numpy integers in, plain ints out


@dataclass(frozen=True)
class EspeakVoice:
    """One entry of the espeak-ng voice catalogue.

    >>> v = next(v for v in list_voices() if v.identifier == "gmw/en-US")
    >>> v.languages
    ('en-us', 'en')
    """

    identifier: str  # e.g. "gmw/en-US"; accepted by synthesize()
    name: str  # e.g. "English (America)"
    languages: tuple[str, ...]  # most preferred first, e.g. ("en-us", "en")
    gender: str  # "male" / "female" / "unknown"


_voices: list[EspeakVoice] | None = None
_variants: list[str] | None = None
_lookup: dict[str, str] | None = None
_priorities: dict[tuple[str, str], int] = {}


def _library() -> ctypes.CDLL:
    """The library, initialised once; ``SAMPLE_RATE`` follows the rate it reports. Caller locks."""
    global SAMPLE_RATE
    lib, SAMPLE_RATE = _espeak.library()
    return lib


def reset_randomness(seed: int = 1) -> None:
    """Seed espeak-ng's random numbers (its own and the C library's, which its noise uses).

    espeak-ng also keeps state from one utterance to the next, so the same text gives the
    same samples only for the same sequence of calls since the process started: see
    :func:`dubkit.samples.narrated_clip`, which speaks in a fresh process for that reason.
    """
    with _espeak.LOCK:
        lib = _library()
        lib.espeak_ng_SetRandSeed(seed)
        libc = ctypes.util.find_library("c")
        if libc:  # not on Windows, whose C library espeak-ng links statically there
            ctypes.CDLL(libc).srand(seed)


def _data_path() -> Path:
    import espeakng_loader

    return Path(espeakng_loader.get_data_path())


def _has_dictionary(identifier: str, languages: tuple[str, ...]) -> bool:
    # A few bundled voices (fo, kaa, xex) name a dictionary the wheel does not ship; espeak
    # would print to stderr and speak garbage, so they are left out of the catalogue.
    data = _data_path()
    dictionary = languages[0].split("-")[0] if languages else ""
    try:
        for line in (
            (data / "lang" / identifier).read_text(encoding="utf-8", errors="replace").splitlines()
        ):
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "dictionary":
                dictionary = parts[1]
    except OSError:
        return False
    return bool(dictionary) and (data / f"{dictionary}_dict").exists()


def _read_languages(address: int | None) -> tuple[tuple[str, int], ...]:
    """(language, priority) pairs in the voice file's order; lower priority = better match."""
    found: list[tuple[str, int]] = []
    while address and (priority := ctypes.c_ubyte.from_address(address).value) != 0:
        raw = ctypes.string_at(address + 1)
        found.append((raw.decode("utf-8", "replace"), priority))
        address += len(raw) + 2
    return tuple(found)


def _list_raw(
    spec: _espeak.Voice | None,
) -> list[tuple[str, str, tuple[tuple[str, int], ...], int]]:
    """Copy espeak's voice list out of library-owned memory. Caller holds ``_espeak.LOCK``."""
    lib = _library()
    array = lib.espeak_ListVoices(ctypes.byref(spec) if spec is not None else None)
    out = []
    i = 0
    while array[i]:
        v = array[i].contents
        out.append(
            (
                (v.identifier or b"").decode("utf-8", "replace"),
                (v.name or b"").decode("utf-8", "replace"),
                _read_languages(v.languages),
                v.gender,
            )
        )
        i += 1
    return out


def list_voices() -> list[EspeakVoice]:
    """All usable espeak-ng voices (cached).

    >>> any(v.identifier == "roa/fr" for v in list_voices())
    True
    """
    global _voices, _priorities
    with _espeak.LOCK:
        if _voices is None:
            genders = {1: "male", 2: "female"}
            voices, priorities = [], {}
            for ident, name, langs, gender in _list_raw(None):
                languages = tuple(lang for lang, _ in langs)
                if _has_dictionary(ident, languages):
                    voices.append(
                        EspeakVoice(ident, name, languages, genders.get(gender, "unknown"))
                    )
                    priorities.update({(ident, lang): prio for lang, prio in langs})
            _voices, _priorities = voices, priorities
        return list(_voices)


def list_variants() -> list[str]:
    """Names of the voice variants (``espeak-ng-data/voices/!v``), usable as ``voice+variant``.

    >>> {"f2", "m3", "klatt"} <= set(list_variants())
    True
    """
    global _variants
    with _espeak.LOCK:
        if _variants is None:
            spec = _espeak.Voice()
            keep = ctypes.c_char_p(b"variant")
            spec.languages = ctypes.cast(keep, ctypes.c_void_p)
            names = {
                ident.split("/", 1)[1]
                for ident, _, _, _ in _list_raw(spec)
                if ident.startswith("!v/")
            }
            _variants = sorted(names, key=str.lower)
        return list(_variants)


def _voice_lookup() -> dict[str, str]:
    """Lower-cased identifier / file name / display name / language -> identifier."""
    global _lookup
    voices = list_voices()
    if _lookup is None:
        table: dict[str, str] = {}
        best: dict[str, int] = {}
        # Language codes first and weakest: a voice's own identifier or name must win.
        # Among voices claiming a language, espeak's own priority (lower wins) decides.
        for v in voices:
            for lang in v.languages:
                priority = _priorities.get((v.identifier, lang), 99)
                if lang not in best or priority < best[lang]:
                    best[lang] = priority
                    table[lang] = v.identifier
        for v in voices:
            table[v.name.lower()] = v.identifier
            table[v.name.lower().replace(" ", "_")] = v.identifier
        for v in voices:
            table[v.identifier.rsplit("/", 1)[-1].lower()] = v.identifier
        for v in voices:
            table[v.identifier.lower()] = v.identifier
        _lookup = table
    return _lookup


def _resolve(voice: str, variant: str | None) -> str:
    """Turn a user voice spec into the exact string for espeak_SetVoiceByName."""
    base, _, inline = voice.strip().partition("+")
    if inline and variant and inline != variant:
        raise SpeechError(
            f"voice {voice!r} already names variant {inline!r}; got variant={variant!r} too"
        )
    variant = variant or inline or None
    identifier = _voice_lookup().get(base.strip().lower())
    if identifier is None:
        raise SpeechError(f"unknown espeak voice or language {base!r}; see list_voices()")
    if variant is None:
        return identifier
    by_lower = {name.lower(): name for name in list_variants()}
    real = by_lower.get(variant.strip().lower())
    if real is None:  # espeak silently ignores unknown variants; we refuse them instead
        raise SpeechError(f"unknown espeak variant {variant!r}; see list_variants()")
    return f"{identifier}+{real}"


def synthesize(
    text: str, voice: str = "en-us", *, variant: str | None = None, prosody: Prosody | None = None
) -> np.ndarray:
    """Speak ``text``; return float32 mono samples in [-1, 1] at ``SAMPLE_RATE``.

    ``voice`` is an identifier ("gmw/en-US"), voice file name ("en-US"), display name or
    language code ("fr-fr", "cmn"), optionally with "+variant" appended.

    >>> audio = synthesize("Good morning.", "en-us", variant="f3", prosody=Prosody(rate_wpm=140))
    >>> 0.5 < len(audio) / SAMPLE_RATE < 3
    True
    """
    if not isinstance(text, str) or not text.strip():
        raise SpeechError("text to synthesize is empty")
    if "\x00" in text:
        raise SpeechError("text to synthesize contains a NUL character")
    prosody = prosody or Prosody()
    spec = _resolve(voice, variant)
    payload = text.encode("utf-8")
    with _espeak.LOCK:
        lib = _library()
        code = lib.espeak_SetVoiceByName(spec.encode("utf-8"))
        if code != _espeak.EE_OK:
            raise SpeechError(f"espeak could not load voice {spec!r} (error {code})")
        # Parameters survive voice changes, so all four are set on every call.
        for parameter, value in (
            (_espeak.RATE, prosody.rate_wpm),
            (_espeak.VOLUME, prosody.volume),
            (_espeak.PITCH, prosody.pitch),
            (_espeak.RANGE, prosody.pitch_range),
        ):
            code = lib.espeak_SetParameter(parameter, value, 0)
            if code != _espeak.EE_OK:
                raise SpeechError(f"espeak rejected parameter {parameter}={value} (error {code})")
        _espeak.chunks.clear()
        try:
            code = lib.espeak_Synth(
                payload,
                len(payload) + 1,
                0,
                _espeak.POS_CHARACTER,
                0,
                _espeak.CHARS_UTF8,
                None,
                None,
            )
            raw = b"".join(_espeak.chunks)
        finally:
            _espeak.chunks.clear()
    if code != _espeak.EE_OK:
        raise SpeechError(f"espeak_Synth failed for voice {spec!r} (error {code})")
    return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0


# BCP-47 tags whose best espeak voice is not found by plain prefix matching.
_LOCALE_ALIASES = {
    "zh": "cmn",
    "zh-cn": "cmn",
    "zh-sg": "cmn",
    "zh-tw": "cmn",
    "zh-hans": "cmn",
    "zh-hant": "cmn",
    "zh-hk": "yue",
    "zh-mo": "yue",
    "yue-cn": "yue",
    "yue-hk": "yue",
    # espeak has no Wu or Min Nan voice; Mandarin is the nearest it can speak.
    "wuu": "cmn",
    "nan": "cmn",
    "en-ca": "en-us",
    "en-ph": "en-us",
    "es-es": "es",
    "iw": "he",
    "in": "id",
    "no": "nb",
    "kmr": "ku",
}


# Languages the service lists that espeak-ng cannot speak: the nearest language it can, and why.
STAND_INS: dict[str, tuple[str, str, str]] = {
    "bho": ("hi", "Bhojpuri", "Hindi, its Indo-Aryan neighbour in the same script"),
    "fil": ("id", "Filipino", "Indonesian, an Austronesian language in Latin script"),
    "gl": ("pt", "Galician", "Portuguese, its sister language"),
    "jv": ("id", "Javanese", "Indonesian, the language of the same islands"),
    "km": ("vi", "Khmer", "Vietnamese, an Austroasiatic language like Khmer"),
    "lo": ("th", "Lao", "Thai, a close Tai relative"),
    "mn": ("kk", "Mongolian", "Kazakh, a Cyrillic neighbour with the same extra vowels"),
    "ps": ("fa", "Pashto", "Persian, an Iranian language in the same script"),
    "so": ("om", "Somali", "Oromo, a Cushitic relative"),
    "zu": ("tn", "Zulu", "Setswana, a Southern Bantu language"),
}


# Stand-ins that cannot read the language's own script: they spell it letter by letter.
UNREAD_SCRIPTS = {"km": "Khmer", "lo": "Lao"}


def stand_in(locale: str) -> str | None:
    """Why another language speaks ``locale`` (espeak-ng has no voice for it), else None.

    >>> stand_in("gl-ES")
    'espeak-ng has no Galician voice: Portuguese, its sister language, speaks gl-ES'
    """
    code = locale.strip().replace("_", "-").split("-")[0].lower()
    found = STAND_INS.get(code)
    if found is None:
        return None
    _, language, nearest = found
    said = f"espeak-ng has no {language} voice: {nearest}, speaks {locale}"
    if code in UNREAD_SCRIPTS:
        said += f" (it spells {UNREAD_SCRIPTS[code]} script letter by letter; Latin letters read)"
    return said


def voice_for_locale(locale: str) -> str:
    """Best espeak voice (a language code ``synthesize`` accepts) for a BCP-47 locale.

    Falls back from the full tag to its language ("de-AT" -> "de"), and for a language espeak
    cannot speak to its nearest stand-in (:data:`STAND_INS`; :func:`stand_in` says which).

    >>> voice_for_locale("pt-BR"), voice_for_locale("zh-CN"), voice_for_locale("de-AT")
    ('pt-br', 'cmn', 'de')
    """
    tag = locale.strip().replace("_", "-").lower()
    if not tag:
        raise SpeechError("locale is empty")
    table = _voice_lookup()
    languages = {lang for v in list_voices() for lang in v.languages}
    parts = tag.split("-")
    for n in range(len(parts), 0, -1):
        candidate = "-".join(parts[:n])
        candidate = _LOCALE_ALIASES.get(candidate, candidate)
        if candidate == "es" and len(parts) > 1 and parts[1] != "es":
            candidate = "es-419"  # every Spanish region but Spain speaks the Latin American voice
        if candidate in languages and candidate in table:
            return candidate
    if parts[0] in STAND_INS:
        return STAND_INS[parts[0]][0]
    raise SpeechError(f"no espeak voice speaks locale {locale!r}")
