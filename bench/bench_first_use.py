"""First use on a new machine: connect() to the first TTS answer, the first catalogue listing
and the first clone (issue 15, item 3; ``bench_import.py`` measures ``import dubkit``).

    python bench/bench_first_use.py [--runs 5]

Each run is a fresh Python process with a new, empty sandbox data dir (``DUBKIT_SANDBOX_DIR``)
and no API key, so ``dubkit.connect()`` starts the embedded sandbox; the disk cache is warm
(the runs before it read the same files). Printed, as medians over the runs:

* ``connect() -> first TTS answer``: ``connect()``, then ``tts.speak`` of one line with the
  first preset voice (the catalogue lookup included). Baseline: a second line spoken right
  after in the same process. Target: <= 1 s.
* ``first catalogue listing``: ``voices.presets()`` (all of them) on that new sandbox.
  Baseline: the same listing again. Target: <= 0.5 s.
* ``first clone``: ``clones.create`` of a local recording (its upload included), the process's
  first. Baseline: a second clone, of another recording of the same gender, right after (no
  target in the issue; the first used to measure espeak for about a second).

It runs whatever ``dubkit`` is importable (PYTHONPATH picks an older checkout to compare).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

PROBE = """
import json, pathlib, sys, time
import dubkit
from dubkit import samples
started = time.perf_counter()
client = dubkit.connect()
voice = client.voices.presets(limit=1)[0].voice_id
client.tts.speak("Hello there, first line.", voice)
first_answer = time.perf_counter() - started
started = time.perf_counter()
client.tts.speak("And a second line.", voice)
second_answer = time.perf_counter() - started
started = time.perf_counter()
count = len(client.voices.presets())
first_listing = time.perf_counter() - started
started = time.perf_counter()
client.voices.presets()
second_listing = time.perf_counter() - started
folder = pathlib.Path(sys.argv[1])
recordings = [
    samples.speech_recording(folder / f"ref{i}.wav", text, variant="m3")
    for i, text in enumerate(["I read this so that my voice can be copied.", "And one more."])
]
clones = []
for recording in recordings:
    started = time.perf_counter()
    client.clones.create(recording, locale="en-US")
    clones.append(time.perf_counter() - started)
print(json.dumps([first_answer, second_answer, first_listing, second_listing, count, *clones]))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    figures = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="bench-first-") as data_dir:
            env = {k: v for k, v in os.environ.items() if not k.startswith("DUBKIT_")}
            env["DUBKIT_SANDBOX_DIR"] = data_dir
            done = subprocess.run(
                [sys.executable, "-c", PROBE, data_dir],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            figures.append(json.loads(done.stdout.strip().splitlines()[-1]))
    first, second, listing, again, count, clone, reclone = (
        statistics.median(f[i] for f in figures) for i in range(7)
    )
    print(
        f"connect() -> first TTS answer: {first:.2f} s (target <= 1 s); a second line "
        f"{second:.3f} s ({first / second:.1f}x)"
    )
    print(
        f"first catalogue listing ({count:.0f} voices): {listing:.2f} s (target <= 0.5 s); "
        f"again {again:.3f} s ({listing / again:.1f}x)"
    )
    print(f"first clone: {clone:.2f} s; a second clone {reclone:.2f} s ({clone / reclone:.2f}x)")


if __name__ == "__main__":
    main()
