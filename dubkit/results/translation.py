"""A translation result, aligned with its source segments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._transport import Transport
from .._util.words import count
from ..schema import TranslateItem, TranslateResult, TranslationContext
from ..views.translation import translation_html
from ._lines import lined_up

if TYPE_CHECKING:
    import pandas as pd  # imported where a table is made: pandas is slow to import


class Translation:
    """A translation result, aligned with its source segments."""

    def __init__(
        self,
        result: TranslateResult,
        sources: Sequence[str | None] | None = None,
        *,
        pseudo: bool = False,
    ) -> None:
        self.raw = result
        self.task_id = result.task_id
        self.items: list[TranslateItem] = result.items
        if sources is not None:  # one item a segment sent, whatever the answer held
            self.items = lined_up(
                result.items, len(sources), lambda why: TranslateItem(error_message=why), "items"
            )
        self.sources = list(sources) if sources is not None else [None] * len(self.items)
        # The sandbox labels its results; trust the label, not where the client points.
        self.pseudo = pseudo or is_pseudo(result)

    @classmethod
    def from_task(
        cls, transport: Transport, raw: dict[str, Any], context: TranslationContext | None
    ) -> Translation:
        return cls(transport.read(TranslateResult, raw), context.sources if context else None)

    def __len__(self) -> int:
        return len(self.items)

    @property
    def texts(self) -> list[str | None]:
        return [item.text for item in self.items]

    @property
    def errors(self) -> dict[int, str]:
        """Index -> error message of every segment that failed."""
        return {i: item.error_message for i, item in enumerate(self.items) if item.error_message}

    def to_frame(self) -> pd.DataFrame:
        """source | translation | error; ``error`` is None for a segment that succeeded."""
        import pandas as pd

        # object dtype: pandas would infer a string column and show "no error" as NaN
        # wherever another segment failed, and as None where none did.
        return pd.DataFrame(
            {
                "source": self.sources,
                "translation": self.texts,
                "error": pd.Series([item.error_message for item in self.items], dtype=object),
            }
        )

    def __repr__(self) -> str:
        label = ", pseudo" if self.pseudo else ""
        return f"Translation({count(len(self), 'segment')}, {len(self.errors)} failed{label})"

    def _repr_html_(self) -> str:
        return translation_html(self.to_frame(), pseudo=self.pseudo)


def is_pseudo(result: TranslateResult) -> bool:
    """Whether the sandbox made this result (it labels its engine ``sandbox-…``)."""
    return (result.engine or "").startswith("sandbox")
