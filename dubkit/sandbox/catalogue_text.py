"""What the preset catalogue's voices are called and what their previews say, per language.

Words only (given names, locale labels, a greeting in each language); the rules that pick
among them are in :mod:`dubkit.sandbox.catalogue`.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from .. import locales

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

    Read from ``data/locale_names.json``, which :func:`cldr_locale_names` wrote for every
    target locale (run it again when ``locales.TARGET`` changes; a test compares the two):
    working them out with babel on every start took most of a second.
    """
    return _locale_table().get(locale, (locale, locale))


@functools.lru_cache(maxsize=1)
def _locale_table() -> dict[str, tuple[str, str]]:
    table = json.loads(_TABLE.read_text(encoding="utf-8"))
    return {locale: (label, endonym) for locale, (label, endonym) in table.items()}


def cldr_locale_names(locale: str) -> tuple[str, str]:
    """:func:`locale_names` worked out from CLDR through babel (a test dependency)."""
    from babel import Locale, UnknownLocaleError

    special = {
        "ar-XA": ("Arabic (Pan-Arab)", "العربية"),
        "nan-CN": ("Min Nan Chinese (China)", "閩南語"),
        "wuu-CN": ("Wu Chinese (China)", "吴语"),
    }
    if locale in special:
        return special[locale]
    parts = locale.split("-")
    dialect = parts[2].capitalize() if len(parts) == 3 and parts[1] == "CN" else None
    try:
        parsed = Locale.parse("_".join(parts[:2]) if dialect else locale.replace("-", "_"))
    except (UnknownLocaleError, ValueError):
        return locale, locale
    label = parsed.get_display_name("en") or locale
    if dialect:
        label = f"{parsed.get_language_name('en')} ({dialect} dialect, China)"
    return label, parsed.get_language_name(parsed) or label


def write_locale_table() -> None:
    """Write ``data/locale_names.json`` from CLDR for every target locale."""
    rows = [
        f"{json.dumps(locale)}: {json.dumps(cldr_locale_names(locale), ensure_ascii=False)}"
        for locale in sorted(locales.TARGET)
    ]
    _TABLE.write_text("{\n" + ",\n".join(rows) + "\n}\n", encoding="utf-8")


_TABLE = Path(__file__).with_name("data") / "locale_names.json"
