"""A translation as a table: source, translation, error; the sandbox's label when it applies."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd  # imported where a table is made: pandas is slow to import


PSEUDO_NOTE = (
    "Sandbox pseudo-translation: made-up words, stable per word and language; "
    "not a real translation."
)


def translation_html(frame: pd.DataFrame, *, pseudo: bool) -> str:
    note = f"<p><em>{html.escape(PSEUDO_NOTE)}</em></p>" if pseudo else ""
    table: str = frame.to_html(na_rep="", escape=True)
    return note + table
