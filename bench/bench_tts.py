"""1,000 TTS lines: ``client.tts.batch`` against a one-line-per-call loop, 200 ms latency.

What it measures. Against a remote service, the cost of speaking many lines is dominated by
round trips: each request waits for the network and the service's queue, while synthesis runs
on the service's many machines in parallel. dubkit's job is to pay that latency as few times
as possible (50 lines a request, ``concurrency`` requests in flight). The sandbox injects the
latency (admin fault ``latency_ms=200`` on the TTS paths) but synthesises on one espeak-ng
lock in this process, which no real service does; left in, that serial synthesis would be
measured instead of the client. So:

1. a warm-up pass speaks all 1,000 lines once with no latency. Its audio seconds per
   wall-clock second is printed as the sandbox's synthesis speed (synthesis, WAV encoding,
   HTTP and all), and it fills the sandbox's result cache;
2. with 200 ms latency, ``client.tts.batch`` and the loop then speak the same lines, each
   answered from that cache, so both measure requests and waiting, not espeak;
3. for completeness, ``batch`` on 1,000 *new* lines with latency (synthesis included).

Targets (from the issue): batch >= 15x faster than the loop, and within 1.3x of the ideal
``ceil(batches / concurrency) x latency``. Ratios are printed from this one run; nothing is
asserted. The loop takes about 1,000 x 0.2 s, so the whole run lasts about four minutes.
"""

from __future__ import annotations

import math
import time

import dubkit
from dubkit import start_sandbox as start

LINES = 1000
LATENCY = 0.2
CONCURRENCY = 4
VOICE = "sv_s1_en_us_clear_f"


def script(tag: str) -> list[str]:
    return [f"Line {i} of the {tag} script." for i in range(LINES)]


def timed(fn):
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def main() -> None:
    box = start()
    try:
        client = dubkit.Client(box.api_key, box.url)
        lines = script("rehearsal")

        def batch(texts: list[str]) -> dubkit.Speech:
            return client.tts.batch(
                texts, voice=VOICE, output_format="wav", concurrency=CONCURRENCY, progress=False
            )

        warm_s, warm = timed(lambda: batch(lines))
        assert not warm.errors, warm.errors
        audio_s = warm.duration
        print(
            f"sandbox synthesis: {audio_s:.0f} s of audio for {LINES} lines in {warm_s:.2f} s "
            f"= {audio_s / warm_s:.0f} s of audio per second (espeak-ng, WAV, HTTP, no "
            f"latency)"
        )

        box.set_faults(latency_ms=LATENCY * 1000, paths=["/task/tts/"])
        batches = math.ceil(LINES / 50)
        ideal = math.ceil(batches / CONCURRENCY) * LATENCY
        ours_s, ours = timed(lambda: batch(lines))
        assert not ours.errors and [ln.uri for ln in ours] == [ln.uri for ln in warm]

        def loop() -> list[dubkit.SpeechLine]:
            return [client.tts.speak(text, VOICE, output_format="wav") for text in lines]

        loop_s, looped = timed(loop)
        assert all(line.ok for line in looped)
        cold_s, cold = timed(lambda: batch(script("premiere")))
        assert not cold.errors

        print(
            f"latency {LATENCY * 1000:.0f} ms, {LINES} lines, {batches} batches of 50, "
            f"concurrency {CONCURRENCY}; ideal = {ideal:.2f} s"
        )
        print(f"  one line per call (loop):      {loop_s:8.2f} s")
        print(
            f"  client.tts.batch (cached):     {ours_s:8.2f} s   "
            f"{loop_s / ours_s:6.1f}x faster than the loop (target >= 15x), "
            f"{ours_s / ideal:.2f}x the ideal (target <= 1.3x)"
        )
        print(
            f"  client.tts.batch (new lines):  {cold_s:8.2f} s   "
            f"{loop_s / cold_s:6.1f}x faster than the loop, {cold_s / ideal:.2f}x the ideal "
            f"(synthesis included)"
        )
    finally:
        box.stop()


if __name__ == "__main__":
    main()
