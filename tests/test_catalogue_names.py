"""The catalogue's locale names come from a table written from CLDR (issue 15, item 3): reading
it replaces most of a second of babel work on every sandbox start. The table must still say
what CLDR says, for every locale the catalogue can hold."""

from __future__ import annotations

from dubkit import locales
from dubkit.sandbox import catalogue_text


def test_locale_table_matches_cldr_for_every_target_locale():
    table = {locale: catalogue_text.locale_names(locale) for locale in sorted(locales.TARGET)}
    cldr = {locale: catalogue_text.cldr_locale_names(locale) for locale in sorted(locales.TARGET)}
    assert table == cldr
    assert table["en-US"] == ("English (United States)", "English")
    assert table["de-DE"] == ("German (Germany)", "Deutsch")
