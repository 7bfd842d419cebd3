"""Byte ranges of files, ``(path, offset, length)``: hashed and copied a block at a time.

Multipart completion sees an object as such segments (of the assembly file or of parts kept
in files of their own) and hashes or joins them without reading any into memory whole.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

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
