"""Interactive views for notebooks (ipywidgets); each shows static HTML in saved notebooks.

``TaskMonitor`` (:func:`monitor`) a task cell that refreshes itself until the task ends
``VoiceBrowser``  filters, a page of voices with previews, an audition panel
``ClonePanel``    pick a recording, clone it, hear reference against clone
``DubbingView``   one dub, or the original beside several (:func:`compare`)
``ScriptEditor``  a dub's lines to edit and re-dub; ``CheckView`` its check, each line playable
``UploadProgressBar`` an upload's progress; ``EventLog`` what a webhook receiver got
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..results import Task
from .check import CheckView
from .clone import ClonePanel
from .events import EventLog
from .media import DubbingView, compare
from .script_editor import ScriptEditor
from .tasks import TaskMonitor
from .uploads import UploadProgressBar
from .voices import VoiceBrowser


def monitor(tasks: Task | Iterable[Task], **options: Any) -> TaskMonitor:
    """A cell that refreshes itself until every task ends (see :class:`TaskMonitor`).

    >>> dubkit.monitor(client.dubbing.create("talk.mp4", target="fr-FR"))
    """
    return TaskMonitor(tasks, **options)


__all__ = [
    "CheckView",
    "ClonePanel",
    "DubbingView",
    "EventLog",
    "ScriptEditor",
    "TaskMonitor",
    "UploadProgressBar",
    "VoiceBrowser",
    "compare",
    "monitor",
]
