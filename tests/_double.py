"""A double of the service over real HTTP: each operation answers from a script.

Tests that need the service to say something it rarely says (an empty result list, a record
of another voice, a gateway's HTML page) script it here; tests/_answers.py generates such
answers from the contract document and serves them through the same double.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from _http import _serve

from dubkit.schema import OPERATIONS_BY_PATH

PREFIX = "/openapi/v1"
STUB = "http://answers.stub"  # rewritten to the double's own address when an answer is sent

# The double's files: what a URL field of an answer may point at.
FILES = {
    "tone.wav": "wav",
    "tone.mp3": "wav",  # a name that lies about the bytes
    "junk.m4a": "junk",
    "gone.wav": "missing",
    "lines.srt": "srt",
    "cover.png": "junk",
    "expired.wav": "expired",  # a presigned URL that expired: 403 to a PUT
}


@dataclass(frozen=True)
class Answer:
    """One HTTP answer: what the double sends for one request."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)
    kind: str = "success"  # success, error200, a status, or gateway

    def __repr__(self) -> str:  # what hypothesis prints for a failing example
        return f"Answer({self.kind}, HTTP {self.status}, {self.body[:300]!r})"


def fixed(data: Any) -> Answer:
    """A plain success answer (for the steps a test sets up rather than generates)."""
    return Answer(
        200, json.dumps({"code": 200, "message": "", "data": data}).encode(), kind="fixed"
    )


# --------------------------------------------------------------------------- the double


def wav_bytes() -> bytes:
    """A tenth of a second of a 440 Hz tone, 16-bit mono WAV."""
    import io
    import math
    import struct
    import wave

    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(
            b"".join(
                struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / 16000)))
                for i in range(1600)
            )
        )
    return out.getvalue()


_FILE_BYTES = {
    "wav": wav_bytes(),
    "junk": bytes(range(256)) * 4,
    "srt": b"1\n00:00:00,000 --> 00:00:01,000\nHello\n",
}


class AnswerDouble:
    """The service's API over real HTTP, answering each operation from a script.

    ``script({op: [answers]})`` sets what the next requests of each operation get, in order
    (the last answer repeats); an operation without a script is answered with an error the
    test sees in ``unscripted``. ``met`` counts the generated answers each operation sent,
    over the double's life.
    """

    def __init__(self) -> None:
        self.url = ""
        self.met: Counter[str] = Counter()
        self.unscripted: list[str] = []
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self._scripts: dict[str, list[Answer]] = {}
        self._sent: Counter[str] = Counter()
        self._counting = True
        self._lock = threading.Lock()

    def script(self, answers: Mapping[str, Sequence[Answer]], count: bool = True) -> None:
        with self._lock:
            self._scripts = {op: list(a) for op, a in answers.items()}
            self._sent.clear()
            self._counting = count
            self.unscripted.clear()
            self.requests.clear()

    def respond(
        self, method: str, target: str, headers: dict, body: bytes
    ) -> tuple[int, dict, bytes]:
        path = urlsplit(target).path
        if path.startswith("/files/"):
            return self._file(method, path.removeprefix("/files/"))
        op = OPERATIONS_BY_PATH.get((method, path.removeprefix(PREFIX)))
        with self._lock:
            self.requests.append((method, target, headers, body))
            script = self._scripts.get(op.name) if op else None
            if not script:
                self.unscripted.append(f"{method} {target}")
                return (
                    404,
                    {"Content-Type": "application/json"},
                    b'{"code": 404, "message": "unscripted"}',
                )
            n = self._sent[op.name]
            self._sent[op.name] += 1
            answer = script[min(n, len(script) - 1)]
            if self._counting and n < len(script) and answer.kind != "fixed":
                self.met[op.name] += 1
        sent = answer.body.replace(STUB.encode(), self.url.encode())
        head = {**answer.headers}
        if answer.content_type:
            head["Content-Type"] = answer.content_type
        return answer.status, head, sent

    def _file(self, method: str, name: str) -> tuple[int, dict, bytes]:
        if FILES.get(name) == "expired":
            return 403, {"Content-Type": "application/xml"}, b"<Error>Request has expired</Error>"
        if method == "PUT":  # a presigned upload: stored nowhere, acknowledged like S3
            return 200, {"ETag": '"0123456789abcdef0123456789abcdef"'}, b""
        kind = FILES.get(name, "missing")
        if kind == "missing":
            return 404, {"Content-Type": "text/plain"}, b"no such file"
        return 200, {"Content-Type": "application/octet-stream"}, _FILE_BYTES[kind]


@contextmanager
def answer_double() -> Iterator[AnswerDouble]:
    double = AnswerDouble()
    with _serve(double.respond) as url:
        double.url = url
        yield double
