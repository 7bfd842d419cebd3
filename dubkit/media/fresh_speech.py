"""Speech that is the same for the same text: lines spoken in a new process, seeded.

espeak-ng keeps state from one utterance to the next and draws random numbers, so the same
line spoken twice in one process differs slightly. Spoken in a new process with its
randomness seeded (``python -m dubkit.media.fresh_speech``, lines as JSON on stdin, a
``.npz`` of float32 arrays on stdout), the same lines give the same samples on any machine
with the same wheels. A plain child process, not ``multiprocessing``: spawn would re-run a
user's unguarded script in the child.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Sequence

import numpy as np

from . import speech


def speak(lines: Sequence[tuple[str, str | None]], voice: str, rate_wpm: int) -> list[np.ndarray]:
    """Each ``(text, variant)`` of ``lines`` spoken by ``voice`` in a fresh, seeded process."""
    asked = json.dumps({"lines": [list(line) for line in lines], "voice": voice, "rate": rate_wpm})
    done = subprocess.run(
        [sys.executable, "-m", __name__], input=asked.encode(), capture_output=True, check=False
    )
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise speech.SpeechError(
            f"speech in a fresh process failed: {said[-1] if said else done.returncode}"
        )
    with np.load(io.BytesIO(done.stdout)) as spoken:
        return [spoken[f"line{i}"] for i in range(len(lines))]


def _main() -> None:
    asked = json.loads(sys.stdin.buffer.read())
    speech.reset_randomness()
    prosody = speech.Prosody(rate_wpm=asked["rate"])
    spoken: dict[str, np.ndarray] = {
        f"line{i}": speech.synthesize(text, asked["voice"], variant=variant, prosody=prosody)
        for i, (text, variant) in enumerate(asked["lines"])
    }
    out = io.BytesIO()
    np.savez(out, **spoken)  # type: ignore[arg-type]
    sys.stdout.buffer.write(out.getvalue())


if __name__ == "__main__":
    _main()
