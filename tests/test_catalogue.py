"""The sandbox's preset catalogue: its locale names come from a table written from CLDR, so
reading it replaces most of a second of babel work on every sandbox start. The table must still
say what CLDR says, for every locale the catalogue can hold; with ``DUBKIT_UPDATE_LOCALE_TABLE=1``
this test writes it again (after ``locales.TARGET`` changed)."""

from __future__ import annotations

import json
import os

from dubkit import locales
from dubkit.sandbox import catalogue


def cldr_locale_names(locale: str) -> tuple[str, str]:
    """``catalogue.locale_names`` worked out from CLDR through babel (a test dependency)."""
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


def test_locale_table_matches_cldr_for_every_target_locale():
    cldr = {locale: cldr_locale_names(locale) for locale in sorted(locales.TARGET)}
    if os.environ.get("DUBKIT_UPDATE_LOCALE_TABLE") == "1":
        rows = [
            f"{json.dumps(locale)}: {json.dumps(names, ensure_ascii=False)}"
            for locale, names in cldr.items()
        ]
        catalogue._TABLE.write_text("{\n" + ",\n".join(rows) + "\n}\n", encoding="utf-8")
        catalogue._locale_table.cache_clear()
    table = {locale: catalogue.locale_names(locale) for locale in sorted(locales.TARGET)}
    assert table == cldr, (
        "write it again: DUBKIT_UPDATE_LOCALE_TABLE=1 pytest tests/test_catalogue.py"
    )
    assert table["en-US"] == ("English (United States)", "English")
    assert table["de-DE"] == ("German (Germany)", "Deutsch")
