"""A class on one sandbox: keys from a roster, quotas, and the teacher's view.

>>> room = Classroom.create("roster.csv", "class.json", credits=500, max_tasks=3)
>>> ClassView(room)                                # every student, refreshing itself

``dubkit class create|add|remove|topup|reset|disable|enable|limits|show|view`` does the same
from a terminal, and :func:`dubkit.classroom.hub.class_environment` gives each JupyterHub user
their own key. Modules: ``roster`` (the CSV), ``classroom`` (the class file and the levers),
``report`` (the table), ``view`` (the widget), ``hub`` (the JupyterHub hook). See docs/teaching.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .classroom import CLASS_FILE_ENV, Classroom, class_file_path
from .report import ClassTable
from .roster import Student, read_roster

if TYPE_CHECKING:
    from .view import ClassView


def __getattr__(name: str) -> Any:
    if name == "ClassView":  # a widget: loaded on first use, not by every `dubkit class` command
        from .view import ClassView

        return ClassView
    raise AttributeError(f"module 'dubkit.classroom' has no attribute {name!r}")


__all__ = [
    "CLASS_FILE_ENV",
    "ClassTable",
    "ClassView",
    "Classroom",
    "Student",
    "class_file_path",
    "read_roster",
]
