"""How a key or secret is shown anywhere a person may see it."""

from __future__ import annotations

import re

# What a secret looks like in text a server sent back (an echoed header, a key in a message).
_SECRET_IN_TEXT = re.compile(
    r"(?i)(bearer\s+)\S+|\b(sk|whsec|pk|rk)_[A-Za-z0-9_\-]{8,}|(token|secret|key|signature)=[^&\s\"']+"
)


def mask_secrets(text: str) -> str:
    """``text`` with anything shaped like a key, token or signature replaced by ``…``."""
    return _SECRET_IN_TEXT.sub(
        lambda m: (m.group(1) or m.group(3) and m.group(3) + "=" or "") + "…", text
    )


def mask_key(api_key: str | None) -> str:
    """``sk_live_abcdef123456`` -> ``sk_…3456``: enough to tell keys apart, never enough to use."""
    if not api_key:
        return "<none>"
    prefix = api_key.split("_", 1)[0] + "_" if "_" in api_key[:8] else ""
    return f"{prefix}…{api_key[-4:]}" if len(api_key) >= 12 else f"{prefix}…"
