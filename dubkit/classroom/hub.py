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
The class file is written 0600: make it as the teacher's own system user (`dubkit class
create` run by the teacher), so the teacher's server can read it and the hub, running as root
with a spawner that runs each user as their own system user (or in their own container), reads
it at each spawn; students cannot. A class file that cannot be read is logged and gives no
one a key (each server then says it runs on its own sandbox) rather than stopping every spawn.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..sandbox_handle import TOKEN_ENV
from .classroom import CLASS_FILE_ENV, Classroom

log = logging.getLogger("dubkit.classroom")


def class_environment(
    class_file: str | Path, *, teachers: Iterable[str] = (), admin_token: str | None = None
) -> Callable[[Any], None]:
    """A ``Spawner.pre_spawn_hook`` that sets each user's dubkit environment."""
    path = Path(class_file).resolve()
    teacher_names = {t.strip().lower() for t in teachers}  # the hub lowercases user names

    def hook(spawner: Any) -> None:
        name = spawner.user.name
        given: dict[str, str] = {}
        if name in teacher_names:
            given[CLASS_FILE_ENV] = str(path)
            token = admin_token or os.environ.get(TOKEN_ENV)
            if token:
                given[TOKEN_ENV] = token
        else:
            try:
                room = Classroom.open(path)
            except ValidationError as exc:
                log.error("dubkit: no key for %s: %s", name, exc)
                room = None
            if room is not None and name in room.students:
                given = dict(room.environment(name))
            elif room is not None:
                log.warning("dubkit: %s is not in the class file %s; no key given", name, path)
        # A new dict: the configured one may be shared by every spawner.
        spawner.environment = {**spawner.environment, **given}

    return hook
