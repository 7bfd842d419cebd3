"""Blind A/B: the takes in a shuffled order under letters, the voices shown only once you pick.

Order hides identity too (the catalogue lists the same voices first), so a round is shuffled;
pass a seeded ``random.Random`` for a repeatable order.

>>> blind = BlindRound(takes, random.Random(7))
>>> blind.letters                          # ['A', 'B', 'C']
>>> pick = blind.pick("B")                 # who B was, and who the others were
>>> pick.voice_id, pick.lineup             # 'sv_…', {'A': 'sv_…', 'B': 'sv_…', 'C': 'sv_…'}
"""

from __future__ import annotations

import html
import random
import string
from collections.abc import Sequence
from dataclasses import dataclass

from .takes import Take


@dataclass(frozen=True)
class Pick:
    """One blind round's choice: the letter picked, its voice, and the whole line-up."""

    round: int
    text: str
    letter: str
    voice_id: str
    name: str
    provider: str | None
    lineup: dict[str, str]  # letter -> voice id
    names: dict[str, str]  # letter -> voice name

    def html(self) -> str:
        others = ", ".join(
            f"{html.escape(letter)}: {html.escape(name)}"
            for letter, name in self.names.items()
            if letter != self.letter
        )
        return (
            f"<li class='dubkit-pick'>Round {self.round}: you picked "
            f"<b>{html.escape(self.letter)}</b>, {html.escape(self.name)} "
            f"(<code>{html.escape(self.voice_id)}</code>)"
            + (f" over {others}" if others else "")
            + "</li>"
        )


class BlindRound:
    """Takes under letters in a shuffled order, until :meth:`pick` reveals them."""

    def __init__(self, takes: Sequence[Take], rng: random.Random | None = None) -> None:
        order = list(takes)
        (rng or random.Random()).shuffle(order)
        if len(order) > len(string.ascii_uppercase):
            raise ValueError("a blind round has at most 26 takes")
        self.takes: dict[str, Take] = dict(zip(string.ascii_uppercase, order))
        self.picked: Pick | None = None

    @property
    def letters(self) -> list[str]:
        return list(self.takes)

    @property
    def revealed(self) -> bool:
        return self.picked is not None

    def pick(self, letter: str, round_number: int = 1) -> Pick:
        """Choose ``letter``; the round is revealed (a second pick changes nothing)."""
        if self.picked is not None:
            return self.picked
        if letter not in self.takes:
            raise ValueError(
                f"no take {letter!r} in this round; the takes are {', '.join(self.letters)}"
            )
        take = self.takes[letter]
        self.picked = Pick(
            round_number,
            take.text,
            letter,
            take.voice.voice_id,
            take.voice.name,
            take.voice.provider,
            {k: t.voice.voice_id for k, t in self.takes.items()},
            {k: t.voice.name for k, t in self.takes.items()},
        )
        return self.picked
