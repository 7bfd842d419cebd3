"""A course, not one clip: many files into several locales as one batch that survives any
crash, never pays twice, and shows itself as a live table.

>>> course = client.dubbing.batch("lessons/*.mp4", targets=["fr-FR", "de-DE"], out="dubs")
>>> course                                   # live: one row per file and locale
>>> course.wait().to_frame()

Modules: ``plan`` (files, locales and options checked, measured, quoted; rows and revisions),
``ledger`` (SQLite; ``postgres`` for several processes or hosts: rows, claims, the create
lock), ``runner`` (uploads ahead, one create at a time, waiting, downloads), ``recovery``
(the task of a create whose answer was lost), ``outputs`` (stable names, written whole),
``batch`` (:class:`DubbingBatch`, what a user holds), ``view`` (the live table), ``report``
(the course report). It sits above the resources, like the studio and the classroom, and
creates dubs only through ``client.dubbing``.
"""

from .batch import DubbingBatch, read_rows, start_batch
from .rows import Row

__all__ = ["DubbingBatch", "Row", "read_rows", "start_batch"]
