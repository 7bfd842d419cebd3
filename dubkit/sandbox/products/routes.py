"""Which handler answers each operation: one explicit table, checked on import.

A handler takes a :class:`~dubkit.sandbox.call.Call` typed with its operation's request model
(see :data:`dubkit.schema.OPERATIONS`) and answers the envelope's ``data``.
"""

from __future__ import annotations

from ...schema import OPERATIONS
from ..call import Handler
from . import clone, materials, media, tasks, translate, tts, voices

HANDLERS: dict[str, Handler] = {
    "tts.create": tts.create,
    "tts.create_async": tts.create_async,
    "translate.create": translate.create,
    "translate.create_async": translate.create_async,
    "clone.create": clone.create,
    "clone.create_async": clone.create_async,
    "media.create_async": media.create_async,
    "tasks.list": tasks.list_tasks,
    "tasks.detail": tasks.detail,
    "tasks.delete": tasks.delete,
    "materials.gen_upload_url": materials.gen_upload_url,
    "materials.complete": materials.complete,
    "materials.multipart_initiate": materials.multipart_initiate,
    "materials.multipart_presign": materials.multipart_presign,
    "materials.multipart_complete": materials.multipart_complete,
    "materials.multipart_abort": materials.multipart_abort,
    "materials.list": materials.list_materials,
    "materials.delete": materials.delete,
    "voices.presets": voices.list_presets,
    "voices.clones": voices.list_clones,
    "voices.rename": voices.rename_clone,
    "voices.delete": voices.delete_clone,
}


def _check(table: dict[str, Handler]) -> None:
    """Every operation has a handler of its own, and nothing else is in the table."""
    names = [op.name for op in OPERATIONS]
    missing = [name for name in names if name not in table]
    unknown = sorted(set(table) - set(names))
    shared = len(set(table.values())) != len(table)
    if missing or unknown or shared:
        raise RuntimeError(
            f"sandbox handler table: missing {missing}, unknown {unknown}"
            + (", one function answers two operations" if shared else "")
        )


_check(HANDLERS)
