"""The service's published prices, in credits: the one table the sandbox charges from and that
dubkit's quotes and budget guard read.

Source: the service's public pricing guide (its pricing page and the products' guides), as
restated in issue 24 of this project, read 2026-11-26:

* media translation (dubbing): 60 credits per minute of source audio/video, a clip under a
  minute billed as a full minute; lip sync adds 90 credits per minute;
* text to speech: about 2 credits per 200 characters;
* text translation: 1 credit per 100 characters of all segments' text, rounded up;
* voice clone: 10 credits when it succeeds;
* asset calls (uploads, material and voice lists, deletes): free;
* credits are deducted when a task is accepted.

Where the guide is not exact, the rule below is dubkit's reading, and a quote made from it is
labelled an estimate: minutes past the first are billed per started minute (the guide's "under
a minute billed as a full minute", applied to every minute). Text to speech is billed as the
guide reads, per request: 2 credits per started 200 characters of all its lines' text together
(the guide's "~2 credits per 200 characters", totals that "scale with character count"); a line
that fails gives back its share of that charge, in proportion to its characters.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

DUB_PER_MINUTE = 60
LIPSYNC_PER_MINUTE = 90
SPEECH_CREDITS, SPEECH_CHARACTERS = 2, 200
TRANSLATION_CREDITS, TRANSLATION_CHARACTERS = 1, 100
CLONE_CREDITS = 10
PRICES_READ_ON = "2026-11-26"


@dataclass(frozen=True)
class Price:
    """One row of the published table."""

    product: str
    credits: int
    per: str
    rule: str


PRICES: tuple[Price, ...] = (
    Price("dubbing", DUB_PER_MINUTE, "minute of source", "a clip under a minute is a full minute"),
    Price("lip sync", LIPSYNC_PER_MINUTE, "minute of source", "on top of dubbing, video only"),
    # Pricing guide: "~2 credits per 200 characters", totals "scale with character count":
    # the request's characters together, not each line's rounded up on its own.
    Price(
        "text to speech",
        SPEECH_CREDITS,
        f"{SPEECH_CHARACTERS} characters",
        "about; all lines of a request together, rounded up",
    ),
    Price(
        "text translation",
        TRANSLATION_CREDITS,
        f"{TRANSLATION_CHARACTERS} characters",
        "all segments' text together, rounded up",
    ),
    Price("voice clone", CLONE_CREDITS, "clone", "only when it succeeds"),
    Price("asset calls", 0, "call", "uploads, material and voice lists, deletes"),
)


def speech_credits(texts: Iterable[str]) -> int:
    """A TTS request: 2 credits per started 200 characters of all its lines' text together."""
    return SPEECH_CREDITS * math.ceil(sum(len(t) for t in texts) / SPEECH_CHARACTERS)


def speech_shares(texts: Iterable[str]) -> list[int]:
    """Each line's share of its request's :func:`speech_credits`, in proportion to its
    characters, in whole credits that add up to the charge exactly (largest remainders, ties to
    the earlier line): a failed line gives back its share, so a request nets at most its charge
    and one whose every line failed nets 0."""
    texts = list(texts)
    sizes = [len(t) for t in texts]
    total, characters = speech_credits(texts), sum(sizes)
    if not characters:
        return [0] * len(sizes)
    shares = [total * size // characters for size in sizes]  # whole credits, exactly
    remainders = [total * size % characters for size in sizes]
    by_remainder = sorted(range(len(sizes)), key=lambda i: (-remainders[i], i))
    for i in by_remainder[: total - sum(shares)]:
        shares[i] += 1
    return shares


def translation_credits(texts: Iterable[str]) -> int:
    """A translation request: 1 credit per started 100 characters of all its segments."""
    return TRANSLATION_CREDITS * math.ceil(sum(len(t) for t in texts) / TRANSLATION_CHARACTERS)


def dub_minutes(seconds: float) -> int:
    """Billed minutes of a source ``seconds`` long: at least one, then per started minute."""
    return max(1, math.ceil(round(seconds, 3) / 60))


def dub_credits(seconds: float, *, lipsync: bool = False) -> int:
    """A media translation of ``seconds`` of source, with or without lip sync."""
    per_minute = DUB_PER_MINUTE + (LIPSYNC_PER_MINUTE if lipsync else 0)
    return per_minute * dub_minutes(seconds)


# --------------------------------------------------------------------------- quotes


@dataclass(frozen=True)
class Quote:
    """What a call will cost, from the table above, before it is sent.

    ``estimate``: the service decides the exact figure (text to speech is "about" its price;
    minutes past the first are dubkit's reading), so it may differ a little.
    """

    credits: int
    product: str
    basis: str
    estimate: bool = False

    def __str__(self) -> str:
        label = " (estimate)" if self.estimate else ""
        return f"{_credits(self.credits)}{label}: {self.product}, {self.basis}"

    def __repr__(self) -> str:
        return f"<Quote {self}>"

    def __add__(self, other: Quote) -> Quote:
        product = self.product if self.product == other.product else "several products"
        return Quote(
            self.credits + other.credits,
            product,
            f"{self.basis}; {other.basis}",
            self.estimate or other.estimate,
        )


def _credits(n: float) -> str:
    return _count(n, "credit")


def _count(n: float, thing: str) -> str:
    return f"{n:g} {thing}{'' if n == 1 else 's'}"


def speech_quote(requests: Iterable[Iterable[str]]) -> Quote:
    """``requests``: each request's line texts (each request is rounded up on its own: a
    :meth:`~dubkit.resources.tts.TTSResource.batch` sends one a chunk of 50 lines)."""
    batches = [list(texts) for texts in requests]
    characters = sum(len(t) for texts in batches for t in texts)
    per = f" in {len(batches)} requests" if len(batches) > 1 else ""
    return Quote(
        sum(speech_credits(texts) for texts in batches),
        "text to speech",
        f"{_count(sum(map(len, batches)), 'line')}{per}, {_count(characters, 'character')}: "
        f"{SPEECH_CREDITS} credits per started {SPEECH_CHARACTERS} characters of a request",
        estimate=True,
    )


def translation_quote(requests: Iterable[Iterable[str]]) -> Quote:
    """``requests``: each request's segment texts (each request is rounded up on its own)."""
    batches = [list(texts) for texts in requests]
    characters = sum(len(t) for texts in batches for t in texts)
    per = f" in {len(batches)} requests" if len(batches) > 1 else ""
    return Quote(
        sum(translation_credits(texts) for texts in batches),
        "text translation",
        f"{_count(sum(map(len, batches)), 'segment')}{per}, {_count(characters, 'character')}: "
        f"{TRANSLATION_CREDITS} credit per started {TRANSLATION_CHARACTERS} characters",
    )


def clone_quote() -> Quote:
    return Quote(CLONE_CREDITS, "voice clone", "one voice, given back if the clone fails")


def dub_quote(seconds: float, *, lipsync: bool = False) -> Quote:
    """Exact for a source under a minute; past it, per started minute is dubkit's reading."""
    minutes = dub_minutes(seconds)
    rate = (
        f"{DUB_PER_MINUTE} + {LIPSYNC_PER_MINUTE} for lip sync" if lipsync else f"{DUB_PER_MINUTE}"
    )
    return Quote(
        dub_credits(seconds, lipsync=lipsync),
        "dubbing",
        f"{seconds:g} s of source billed as {_count(minutes, 'minute')} at {rate} credits a minute",
        estimate=minutes > 1,
    )


def quote_request(
    product: str, body: Any, *, seconds: float | None = None, video: bool = True
) -> Quote | None:
    """The quote of one create request of ``product`` (None: that product is not priced
    here). A dub needs its material's ``seconds`` and whether it is a ``video``."""
    if product == "tts":
        return speech_quote([[line.text for line in body.data]])
    if product == "translation":
        return translation_quote([[segment.text for segment in body.segments]])
    if product == "clone":
        return clone_quote()
    if product == "dubbing":
        if seconds is None:
            raise ValueError("a dub's quote needs its material's duration")
        options = body.options
        asked = bool(options and options.lipsync and options.lipsync.enable)
        return dub_quote(seconds, lipsync=asked and video)
    return None


__all__ = [
    "Quote",
    "speech_quote",
    "translation_quote",
    "clone_quote",
    "dub_quote",
    "quote_request",
    "PRICES",
    "PRICES_READ_ON",
    "Price",
    "CLONE_CREDITS",
    "DUB_PER_MINUTE",
    "LIPSYNC_PER_MINUTE",
    "speech_credits",
    "speech_shares",
    "translation_credits",
    "dub_minutes",
    "dub_credits",
]
