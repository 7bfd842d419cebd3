"""Notebook front ends: which one shows this kernel's output, and how its players get their bytes.

>>> dubkit.frontends.current()                 # Frontend('jupyter', media='proxy', ...)
>>> dubkit.configure(frontend="vscode")        # force it (or DUBKIT_FRONTEND=vscode)

* ``detect``: the front end from its marks, and what it allows (one table)
* ``media``: how a view writes a player: embedded, the service's URL, or a key for the channel
* ``channel``: the live channel (an anywidget) that gives keyed players their sources
  (imported when first needed: it loads anywidget)
"""

from .detect import (
    FRONTENDS,
    MEDIA_PATHS,
    Frontend,
    MediaPath,
    configure,
    current,
    detect,
    in_voila,
)

__all__ = [
    "FRONTENDS",
    "MEDIA_PATHS",
    "Frontend",
    "MediaPath",
    "configure",
    "current",
    "detect",
    "in_voila",
]
