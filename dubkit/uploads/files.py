"""Local facts about a file to upload: is it media, its MD5, how to cut it into parts, and a
digest of each part's bytes (to check, before resuming, that sent parts are still the file's)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from ..errors import ValidationError
from ..schema import MIN_PART_SIZE

MiB = 1024 * 1024
DEFAULT_PART_SIZE = 8 * MiB  # when initiate recommends none (as the client examples do)
MAX_PARTS = 10_000
BLOCK = MiB
PART_DIGEST_CHARS = 32  # 128 bits: ample to see a change, and the state file stays small


def check_media_file(path: str | os.PathLike[str], field: str = "path") -> Path:
    """The file as a Path, or ValidationError naming ``field`` if it cannot be media.

    >>> check_media_file("notes.txt")
    Traceback (most recent call last):
    dubkit.errors.ValidationError: path: 'notes.txt' looks like a text file, not audio or video
    """
    file = Path(path).expanduser()
    if not file.exists():
        raise ValidationError(field, f"no such file: {str(path)!r}")
    if not file.is_file():
        raise ValidationError(field, f"{str(path)!r} is not a file")
    if file.stat().st_size == 0:
        raise ValidationError(field, f"{str(path)!r} is empty (0 bytes): nothing to upload")
    with open(file, "rb") as handle:
        head = handle.read(4096)
    if _looks_like_text(head):
        raise ValidationError(field, f"{str(path)!r} looks like a text file, not audio or video")
    if not file.suffix:
        raise ValidationError(
            "fileName",
            f"{file.name!r} needs an extension (e.g. .mp4, .wav): "
            f"the service reads the type from it",
        )
    return file


def _looks_like_text(head: bytes) -> bool:
    if b"\x00" in head:
        return False
    for cut in range(4):  # the sample may end inside a multi-byte character
        try:
            head[: len(head) - cut].decode("utf-8")
            return True
        except UnicodeDecodeError:
            continue
    return False


def file_md5(path: Path, on_bytes: Callable[[int], None] | None = None) -> str:
    """Lowercase hex MD5 of a file, read 1 MiB at a time into one reused buffer."""
    digest = hashlib.md5(usedforsecurity=False)
    block = bytearray(BLOCK)
    view = memoryview(block)
    with open(path, "rb", buffering=0) as handle:
        while count := handle.readinto(block):
            digest.update(view[:count])
            if on_bytes:
                on_bytes(count)
    return digest.hexdigest()


def new_part_digest() -> hashlib._Hash:
    """The digest kept for each sent part: SHA-256, the fastest stdlib hash where the CPU has
    SHA instructions (about 1 GB/s here, MD5 half that); only accidental change must show."""
    return hashlib.sha256()


def part_digest_hex(digest: hashlib._Hash) -> str:
    return digest.hexdigest()[:PART_DIGEST_CHARS]


def range_digest(
    path: Path, offset: int, length: int, on_bytes: Callable[[int], None] | None = None
) -> str:
    """The part digest of bytes ``[offset, offset + length)`` of a file, as read now."""
    digest = new_part_digest()
    block = bytearray(BLOCK)
    view = memoryview(block)
    with open(path, "rb", buffering=0) as handle:
        handle.seek(offset)
        while length > 0 and (count := handle.readinto(view[: min(length, BLOCK)])):
            digest.update(view[:count])
            length -= count
            if on_bytes:
                on_bytes(count)
    return part_digest_hex(digest)


def part_size_for(size: int, recommended: int | None, chosen: int | None = None) -> int:
    """The part size: the caller's, else the recommendation, grown to fit 10000 parts."""
    base = chosen or recommended or DEFAULT_PART_SIZE
    if chosen is not None and chosen < MIN_PART_SIZE:
        raise ValidationError(
            "part_size",
            f"at least {MIN_PART_SIZE} bytes (5 MiB): storage "
            f"refuses smaller parts except the last",
        )
    smallest = -(-size // MAX_PARTS)
    return max(base, MIN_PART_SIZE, smallest)


class FileSlice:
    """Bytes ``[offset, offset + length)`` of a file, streamed by requests 1 MiB at a time.

    ``digest`` is the part digest of the bytes actually read, i.e. sent: hashed on the way out,
    so keeping it costs no second read.
    """

    def __init__(
        self, path: Path, offset: int, length: int, on_read: Callable[[int], None]
    ) -> None:
        self._file = open(path, "rb")
        self._file.seek(offset)
        self._left = length
        self._length = length
        self._on_read = on_read
        self.sent = 0
        self._digest = new_part_digest()

    def __len__(self) -> int:  # requests sets Content-Length from it
        return self._length

    def read(self, _size: int = -1) -> bytes:
        data = self._file.read(min(self._left, BLOCK))  # larger blocks: fewer syscalls
        self._left -= len(data)
        self.sent += len(data)
        self._digest.update(data)
        self._on_read(len(data))
        return data

    @property
    def digest(self) -> str:
        return part_digest_hex(self._digest)

    def close(self) -> None:
        self._file.close()
