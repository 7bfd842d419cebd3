"""A class on one sandbox: keys from a roster, quotas, and the teacher's view.

>>> room = Classroom.create("roster.csv", "class.json", credits=500, max_tasks=3)
>>> ClassView(room)                                # every student, refreshing itself

``dubkit class create|add|remove|topup|reset|disable|enable|limits|show|view`` does the same
from a terminal, and :func:`dubkit.classroom.hub.class_environment` gives each JupyterHub user
their own key. Modules: ``roster`` (the CSV), ``classroom`` (the class file and the levers),
``report`` (the table), ``view`` (the widget), ``hub`` (the JupyterHub hook). See docs/teaching.md.
"""

from .classroom import CLASS_FILE_ENV, Classroom, class_file_path
from .report import ClassTable
from .roster import Student, read_roster
from .view import ClassView

__all__ = [
    "CLASS_FILE_ENV",
    "ClassTable",
    "ClassView",
    "Classroom",
    "Student",
    "class_file_path",
    "read_roster",
]
