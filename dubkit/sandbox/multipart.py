"""Multipart uploads of the sandbox's object storage: sessions, where parts live, completion.

The routes that receive the bytes are in :mod:`dubkit.sandbox.storage`; the materials product
opens, completes and aborts sessions through the functions here.

Where parts live: a part no larger than the upload's *slot* (the part size recommended at
initiate) is written straight into one assembly file at ``(partNumber - 1) * slot``; a larger
part gets a file of its own. When a client uses the recommended size, as clients do,
completing finds the parts already in place: it hashes the file and renames it instead of
writing every byte a second time. Any other layout is joined into a new file.

The whole-file MD5 that completion checks is mostly computed while the upload is still running:
after each part arrives, a worker thread extends an MD5 over the assembly file's contiguous
prefix of finished parts (:class:`_Prefix`). Completion reuses it when the parts it hashed
are still the listed ones (same ETags) and hashes only the rest.

*choice* Every part but the last must be at least ``MIN_PART_SIZE`` (5 MiB); parts listed at
completion must be in ascending order, without repeats, with the ETag each PUT answered, and
the joined bytes must have the upload's MD5. A refusal leaves the session and its parts as
they were. Re-sending a part replaces it once the new bytes have all arrived, as in S3: until
then, and for good if the re-send breaks off, the copy stored before still counts. So the
first PUT of a part claims its slot, and a re-send (or a PUT racing the first) goes to a file
of its own: a client killed mid-PUT whose stale request the sandbox reads late can never spoil
the part a resumed upload has meanwhile sent again.

Received bytes go through a sink (:class:`FileSink`: a file of their own, as a single PUT's
object or a large part; :class:`SlotSink`: a part's region of the assembly file). Completion
closes the session's :class:`Gate` first: a part PUT still
streaming (a slow client, a retry racing the complete) writes its next block only through the
gate, finds it shut and is answered 404, so no byte lands in the file once it is being
registered (the assembly file becomes the material's file by a rename, so a late write would
go there).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..schema import MIN_PART_SIZE
from .backend import Backend
from .database import Database
from .service_error import ServiceError

log = logging.getLogger("dubkit.sandbox")

BLOCK = 1 << 20  # bytes read, hashed, copied or written at a time


# --------------------------------------------------------------------------- where bytes land


class Closed(Exception):
    """The session stopped taking bytes (completing, completed or aborted)."""


class Gate:
    """Every write of a session's bytes passes here; completion shuts it first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.shut = False

    def write(self, write: Any, data: bytes) -> None:
        with self.lock:  # held for one block at most, so closing never waits long
            if self.shut:
                raise Closed()
            write(data)


class FileSink:
    """Bytes for a file of their own: a temporary file, renamed into place when complete.

    With a ``gate`` (a part of a session), the write and the rename pass through it.
    """

    in_slot = False

    def __init__(self, target: Path, gate: Gate | None = None) -> None:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._target, self._gate = target, gate
        self._partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.partial")
        self._file = open(self._partial, "wb")

    def write(self, data: bytes) -> None:
        if self._gate is None:
            self._file.write(data)
        else:
            self._gate.write(self._file.write, data)

    def close(self, keep: bool) -> None:
        self._file.close()
        try:
            if keep and self._gate is not None:
                self._gate.write(lambda _: os.replace(self._partial, self._target), b"")
            elif keep:
                os.replace(self._partial, self._target)
        finally:
            self._partial.unlink(missing_ok=True)


class SlotSink:
    """Bytes for the part's region of the assembly file, written through the session's gate.

    ``release`` runs if the bytes do not all arrive: the slot is free for the next PUT.
    """

    in_slot = True

    def __init__(
        self, assembly: Path, offset: int, gate: Gate, release: Callable[[], None]
    ) -> None:
        assembly.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._fd = os.open(assembly, os.O_WRONLY | os.O_CREAT, 0o600)
        self._offset, self._gate, self._release = offset, gate, release

    def write(self, data: bytes) -> None:
        self._gate.write(self._pwrite, data)

    def _pwrite(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.pwrite(self._fd, view, self._offset)
            self._offset += written
            view = view[written:]

    def close(self, keep: bool) -> None:
        os.close(self._fd)
        if not keep:
            self._release()


# --------------------------------------------------------------------------- byte ranges
# Completion sees an object as segments ``(path, offset, length)`` (of the assembly file or of
# parts kept in files of their own) and hashes or joins them a block at a time, never whole.

Segment = tuple[Path, int, int]  # file, offset, length


def md5_of(segments: list[Segment], block: int) -> str:
    return hash_into(hashlib.md5(usedforsecurity=False), segments, block).hexdigest()


def hash_into(digest: Any, segments: list[Segment], block: int) -> Any:
    """Feed the segments' bytes to ``digest`` in order, ``block`` bytes at a time."""
    buffer = bytearray(block)
    view = memoryview(buffer)
    for path, offset, length in segments:
        with open(path, "rb", buffering=0) as source:
            source.seek(offset)
            while length and (count := source.readinto(view[: min(length, block)])):
                digest.update(view[:count])
                length -= count
    return digest


def copy_segment(segment: Segment, out: Any, block: int) -> None:
    """Append the segment's bytes to the open file ``out`` (in the kernel where it can)."""
    path, offset, left = segment
    with open(path, "rb") as source:
        try:
            while left:
                copied = os.copy_file_range(source.fileno(), out.fileno(), left, offset)
                if copied == 0:
                    break
                offset, left = offset + copied, left - copied
        except OSError:  # no copy_file_range (old kernel, other OS): a plain copy
            source.seek(offset)
            while left and (data := source.read(min(left, block))):
                out.write(data)
                left -= len(data)


SCHEMA = """
CREATE TABLE IF NOT EXISTS storage_uploads (
    upload_id TEXT PRIMARY KEY, key TEXT NOT NULL, state TEXT NOT NULL, created_at REAL NOT NULL,
    slot INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS storage_parts (
    upload_id TEXT NOT NULL, part_number INTEGER NOT NULL, size INTEGER NOT NULL,
    etag TEXT NOT NULL, puts INTEGER NOT NULL DEFAULT 1, in_slot INTEGER NOT NULL,
    PRIMARY KEY (upload_id, part_number));
"""


def _store(backend: Backend) -> Database:
    return backend.db.ensure(SCHEMA)


def _folder(backend: Backend, upload_id: str) -> Path:
    return backend.data_dir / "storage" / "parts" / upload_id


def _assembly(backend: Backend, upload_id: str) -> Path:
    return _folder(backend, upload_id) / "assembly"


def _part_path(backend: Backend, upload_id: str, part_number: int) -> Path:
    return _folder(backend, upload_id) / f"{part_number:05d}"


class _Prefix:
    """MD5 of the first parts of an assembly file, in order, as far as they have arrived."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.digest = hashlib.md5(usedforsecurity=False)
        self.etags: list[str] = []  # ETag of part 1, 2, ... as hashed

    def matches(self, listed_etags: list[str]) -> bool:
        return self.etags == listed_etags[: len(self.etags)]


_prefixes: weakref.WeakKeyDictionary[Backend, dict[str, _Prefix]] = weakref.WeakKeyDictionary()


def _prefix(backend: Backend, upload_id: str) -> _Prefix:
    return _prefixes.setdefault(backend, {}).setdefault(upload_id, _Prefix())


_gates: weakref.WeakKeyDictionary[Backend, dict[str, Gate]] = weakref.WeakKeyDictionary()


def _gate(backend: Backend, upload_id: str) -> Gate:
    return _gates.setdefault(backend, {}).setdefault(upload_id, Gate())


def _shut(backend: Backend, upload_id: str, shut: bool) -> None:
    gate = _gate(backend, upload_id)
    with gate.lock:
        gate.shut = shut


def extend_prefix_hash(backend: Backend, upload_id: str) -> None:
    """Hash the next finished full-slot parts in order (call after a part arrived).

    Runs in a worker thread; one thread hashes a session at a time, others return at once.
    Whatever it misses, completion hashes itself, so this only ever saves time.
    """
    prefix = _prefix(backend, upload_id)
    upload = open_upload(backend, upload_id)
    if upload is None or not prefix.lock.acquire(blocking=False):
        return
    try:
        _extend(backend, upload, prefix)
    except Exception:  # the session closed under it: completion hashes what it needs
        log.debug("prefix hash of %s stopped", upload_id, exc_info=True)
    finally:
        prefix.lock.release()


def _extend(backend: Backend, upload: dict[str, Any], prefix: _Prefix) -> None:
    upload_id, slot = upload["upload_id"], upload["slot"]
    stored: dict[int, dict[str, Any]] = {}
    while True:
        number = len(prefix.etags) + 1
        if number not in stored:  # look again: parts arrive while we hash
            stored = {p["part_number"]: p for p in parts(backend, upload_id)}
        part = stored.get(number)
        if part is None or not part["etag"] or not part["in_slot"] or part["size"] != slot:
            return
        hash_into(
            prefix.digest, [(_assembly(backend, upload_id), (number - 1) * slot, slot)], BLOCK
        )
        prefix.etags.append(part["etag"])


# --------------------------------------------------------------------------- sessions


def create(backend: Backend, key: str, slot: int) -> str:
    """Open a session for object ``key``; parts of ``slot`` bytes will need no second copy."""
    upload_id = uuid.uuid4().hex
    _store(backend).execute(
        "INSERT INTO storage_uploads (upload_id, key, state, created_at, slot) "
        "VALUES (?, ?, 'open', ?, ?)",
        (upload_id, key, time.time(), slot),
    )
    return upload_id


def open_upload(backend: Backend, upload_id: str) -> dict[str, Any] | None:
    row = _store(backend).one(
        "SELECT * FROM storage_uploads WHERE upload_id = ? AND state = 'open'", (upload_id,)
    )
    return dict(row) if row else None


def state(backend: Backend, upload_id: str) -> str | None:
    row = _store(backend).one("SELECT state FROM storage_uploads WHERE upload_id = ?", (upload_id,))
    return row["state"] if row else None


def parts(backend: Backend, upload_id: str) -> list[dict[str, Any]]:
    return [
        dict(r)
        for r in _store(backend).all(
            "SELECT part_number, size, etag, puts, in_slot FROM storage_parts WHERE upload_id = ? "
            "ORDER BY part_number",
            (upload_id,),
        )
    ]


def finish(backend: Backend, upload_id: str, new_state: str = "completed") -> None:
    """Close a session (``completed`` or ``aborted``) and delete its parts."""
    store = _store(backend)
    with store.transaction() as db:
        db.execute(
            "UPDATE storage_uploads SET state = ? WHERE upload_id = ?", (new_state, upload_id)
        )
        db.execute("DELETE FROM storage_parts WHERE upload_id = ?", (upload_id,))
    _shut(backend, upload_id, True)
    shutil.rmtree(_folder(backend, upload_id), ignore_errors=True)
    _prefixes.get(backend, {}).pop(upload_id, None)


# --------------------------------------------------------------------------- receiving a part


def part_sink(
    backend: Backend, upload: dict[str, Any], number: int, size: int
) -> FileSink | SlotSink:
    """Where part ``number`` (``size`` bytes) goes: its slot if this PUT is the part's first,
    else a file of its own, so that a copy already stored stays whole until this one is."""
    upload_id = upload["upload_id"]
    gate = _gate(backend, upload_id)
    if size <= upload["slot"] and _claim_slot(backend, upload_id, number):
        return SlotSink(
            _assembly(backend, upload_id),
            (number - 1) * upload["slot"],
            gate,
            release=lambda: _release_slot(backend, upload_id, number),
        )
    return FileSink(_part_path(backend, upload_id, number), gate)


def _claim_slot(backend: Backend, upload_id: str, number: int) -> bool:
    """True if no PUT of this part came before: a row with no copy yet (``puts`` 0) holds the
    slot for this one."""
    claimed = _store(backend).execute(
        "INSERT INTO storage_parts (upload_id, part_number, size, etag, puts, in_slot) "
        "VALUES (?, ?, 0, '', 0, 1) ON CONFLICT (upload_id, part_number) DO NOTHING",
        (upload_id, number),
    )
    return claimed.rowcount == 1


def _release_slot(backend: Backend, upload_id: str, number: int) -> None:
    """The slot's PUT broke off: free the slot unless a copy arrived meanwhile."""
    _store(backend).execute(
        "DELETE FROM storage_parts WHERE upload_id = ? AND part_number = ? AND puts = 0",
        (upload_id, number),
    )


def record_part(
    backend: Backend, upload: dict[str, Any], number: int, size: int, etag: str, *, in_slot: bool
) -> bool:
    """Note a part that fully arrived (in its slot or a file); False if the session closed."""
    upload_id = upload["upload_id"]
    if open_upload(backend, upload_id) is None:
        return False
    _store(backend).execute(
        "INSERT INTO storage_parts (upload_id, part_number, size, etag, in_slot) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (upload_id, part_number) DO UPDATE SET "
        "size = excluded.size, etag = excluded.etag, in_slot = excluded.in_slot, "
        "puts = puts + 1",
        (upload_id, number, size, etag, int(in_slot)),
    )
    return True


def stored_bytes(backend: Backend, upload_id: str, *, besides: int) -> int:
    """Bytes of the session's parts other than part ``besides`` (for the size limit)."""
    return sum(p["size"] for p in parts(backend, upload_id) if p["part_number"] != besides)


# --------------------------------------------------------------------------- completing


def complete(
    backend: Backend,
    upload_id: str,
    listed: Sequence[tuple[int, str]],
    file_hash: str,
    target: Path,
) -> int:
    """Make ``target`` from the listed ``(partNumber, eTag)``; return its size (400 if not)."""
    upload = open_upload(backend, upload_id)
    if upload is None:
        raise ServiceError(404, f"multipart upload not found or no longer open: {upload_id}")
    _shut(backend, upload_id, True)  # from here no byte of a late PUT reaches the files
    try:
        return _complete(backend, upload, listed, file_hash, target)
    except BaseException:
        _shut(backend, upload_id, False)  # refused: the session takes parts again
        raise


def _complete(
    backend: Backend,
    upload: dict[str, Any],
    listed: Sequence[tuple[int, str]],
    file_hash: str,
    target: Path,
) -> int:
    upload_id = upload["upload_id"]
    stored = _check_listed(listed, {p["part_number"]: p for p in parts(backend, upload_id)})
    slot, assembly = upload["slot"], _assembly(backend, upload_id)
    segments = [
        (assembly, (n - 1) * slot, stored[n]["size"])
        if stored[n]["in_slot"]
        else (_part_path(backend, upload_id, n), 0, stored[n]["size"])
        for n, _ in listed
    ]
    size = sum(length for _, _, length in segments)
    target.parent.mkdir(parents=True, exist_ok=True)
    in_place = all(
        path == assembly and offset == i * slot and (length == slot or i == len(segments) - 1)
        for i, (path, offset, length) in enumerate(segments)
    )
    if in_place:
        _check_md5(_in_place_md5(backend, upload_id, segments, stored, listed), file_hash)
        os.truncate(assembly, size)  # parts beyond the last listed one are not the object
        os.replace(assembly, target)
    else:
        _join(segments, target, file_hash)
    return size


def _check_listed(
    listed: Sequence[tuple[int, str]], stored: dict[int, dict[str, Any]]
) -> dict[int, dict[str, Any]]:
    if not listed:
        raise ServiceError(
            400, "invalid request: parts: list every uploaded part as {partNumber, eTag}"
        )
    previous = 0
    for i, (number, etag) in enumerate(listed):
        if number <= previous:
            raise ServiceError(
                400,
                f"invalid request: parts[{i}].partNumber: parts must be "
                f"listed in ascending order without repeats (got {number} "
                f"after {previous})",
            )
        previous = number
        part = stored.get(number)
        if part is None or not part["etag"]:
            raise ServiceError(
                400,
                f"invalid request: parts[{i}]: part {number} was never "
                f"uploaded (or its replacement has not arrived)",
            )
        if etag.strip().strip('"').lower() != part["etag"]:
            raise ServiceError(
                400,
                f"invalid request: parts[{i}].eTag: {etag!r} is not the "
                f"ETag of part {number} as stored (send the ETag its PUT "
                f"answered)",
            )
        if i < len(listed) - 1 and part["size"] < MIN_PART_SIZE:
            raise ServiceError(
                400,
                f"invalid request: parts[{i}]: part {number} is "
                f"{part['size']} bytes; every part but the last must be at "
                f"least {MIN_PART_SIZE} bytes (5 MiB)",
            )
    return stored


def _check_md5(md5: str, file_hash: str) -> None:
    if md5 != file_hash:
        raise ServiceError(
            400,
            f"invalid request: fileHash: the joined parts have MD5 {md5}, "
            f"not {file_hash}; upload the right bytes for the wrong parts "
            f"and complete again",
        )


def _join(segments: list[Segment], target: Path, file_hash: str) -> None:
    """Copy the segments into ``target`` if together they have the MD5 ``file_hash``.

    The copy (in the kernel) and the hash (hashlib frees the GIL) run side by side.
    """
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.partial")
    try:
        with ThreadPoolExecutor(1) as pool:
            digest = pool.submit(md5_of, segments, BLOCK)
            with open(partial, "wb") as out:
                for segment in segments:
                    copy_segment(segment, out, BLOCK)
            _check_md5(digest.result(), file_hash)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _in_place_md5(
    backend: Backend,
    upload_id: str,
    segments: list[Segment],
    stored: dict[int, dict[str, Any]],
    listed: Sequence[tuple[int, str]],
) -> str:
    """MD5 of the in-place object, continuing the prefix hashed during the upload if valid."""
    prefix = _prefix(backend, upload_id)
    with prefix.lock:  # wait for a hashing thread still at work
        if prefix.matches([stored[n]["etag"] for n, _ in listed]):
            digest = prefix.digest.copy()
            return hash_into(digest, segments[len(prefix.etags) :], BLOCK).hexdigest()
    return md5_of(segments, BLOCK)
