"""What calls return: typed results that render themselves through :mod:`dubkit.views`.

A result holds plain data and, where it needs the network (downloading a clip, reading a
subtitle file), the transport it came through. It never imports a resource or a widget.
"""

from .clone import ABPlayers, Clone
from .dubbing import DubbingResult, MediaFile, Script, ScriptLine, Subtitles
from .materials import Material, MaterialList
from .redub import Redub
from .speech import Speech, SpeechLine
from .task import RESULT_TYPES, AsyncTask, Task, TaskList, canonical_status, task_for
from .translation import Translation
from .voices import Audition, VoiceList

__all__ = [
    "ABPlayers",
    "Audition",
    "Clone",
    "DubbingResult",
    "Material",
    "MaterialList",
    "MediaFile",
    "RESULT_TYPES",
    "Redub",
    "Script",
    "ScriptLine",
    "Speech",
    "SpeechLine",
    "Subtitles",
    "Task",
    "AsyncTask",
    "task_for",
    "TaskList",
    "Translation",
    "VoiceList",
    "canonical_status",
]
