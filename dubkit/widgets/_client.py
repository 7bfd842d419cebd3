"""The client a widget calls: a widget's controls run in its own callbacks and threads, where
an :class:`~dubkit.AsyncClient`'s calls (which belong to its event loop) cannot be awaited;
so a widget given one uses its sync twin (``AsyncClient.blocking``), the same place, key and
budget."""

from __future__ import annotations

from typing import TypeVar

C = TypeVar("C")


def sync_client(client: C) -> C:
    """``client``, or the sync twin of an async client."""
    twin: C = getattr(client, "blocking", client)
    return twin
