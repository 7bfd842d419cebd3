"""Using a live-channel widget's controls as its browser does: the action message its page
sends over the widget's comm (the control's action, its key and value, and every field)."""

from __future__ import annotations

from typing import Any


def use(widget: Any, action: str, key: str = "", value: Any = None, **fields: Any) -> None:
    """Press, tick, pick or change the control ``action`` (for the row ``key``) with the
    named fields as the page holds them (a field's name with ``-`` written ``_``)."""
    message = {"type": "action", "action": action, "key": key, "value": value}
    shown = {name.replace("_", "-"): field for name, field in fields.items()}
    widget._asked(widget, {**message, "fields": shown}, [])
