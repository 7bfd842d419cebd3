"""JupyterHub recipe: each user's server gets their own key from the class file, so no
student ever sees a key (none is pasted, none is in a notebook)::

    # jupyterhub_config.py
    from dubkit.classroom.hub import class_environment
    c.Spawner.pre_spawn_hook = class_environment("/srv/class/class.json", teachers={"teacher"})

The class file is read at every spawn, so ``dubkit class add`` or ``remove`` counts from the
user's next server start. A student gets ``DUBKIT_API_KEY`` and ``DUBKIT_BASE_URL``; a
teacher gets ``DUBKIT_CLASS_FILE`` and the sandbox's admin token (from ``admin_token=`` or the
hub's own ``$DUBKIT_SANDBOX_ADMIN_TOKEN``) for the teacher's view. A user in neither list gets
nothing and so runs on their own embedded sandbox. The hub passes none of its own environment
to a server but what ``Spawner.env_keep`` names, so the admin token reaches teachers only.
Keep the class file readable by the hub's user alone (it is written 0600), and use a spawner
that runs each user as their own system user (or in their own container) so students cannot
read it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..sandbox_handle import TOKEN_ENV
from .classroom import CLASS_FILE_ENV, Classroom

log = logging.getLogger("dubkit.classroom")


def class_environment(
    class_file: str | Path, *, teachers: Iterable[str] = (), admin_token: str | None = None
) -> Callable[[Any], None]:
    """A ``Spawner.pre_spawn_hook`` that sets each user's dubkit environment."""
    path = Path(class_file).resolve()
    teacher_names = set(teachers)

    def hook(spawner: Any) -> None:
        name = spawner.user.name
        given: dict[str, str] = {}
        if name in teacher_names:
            given[CLASS_FILE_ENV] = str(path)
            token = admin_token or os.environ.get(TOKEN_ENV)
            if token:
                given[TOKEN_ENV] = token
        else:
            room = Classroom.open(path)
            if name in room.students:
                given = room.environment(name)
            else:
                log.warning("dubkit: %s is not in the class file %s; no key given", name, path)
        # A new dict: the configured one may be shared by every spawner.
        spawner.environment = {**spawner.environment, **given}

    return hook
