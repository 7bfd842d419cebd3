"""Before an interrupted multipart upload resumes: is what it sent still the file, and did its
last run in fact finish?

Both questions come from a run that stopped at the wrong moment:

* The file was edited in place between runs and kept its size and mtime (``touch -r``,
  ``rsync -t``, a tool that restores the time, two writes within the clock's granularity).
  :meth:`UploadState.matches` cannot see that; sending only the missing parts would join the
  old bytes sent before with new ones, under the old ``fileHash``.
* The run registered the material (``multipart/complete`` answered) and died before removing
  its state file. Completing the closed session again is refused, and the refusal used to end
  in an abort and an error although the material exists.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .files import range_digest
from .state import UploadState


def first_changed_part(
    path: Path, state: UploadState, size: int, on_bytes: Callable[[int], None] | None = None
) -> int | None:
    """The first sent part whose bytes in the file no longer have the digest taken as it was
    sent, or that has no digest (a state written before digests were kept); else None.

    Cost: one local read of the bytes already sent, hashed at about 1 GB/s, and only on a
    resume. Those bytes took far longer to send than to read, and re-sending them is what the
    check replaces, so "no part sent twice" stays cheap and becomes safe. Parts not sent yet
    are not read here: they are read (and hashed) as they are sent. Stops at the first change.
    """
    part_size = int(state.data["partSize"])
    digests = state.part_digests
    for number in sorted(state.etags):
        offset = (number - 1) * part_size
        length = min(part_size, size - offset)
        recorded = digests.get(number)
        if (
            recorded is None
            or length <= 0
            or range_digest(path, offset, length, on_bytes) != recorded
        ):
            return number
    return None


def registered_by_last_run(
    find_by_hash: Callable[[str], dict[str, Any] | None], state: UploadState, size: int
) -> dict[str, Any] | None:
    """The material of this upload's bytes if the last run sent every part (so it may have
    completed the upload and died before clearing its state); else None.

    Looked up by ``fileHash`` in the material list, as a lost ``complete`` answer is: the
    interface does not say what a second ``complete`` of a completed session answers (the
    sandbox refuses it with 400). Asked only when every part was sent, so a resume that still
    has parts to send costs no list call. Call it after :func:`first_changed_part` found no
    change: then the file is still the bytes sent under that hash.
    """
    parts_total = -(-size // int(state.data["partSize"]))
    if not set(range(1, parts_total + 1)) <= set(state.etags):
        return None
    return find_by_hash(state.data["fileHash"])
