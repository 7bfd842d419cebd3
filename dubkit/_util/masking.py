"""How a key or secret is shown anywhere a person may see it."""

from __future__ import annotations


def mask_key(api_key: str | None) -> str:
    """``sk_live_abcdef123456`` -> ``sk_…3456``: enough to tell keys apart, never enough to use."""
    if not api_key:
        return "<none>"
    prefix = api_key.split("_", 1)[0] + "_" if "_" in api_key[:8] else ""
    return f"{prefix}…{api_key[-4:]}" if len(api_key) >= 12 else f"{prefix}…"
