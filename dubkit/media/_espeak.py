"""libespeak-ng's C interface through ctypes: the library loaded once, its signatures, its lock.

Private to :mod:`dubkit.media.speech`, the public face (synthesis, prosody, the voice catalogue);
the ctypes plumbing lives apart from it as the ffmpeg plumbing lives in :mod:`._ffmpeg`.

The library and its voice data come from the ``espeakng-loader`` wheel, so nothing is
downloaded at run time. libespeak-ng keeps one global state (current voice, parameters,
output callback), so every call into it holds ``LOCK``; the library is initialised lazily
on first use, never at import.
"""

from __future__ import annotations

import ctypes
import threading

# speak_lib.h constants
AUDIO_OUTPUT_SYNCHRONOUS = 2
INITIALIZE_DONT_EXIT = 0x8000  # never let the library call exit() inside our process
POS_CHARACTER = 1
CHARS_UTF8 = 1
RATE, VOLUME, PITCH, RANGE = 1, 2, 3, 4
EE_OK = 0
BUFFER_MS = 500  # larger chunks mean fewer Python callbacks per second of audio

LOCK = threading.Lock()


class SpeechError(ValueError):
    """A synthesis request espeak-ng cannot honour (unknown voice, empty text, ...)."""


class Voice(ctypes.Structure):
    """espeak_VOICE: one entry of the library's voice list, or a filter for listing them."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("languages", ctypes.c_void_p),  # packed (priority byte, C string) pairs, 0-terminated
        ("identifier", ctypes.c_char_p),
        ("gender", ctypes.c_ubyte),
        ("age", ctypes.c_ubyte),
        ("variant", ctypes.c_ubyte),
        ("xx1", ctypes.c_ubyte),
        ("score", ctypes.c_int),
        ("spare", ctypes.c_void_p),
    ]


_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)

_lib: ctypes.CDLL | None = None
_rate = 0
#: 16-bit PCM the callback collects during ``espeak_Synth``; the caller clears it around a call.
chunks: list[bytes] = []


@_CALLBACK
def _collect(wav, count, _events):
    # Runs inside espeak_Synth, i.e. with LOCK held by the caller.
    if wav and count > 0:
        chunks.append(ctypes.string_at(wav, count * 2))
    return 0  # 0 = keep synthesising


def library() -> tuple[ctypes.CDLL, int]:
    """Load and initialise libespeak-ng once; the library and its output rate. Caller holds LOCK."""
    global _lib, _rate
    if _lib is not None:
        return _lib, _rate
    try:
        import espeakng_loader
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise SpeechError("espeakng-loader is not installed; it ships libespeak-ng") from exc
    lib = ctypes.CDLL(espeakng_loader.get_library_path())
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_Initialize.restype = ctypes.c_int
    lib.espeak_SetSynthCallback.argtypes = [_CALLBACK]
    lib.espeak_SetSynthCallback.restype = None
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_SetVoiceByName.restype = ctypes.c_int
    lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.espeak_SetParameter.restype = ctypes.c_int
    lib.espeak_Synth.argtypes = [
        ctypes.c_char_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    lib.espeak_Synth.restype = ctypes.c_int
    lib.espeak_ListVoices.argtypes = [ctypes.POINTER(Voice)]
    lib.espeak_ListVoices.restype = ctypes.POINTER(ctypes.POINTER(Voice))
    rate = lib.espeak_Initialize(
        AUDIO_OUTPUT_SYNCHRONOUS,
        BUFFER_MS,
        espeakng_loader.get_data_path().encode(),
        INITIALIZE_DONT_EXIT,
    )
    if rate <= 0:
        raise SpeechError(
            f"espeak_Initialize failed (returned {rate}); data at {espeakng_loader.get_data_path()}"
        )
    lib.espeak_SetSynthCallback(_collect)
    _lib, _rate = lib, rate
    return lib, rate
