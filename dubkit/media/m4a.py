"""AAC frames cut from one encoded stream and written as M4A files, one per clip.

Starting an AAC encoder costs more than encoding a short spoken line does, so
:func:`dubkit.media.av.encode_clips` encodes a request's lines as one stream and cuts it here.
AAC-LC frames decode on their own except for the overlap with the frame before: a file that
starts one frame early (the *priming*, which every AAC file has and every player drops, told by
the edit list) decodes to exactly the samples the whole stream does, wherever the cut falls.
:func:`layout` keeps silence around each cut, so even a player that ignores the edit list hears
silence there, as with a file ffmpeg writes alone.

The boxes are those ffmpeg's ``ipod`` muxer writes for AAC (ISO/IEC 14496-12 and -14): one
track, one chunk, an edit list for the priming, and the last frame's duration cut to the clip's
end.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FRAME = 1024  # samples an AAC-LC frame carries

# MPEG-4 sampling frequency indexes (ISO/IEC 14496-3, 1.6.3.4).
_RATES = (96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000)


@dataclass(frozen=True)
class Placed:
    """Where a clip sits in the stream that is encoded: from ``start``, for ``length``
    samples."""

    start: int
    length: int

    @property
    def frames(self) -> range:
        """The stream's frames this clip's file holds: frame n decodes the samples
        [(n-1)·FRAME, n·FRAME) from its own data and the frame before's, so the file holds the
        frame before the first block with a sample of the clip, then up to the last such."""
        first = self.start // FRAME
        return range(first, -(-(self.start + self.length) // FRAME) + 1)


def layout(clips: Sequence[np.ndarray]) -> tuple[list[Placed], int]:
    """Place clips end to end in one stream; its total length in samples.

    Each file's first frame decodes up to ``2 * FRAME - 1`` samples before its clip and its last
    frame up to ``FRAME - 1`` after it: the edit list skips them, and a player that ignores it
    should hear silence there, not the lines around. So silence lies on both sides of every
    cut: the clips' own (a spoken line starts and ends quietly), with zeros inserted only where
    a clip's own is too short.
    """
    placed, at = [], 0
    for i, clip in enumerate(clips):
        if i:
            before = _silent(clips[i - 1][::-1], 2 * FRAME)
            at += max(0, 2 * FRAME - before, FRAME - _silent(clip, FRAME))
        placed.append(Placed(at, len(clip)))
        at += len(clip)
    return placed, at


def _silent(samples: np.ndarray, most: int) -> int:
    """How many of the first ``most`` samples are exactly zero (on every channel)."""
    head = np.asarray(samples[:most]).reshape(min(most, len(samples)), -1)
    loud = np.flatnonzero(np.any(head != 0, axis=1))
    return int(loud[0]) if loud.size else len(head)


def adts_frames(stream: bytes) -> list[bytes]:
    """The raw AAC frames of an ADTS stream (its 7- or 9-byte headers taken off)."""
    frames, at = [], 0
    while at + 7 <= len(stream):
        header = stream[at : at + 7]
        if header[0] != 0xFF or header[1] & 0xF0 != 0xF0:
            raise ValueError(f"no ADTS sync word at byte {at}")
        size = ((header[3] & 0x03) << 11) | (header[4] << 3) | (header[5] >> 5)
        skip = 7 if header[1] & 0x01 else 9  # protection_absent: no CRC
        frames.append(stream[at + skip : at + size])
        at += size
    return frames


def write(
    path: str | os.PathLike[str],
    frames: Sequence[bytes],
    clip: Placed,
    sample_rate: int,
    channels: int,
) -> None:
    """Write one clip's frames (``frames[clip.frames]`` of the stream) as an M4A file."""
    mine = frames[clip.frames.start : clip.frames.stop]
    skip = clip.start - (clip.frames.start - 1) * FRAME  # the priming, and the clip's offset
    ftyp = _box(b"ftyp", b"M4A " + struct.pack(">I", 0x200) + b"M4A isomiso2")
    mdat_at = len(ftyp) + 8
    payload = b"".join(mine)
    moov = _moov(mine, clip.length, skip, sample_rate, channels, mdat_at)
    Path(path).write_bytes(ftyp + struct.pack(">I", 8 + len(payload)) + b"mdat" + payload + moov)


def _moov(
    frames: Sequence[bytes], length: int, skip: int, rate: int, channels: int, mdat_at: int
) -> bytes:
    last = skip + length - (len(frames) - 1) * FRAME  # the last frame ends with the clip
    bitrate = sum(map(len, frames)) * 8 * rate // (len(frames) * FRAME)
    stbl = _box(
        b"stbl",
        _full(b"stsd", struct.pack(">I", 1) + _mp4a(rate, channels, bitrate, frames))
        + _full(
            b"stts",
            _table([(len(frames) - 1, FRAME), (1, last)] if len(frames) > 1 else [(1, last)]),
        )
        + _full(b"stsc", _table([(1, len(frames), 1)]))
        + _full(
            b"stsz",
            struct.pack(">II", 0, len(frames))
            + b"".join(struct.pack(">I", len(f)) for f in frames),
        )
        + _full(b"stco", struct.pack(">II", 1, mdat_at))
        # AAC's pre-roll: a frame needs the one before it (what ffmpeg writes, 'roll' -1).
        + _full(b"sgpd", b"roll" + struct.pack(">IIh", 2, 1, -1), version=1)
        + _full(b"sbgp", b"roll" + struct.pack(">III", 1, len(frames), 1)),
    )
    minf = _box(
        b"minf",
        _full(b"smhd", bytes(4))
        + _box(b"dinf", _full(b"dref", struct.pack(">I", 1) + _full(b"url ", b"", flags=1)))
        + stbl,
    )
    total = (len(frames) - 1) * FRAME + last
    mdia = _box(
        b"mdia",
        _full(b"mdhd", struct.pack(">IIIIHH", 0, 0, rate, total, 0x55C4, 0))  # 'und'
        + _full(b"hdlr", bytes(4) + b"soun" + bytes(12) + b"SoundHandler\0")
        + minf,
    )
    edts = _box(b"edts", _full(b"elst", struct.pack(">IIiHH", 1, length, skip, 1, 0)))
    tkhd = _full(
        b"tkhd",
        struct.pack(">IIIII", 0, 0, 1, 0, length)
        + bytes(8)
        + struct.pack(">hhhH", 0, 1, 0x100, 0)
        + _MATRIX
        + struct.pack(">II", 0, 0),
        flags=3,
    )
    mvhd = _full(
        b"mvhd",
        struct.pack(">IIII", 0, 0, rate, length)
        + struct.pack(">IH", 0x10000, 0x100)
        + bytes(10)
        + _MATRIX
        + bytes(24)
        + struct.pack(">I", 2),
    )
    return _box(b"moov", mvhd + _box(b"trak", tkhd + edts + mdia))


def _mp4a(rate: int, channels: int, bitrate: int, frames: Sequence[bytes]) -> bytes:
    """The sample entry: 16-bit, ``channels``, ``rate``, and the esds with the decoder's
    AudioSpecificConfig (AAC-LC, the rate's index, the channel configuration)."""
    config = struct.pack(">H", 2 << 11 | _RATES.index(rate) << 7 | channels << 3)
    largest = max(map(len, frames), default=0)
    decoder = _descriptor(
        0x04,
        struct.pack(">BB", 0x40, 0x15)
        + largest.to_bytes(3, "big")
        + struct.pack(">II", bitrate, bitrate)
        + _descriptor(0x05, config),
    )
    es = _descriptor(0x03, struct.pack(">HB", 1, 0) + decoder + _descriptor(0x06, b"\x02"))
    entry = bytes(6) + struct.pack(">H", 1) + bytes(8) + struct.pack(">HHHH", channels, 16, 0, 0)
    return _box(b"mp4a", entry + struct.pack(">I", rate << 16) + _full(b"esds", es))


def _descriptor(tag: int, body: bytes) -> bytes:
    # The length in four 7-bit bytes, as ffmpeg writes it.
    n = len(body)
    size = bytes(
        [0x80 | (n >> 21) & 0x7F, 0x80 | (n >> 14) & 0x7F, 0x80 | (n >> 7) & 0x7F, n & 0x7F]
    )
    return bytes([tag]) + size + body


def _table(rows: Sequence[tuple[int, ...]]) -> bytes:
    return struct.pack(">I", len(rows)) + b"".join(struct.pack(f">{len(r)}I", *r) for r in rows)


def _box(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", 8 + len(body)) + kind + body


def _full(kind: bytes, body: bytes, *, version: int = 0, flags: int = 0) -> bytes:
    return _box(kind, struct.pack(">I", version << 24 | flags) + body)


_MATRIX = struct.pack(">9I", 0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000)
