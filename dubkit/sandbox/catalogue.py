"""The sandbox's preset voice catalogue, and how the sandbox speaks any voice.

Every preset is an espeak-ng voice for one of the service's target locales, worn by a
*persona*: an espeak variant (timbre), a prosody (pace, pitch, intonation range) and the
catalogue facts of interface §3.2. Tiers are product lines (*choice*, the interface only says
"S1 … S7"):

====  ==============  =====================================================  ====  =======
tier  line            who                                                    HD    locales
====  ==============  =====================================================  ====  =======
S1    Essential       a clear male and a clear female narrator               no    all
S2    Conversational  one casual young voice (gender alternates by locale)   no    all
S3    Narration       warm storytellers, slower, wide intonation             yes   major
S4    Broadcast       steady newsreaders, narrow intonation                  yes   major
S5    Advertising     bright, fast presenters                                yes   major
S6    Characters      grandparents and whisperers                            no    few
S7    Emotive         expressive voices recommended for ``emoPrompt``        yes   major
====  ==============  =====================================================  ====  =======

Voice ids encode the tier: ``sv_<tier>_<locale>_<persona>``, e.g. ``sv_s1_en_us_clear_f``,
so a client can tell a batch's providers apart before sending (interface §6.5 only promises
the ``sv_`` prefix; ids are stable across restarts). The catalogue is computed, not stored:
the same code always yields the same ~600 voices, names, scores and dates.

>>> voice = preset("sv_s1_en_us_clear_f")
>>> voice.record.provider, voice.record.gender, voice.speaking.variant
('S1', 'female', 'f1')
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .. import locales
from ..media import speech
from ..schema import PresetVoice


@dataclass(frozen=True)
class SpeakingVoice:
    """How the sandbox speaks a voice: an espeak voice, a variant and prosody.

    Presets carry one; clones store theirs as JSON (``to_json``/``from_json``).

    >>> SpeakingVoice("en-us", "f2").to_json()["variant"]
    'f2'
    """

    espeak: str  # a voice or language code ``speech.synthesize`` accepts
    variant: str | None = None  # an espeak variant (``speech.list_variants()``)
    prosody: speech.Prosody = field(default_factory=speech.Prosody)

    def to_json(self) -> dict[str, Any]:
        p = self.prosody
        return {
            "espeak": self.espeak,
            "variant": self.variant,
            "rateWpm": p.rate_wpm,
            "pitch": p.pitch,
            "pitchRange": p.pitch_range,
            "volume": p.volume,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SpeakingVoice:
        return cls(
            data["espeak"],
            data.get("variant"),
            speech.Prosody(
                rate_wpm=int(data.get("rateWpm", 175)),
                pitch=int(data.get("pitch", 50)),
                pitch_range=int(data.get("pitchRange", 50)),
                volume=int(data.get("volume", 100)),
            ),
        )

    def with_prosody(self, **changes: int) -> SpeakingVoice:
        return replace(self, prosody=replace(self.prosody, **changes))

    def speak(self, text: str, *, espeak: str | None = None) -> np.ndarray:
        """Float32 mono samples at ``speech.SAMPLE_RATE``; ``espeak`` overrides the language."""
        return speech.synthesize(
            text, espeak or self.espeak, variant=self.variant, prosody=self.prosody
        )


def speaking_voice_from_audio(
    samples: np.ndarray, sample_rate: int, espeak: str = "en-us"
) -> SpeakingVoice:
    """An espeak voice imitating the pitch and pace of a recording (for clones and
    ``timbreRefAudio``): a variant of the speaker's gender, prosody from its voiceprint.

    Raises ``ValueError`` when the recording holds no speech.
    """
    from .engines import voiceprint

    measured = voiceprint.measure(samples, sample_rate)
    variant = CLONE_VARIANTS[measured.gender]
    return SpeakingVoice(espeak, variant, voiceprint.derive_prosody(measured, espeak, variant))


CLONE_VARIANTS = {"female": "f2", "male": "m3"}  # the espeak variant a clone of each gender uses


def clone_calibrations() -> list[tuple[str, str]]:
    """Every (espeak voice, clone variant) a clone or a dub's cloned speaker can speak with:
    the voices of all the interface's locales (the shipped calibration table holds these)."""
    voices = set()
    for locale in locales.TARGET | locales.SOURCE:
        try:
            voices.add(speech.voice_for_locale(locale))
        except speech.SpeechError:
            continue  # a locale espeak cannot speak is refused before any cloning
    return [(voice, variant) for voice in sorted(voices) for variant in CLONE_VARIANTS.values()]


# --------------------------------------------------------------------------- personas and tiers


@dataclass(frozen=True)
class Persona:
    key: str
    variant: str
    gender: str
    age: str  # young | adult | senior (the list filter's values)
    style: str
    role_play: str
    personalities: tuple[str, ...]
    scenarios: tuple[str, ...]
    category: str
    rate: int  # words per minute
    pitch: int  # espeak 0..100
    pitch_range: int  # espeak 0..100


# fmt: off
_P = Persona
PERSONAS = {p.key: p for p in (
    # key, variant, gender, age, style, role play;
    # personalities, scenarios, category, words a minute, pitch, pitch range
    _P("clear_m",   "m1",       "male",   "adult",  "neutral",        "narrator",
       ("calm", "clear"),           ("audiobook", "e-learning"), "narration", 165, 45, 50),
    _P("clear_f",   "f1",       "female", "adult",  "neutral",        "narrator",
       ("calm", "clear"),           ("audiobook", "e-learning"), "narration", 165, 55, 50),
    _P("chat_m",    "m2",       "male",   "young",  "conversational", "friend",
       ("friendly", "casual"),      ("chat", "vlog"), "conversation", 185, 55, 65),
    _P("chat_f",    "f4",       "female", "young",  "conversational", "friend",
       ("cheerful", "casual"),      ("chat", "vlog", "social media"), "conversation", 185, 60, 70),
    _P("story_m",   "m3",       "male",   "adult",  "storytelling",   "storyteller",
       ("warm", "expressive"),      ("audiobook", "podcast"), "narration", 150, 45, 75),
    _P("story_f",   "f2",       "female", "adult",  "storytelling",   "storyteller",
       ("warm", "gentle"),          ("audiobook", "children's stories"), "narration", 150, 55, 75),
    _P("news_m",    "m7",       "male",   "adult",  "newscast",       "news anchor",
       ("authoritative", "steady"), ("news", "documentary"), "news", 170, 40, 40),
    _P("news_f",    "f3",       "female", "adult",  "newscast",       "news anchor",
       ("professional", "steady"),  ("news", "corporate"), "news", 170, 50, 40),
    _P("promo_m",   "m6",       "male",   "adult",  "advertising",    "presenter",
       ("confident", "energetic"),  ("advertising", "trailer"), "advertising", 185, 45, 70),
    _P("promo_f",   "f5",       "female", "young",  "advertising",    "presenter",
       ("bright", "energetic"),     ("advertising", "promo"), "advertising", 190, 65, 80),
    _P("elder_f",   "grandma",  "female", "senior", "storytelling",   "grandmother",
       ("kind", "patient"),         ("children's stories", "games"), "character", 140, 50, 70),
    _P("elder_m",   "grandpa",  "male",   "senior", "storytelling",   "grandfather",
       ("wise", "patient"),         ("audiobook", "games"), "character", 135, 40, 60),
    _P("whisper_f", "whisperf", "female", "adult",  "whispering",     "confidant",
       ("soft", "intimate"),        ("meditation", "ASMR"), "character", 140, 50, 30),
    _P("whisper_m", "whisper",  "male",   "adult",  "whispering",     "confidant",
       ("soft", "mysterious"),      ("horror", "ASMR"), "character", 140, 45, 30),
    _P("emote_m",   "m4",       "male",   "adult",  "emotional",      "actor",
       ("expressive", "dramatic"),  ("drama", "games", "dubbing"), "drama", 170, 50, 85),
    _P("emote_f",   "f2",       "female", "adult",  "emotional",      "actress",
       ("expressive", "dramatic"),  ("drama", "games", "dubbing"), "drama", 170, 60, 90),
)}

MAJOR_LOCALES = (
    "en-US", "en-GB", "en-AU", "en-IN", "es-ES", "es-MX", "fr-FR", "fr-CA", "de-DE", "it-IT",
    "pt-BR", "pt-PT", "nl-NL", "sv-SE", "pl-PL", "ru-RU", "uk-UA", "tr-TR", "ar-SA", "hi-IN",
    "ja-JP", "ko-KR", "zh-CN", "zh-HK", "zh-TW", "vi-VN", "id-ID", "th-TH",
)
FEW_LOCALES = ("en-US", "en-GB", "es-ES", "fr-FR", "de-DE", "ja-JP", "zh-CN")
# fmt: on


@dataclass(frozen=True)
class Tier:
    code: str
    line: str
    blurb: str
    personas: tuple[str, ...]
    locales: tuple[str, ...] | None  # None: every locale espeak can speak
    hd: bool
    emotion_prompts: bool  # recommended for emoPrompt (the list's emotionPrompt)
    released: str  # first createTime of the tier


# fmt: off
TIERS = {t.code: t for t in (
    # code, line, blurb;
    # personas, locales, hd, emotion prompts, released
    Tier("S1", "Essential", "clear everyday narration",
         ("clear_m", "clear_f"), None, False, False, "2023-03-01"),
    Tier("S2", "Conversational", "casual, quick dialogue",
         ("chat_m", "chat_f"), None, False, False, "2023-06-15"),
    Tier("S3", "Narration", "warm long-form storytelling",
         ("story_m", "story_f"), MAJOR_LOCALES, True, False, "2023-10-02"),
    Tier("S4", "Broadcast", "steady news and documentary reads",
         ("news_m", "news_f"), MAJOR_LOCALES, True, False, "2024-01-20"),
    Tier("S5", "Advertising", "bright, energetic promos",
         ("promo_m", "promo_f"), MAJOR_LOCALES, True, False, "2024-04-08"),
    Tier("S6", "Characters", "grandparents and whisperers for stories and games",
         ("elder_f", "elder_m", "whisper_f", "whisper_m"), FEW_LOCALES, False, True, "2024-09-12"),
    Tier("S7", "Emotive", "expressive acting voices that follow emotion prompts",
         ("emote_m", "emote_f"), MAJOR_LOCALES, True, True, "2025-02-03"),
)}
# fmt: on


@dataclass(frozen=True)
class Preset:
    """One preset voice: its §3.2 record (without served URLs) and how to speak it."""

    record: PresetVoice  # without its preview and cover URLs (served_preset adds them)
    speaking: SpeakingVoice
    sample_text: str  # what its preview says, in its language

    @property
    def voice_id(self) -> str:
        return self.record.voice_id or ""


def _digest(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("|".join(parts).encode()).digest()[:8], "big")


def _language(espeak: str) -> str:
    return espeak.split("-")[0]


def _name(persona: Persona, espeak: str, voice_id: str) -> str:
    names = given_names(_language(espeak), persona.gender)
    return names[_digest(voice_id) % len(names)]


def _build(tier: Tier, persona: Persona, locale: str, espeak: str) -> Preset:
    voice_id = f"sv_{tier.code.lower()}_{locale.lower().replace('-', '_')}_{persona.key}"
    name = _name(persona, espeak, voice_id)
    locale_name, endonym = locale_names(locale)
    score = round(3.0 + (_digest("score", voice_id) % 151) / 100 + (0.45 if tier.hd else 0), 2)
    released = datetime.fromisoformat(tier.released).replace(tzinfo=timezone.utc)
    created = released + timedelta(days=_digest("created", voice_id) % 60)
    updated = created + timedelta(days=_digest("updated", voice_id) % 200)
    # A little per-locale pitch spread so two locales sharing an espeak voice still differ.
    pitch = min(100, max(0, persona.pitch + _digest("pitch", voice_id) % 9 - 4))
    speaking = SpeakingVoice(
        espeak,
        persona.variant,
        speech.Prosody(rate_wpm=persona.rate, pitch=pitch, pitch_range=persona.pitch_range),
    )
    record = PresetVoice(
        voice_id=voice_id,
        display_name=name,
        local_name=f"{name} ({endonym})",
        locale=locale,
        locale_name=locale_name,
        provider=tier.code,
        gender=persona.gender,
        age=persona.age,
        style=persona.style,
        role_play=persona.role_play,
        category=persona.category,
        description=(
            f"{name}: a {persona.personalities[0]} {persona.age} {persona.gender} "
            f"voice in {locale_name} from the {tier.line} line ({tier.blurb}). "
            f"Sandbox voice: espeak-ng '{espeak}' with variant "
            f"'{persona.variant}'."
        ),
        personalities=", ".join(persona.personalities),
        personality_list=list(persona.personalities),
        scenarios=", ".join(persona.scenarios),
        scenario_list=list(persona.scenarios),
        is_hd=int(tier.hd),
        is_preferred=int(score >= 4.5),
        supports_emotion_prompt=tier.emotion_prompts,
        score=score,
        create_time=created.isoformat().replace("+00:00", "Z"),
        update_time=updated.isoformat().replace("+00:00", "Z"),
    )
    sample = sample_text(_language(espeak))
    return Preset(record, speaking, sample)


@functools.lru_cache(maxsize=1)
def presets() -> tuple[Preset, ...]:
    """Every preset voice, in catalogue order (tier, locale, persona)."""
    spoken: dict[str, str] = {}
    for locale in sorted(locales.TARGET):
        try:
            spoken[locale] = speech.voice_for_locale(locale)
        except speech.SpeechError:
            continue  # espeak has no voice for it: no preset speaks that locale
    out: list[Preset] = []
    for tier in TIERS.values():
        for locale in tier.locales or tuple(spoken):
            if locale not in spoken:
                continue
            keys = tier.personas
            if tier.code == "S2":  # one voice a locale, genders alternating
                keys = (keys[_digest("S2", locale) % 2],)
            out.extend(_build(tier, PERSONAS[k], locale, spoken[locale]) for k in keys)
    return tuple(out)


@functools.lru_cache(maxsize=1)
def _by_id() -> dict[str, Preset]:
    return {p.voice_id: p for p in presets()}


def preset(voice_id: str) -> Preset | None:
    """The preset ``voice_id``, or None."""
    return _by_id().get(voice_id)


# --------------------------------------------------------------------------- words
# What the voices are called and what their previews say, per language.

# "Hello! This is my voice." in each language the catalogue speaks (by espeak language).
SAMPLE_TEXT = {
    "af": "Hallo! Dit is my stem.",
    "am": "ሰላም! ይህ የእኔ ድምጽ ነው።",
    "ar": "مرحبا! هذا صوتي.",
    "az": "Salam! Bu mənim səsimdir.",
    "be": "Прывітанне! Гэта мой голас.",
    "bg": "Здравейте! Това е моят глас.",
    "bn": "নমস্কার! এটা আমার কণ্ঠস্বর।",
    "bs": "Zdravo! Ovo je moj glas.",
    "ca": "Hola! Aquesta és la meva veu.",
    "cs": "Dobrý den! Tohle je můj hlas.",
    "cy": "Helo! Dyma fy llais.",
    "da": "Hej! Det her er min stemme.",
    "de": "Hallo! Das ist meine Stimme.",
    "el": "Γεια σας! Αυτή είναι η φωνή μου.",
    "en": "Hello! This is my voice.",
    "es": "¡Hola! Esta es mi voz.",
    "et": "Tere! See on minu hääl.",
    "eu": "Kaixo! Hau da nire ahotsa.",
    "fa": "سلام! این صدای من است.",
    "fi": "Hei! Tämä on minun ääneni.",
    "fr": "Bonjour ! Voici ma voix.",
    "ga": "Dia duit! Seo é mo ghlór.",
    "gu": "નમસ્તે! આ મારો અવાજ છે.",
    "he": "שלום! זה הקול שלי.",
    "hi": "नमस्ते! यह मेरी आवाज़ है।",
    "hr": "Bok! Ovo je moj glas.",
    "ht": "Bonjou! Sa a se vwa mwen.",
    "hu": "Szia! Ez az én hangom.",
    "hy": "Բարև! Սա իմ ձայնն է։",
    "id": "Halo! Ini suara saya.",
    "is": "Halló! Þetta er röddin mín.",
    "it": "Ciao! Questa è la mia voce.",
    "ja": "こんにちは！これがわたしのこえです。",
    "ka": "გამარჯობა! ეს ჩემი ხმაა.",
    "kk": "Сәлем! Бұл менің дауысым.",
    "ku": "Silav! Ev dengê min e.",
    "kn": "ನಮಸ್ಕಾರ! ಇದು ನನ್ನ ಧ್ವನಿ.",
    "ko": "안녕하세요! 이것은 제 목소리입니다.",
    "lt": "Labas! Tai mano balsas.",
    "lv": "Sveiki! Šī ir mana balss.",
    "mk": "Здраво! Ова е мојот глас.",
    "ml": "നമസ്കാരം! ഇത് എന്റെ ശബ്ദമാണ്.",
    "mr": "नमस्कार! हा माझा आवाज आहे.",
    "ms": "Helo! Ini suara saya.",
    "mt": "Bongu! Din hija l-vuċi tiegħi.",
    "my": "မင်္ဂလာပါ! ဒါ ကျွန်ုပ်ရဲ့ အသံပါ။",
    "nb": "Hei! Dette er stemmen min.",
    "ne": "नमस्ते! यो मेरो आवाज हो।",
    "nl": "Hallo! Dit is mijn stem.",
    "pa": "ਸਤ ਸ੍ਰੀ ਅਕਾਲ! ਇਹ ਮੇਰੀ ਆਵਾਜ਼ ਹੈ।",
    "pl": "Cześć! To jest mój głos.",
    "pt": "Olá! Esta é a minha voz.",
    "ro": "Bună! Aceasta este vocea mea.",
    "ru": "Здравствуйте! Это мой голос.",
    "si": "ආයුබෝවන්! මේ මගේ හඬයි.",
    "sk": "Dobrý deň! Toto je môj hlas.",
    "sl": "Živjo! To je moj glas.",
    "sq": "Përshëndetje! Ky është zëri im.",
    "sr": "Zdravo! Ovo je moj glas.",
    "sv": "Hej! Det här är min röst.",
    "sw": "Habari! Hii ni sauti yangu.",
    "ta": "வணக்கம்! இது என் குரல்.",
    "te": "నమస్కారం! ఇది నా గొంతు.",
    "th": "สวัสดี! นี่คือเสียงของฉัน",
    "tr": "Merhaba! Bu benim sesim.",
    "ug": "ياخشىمۇسىز! بۇ مېنىڭ ئاۋازىم.",
    "uk": "Привіт! Це мій голос.",
    "ur": "السلام علیکم! یہ میری آواز ہے۔",
    "uz": "Salom! Bu mening ovozim.",
    "vi": "Xin chào! Đây là giọng nói của tôi.",
    "cmn": "你好！这是我的声音。",
    "yue": "你好！呢個係我嘅聲音。",
}

# Given names per language family, "female | male"; other languages use the first row.
_NAMES = {
    "": "Ava Maya Lena Sofia Nora Iris Clara Emma Lucia Zara | Leo Adam Noah Felix Omar Ivan "
    "Hugo Elias Theo Milan",
    "en": "Ava Emma Olivia Grace Chloe Ruby Harper Isla | Liam Noah Oliver Jack Henry Leo "
    "Ethan Samuel",
    "es": "Lucía Sofía Valentina Camila Elena Paula | Mateo Diego Santiago Pablo Javier Hugo",
    "fr": "Camille Léa Chloé Manon Inès Juliette | Louis Hugo Gabriel Arthur Jules Lucas",
    "de": "Mia Hannah Lena Marie Emilia Clara | Lukas Felix Jonas Paul Maximilian Leon",
    "it": "Giulia Sofia Aurora Chiara Martina | Leonardo Francesco Lorenzo Matteo Marco",
    "pt": "Beatriz Mariana Ana Júlia Larissa | João Pedro Gabriel Lucas Rafael",
    "ja": "Yui Haruka Sakura Aoi Hina | Haruto Ren Sota Yuto Kaito",
    "cmn": "Xiaoxiao Yunxi Mei Lan Hui | Wei Jun Hao Ming Lei",
    "yue": "Hiu Gaai Wing Man Ka Yan | Wan Lung Chi Kin Ho Yin",
    "ko": "Jiwoo Seoyeon Minji Haeun | Minjun Seojun Jihoon Hyun",
    "ar": "Layla Amira Salma Noor Yasmin | Omar Karim Youssef Hamza Tariq",
    "hi": "Ananya Priya Aditi Kavya | Arjun Rohan Vivaan Aarav",
    "ru": "Anna Daria Sofia Polina | Dmitri Ivan Mikhail Artem",
}


def sample_text(language: str) -> str:
    """What a preview says in espeak language ``language`` (English when there is none)."""
    return SAMPLE_TEXT.get(language, SAMPLE_TEXT["en"])


def given_names(language: str, gender: str) -> list[str]:
    """The names a voice of ``gender`` speaking espeak language ``language`` may be given."""
    pool = _NAMES.get(language, _NAMES[""])
    female, male = (names.split() for names in pool.split("|"))
    return female if gender == "female" else male


def locale_names(locale: str) -> tuple[str, str]:
    """``("English (United States)", "English")``: the English label and the endonym.

    Read from ``data/locale_names.json``, written from CLDR for every target locale by
    ``tests/test_catalogue.py`` (which fails, and says how to write it again, when the two
    differ): working them out with babel on every start took most of a second.
    """
    return _locale_table().get(locale, (locale, locale))


@functools.lru_cache(maxsize=1)
def _locale_table() -> dict[str, tuple[str, str]]:
    table = json.loads(_TABLE.read_text(encoding="utf-8"))
    return {locale: (label, endonym) for locale, (label, endonym) in table.items()}


_TABLE = Path(__file__).with_name("data") / "locale_names.json"
