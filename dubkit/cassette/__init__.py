"""Record a lesson once with a key; replay it anywhere with none, offline.

>>> client = dubkit.connect(record="lesson.dubkit")   # with DUBKIT_API_KEY: the service
>>> client = dubkit.connect(replay="lesson.dubkit")   # no key: the cassette, then the sandbox

(or ``DUBKIT_RECORD`` / ``DUBKIT_REPLAY``, so a notebook records and replays unchanged).
A cassette is a folder (:mod:`.store`); what counts as the same call is :mod:`.matching`;
recording and replay are ``requests`` adapters on the client's own session
(:mod:`.recording`, :mod:`.replay`). Webhook events that receivers of this process accept
while recording are kept per task and pushed to task cells again in replay. Why not vcrpy or betamax: both patch or wrap at a level
that keeps bodies inline in one YAML/JSON file (media would be base64 in the index), vcrpy
patches the HTTP libraries process-wide (every session and thread, the sandbox's own
server-side fetches included) and neither stores a file once by hash or lets a miss go to a
local emulator. A transport adapter is the seam ``requests`` offers for exactly this.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from .._transport import Transport
from ..errors import ValidationError
from ..webhooks import push
from .recording import RecordingAdapter
from .replay import ANSWERED_BY, STRAYS, Replayer
from .store import Cassette, without_user_info

__all__ = ["Cassette", "Replayer", "ANSWERED_BY", "STRAYS", "record", "replay"]

# One recording and one replay per cassette per process: a notebook that connects twice
# records into, and replays from, the same cassette (with the same cursors).
_open: dict[tuple[str, Path], RecordingAdapter | Replayer] = {}
_lock = threading.Lock()


MODES = ("new", "overwrite", "append")


def record(transport: Transport, path: str | os.PathLike[str], *, mode: str = "new") -> Cassette:
    """Record every exchange of ``transport`` into the cassette at ``path``.

    The first recording of a path in this process opens the cassette: ``mode`` ``"new"``
    refuses an existing one, ``"overwrite"`` replaces it, ``"append"`` adds to it (a course's
    notebooks into one lesson). Later clients recording to the same path in this process add
    to it whatever the mode (a notebook that connects twice makes one lesson).
    """
    if mode not in MODES:
        raise ValidationError("record_mode", f"one of {', '.join(MODES)}, got {mode!r}")
    where = Path(path).resolve()
    service = without_user_info(transport.base_url)
    with _lock:
        adapter = _open.get(("record", where))
        if not isinstance(adapter, RecordingAdapter) or adapter.cassette.service != service:
            opened = (
                Cassette.resume(where, service)
                if mode == "append"
                else Cassette.new(where, service, overwrite=mode == "overwrite")
            )
            adapter = RecordingAdapter(opened, service)
            _open[("record", where)] = adapter
            # Events receivers of this process accept, for tasks these clients made.
            push.subscribe(adapter.keep_event)
    transport.mount(adapter)
    return adapter.cassette


def replay(
    path: str | os.PathLike[str],
    *,
    sandbox_url: str,
    sandbox_key: str,
    serve_file: Callable[[str, bytes, str], str],
    strays: str = "sandbox",
) -> Replayer:
    """The replay of the cassette at ``path`` in this process (loaded once); a client's
    transport answers from it after :meth:`Replayer.serve` (see :mod:`.replay`)."""
    where = Path(path).resolve()
    with _lock:
        replayer = _open.get(("replay", where))
        if not isinstance(replayer, Replayer) or replayer.sandbox_url != sandbox_url.rstrip("/"):
            replayer = Replayer(
                Cassette.load(where),
                sandbox_url=sandbox_url,
                sandbox_key=sandbox_key,
                serve_file=serve_file,
                strays=strays,
            )
            _open[("replay", where)] = replayer
        replayer.strays = strays
    return replayer
