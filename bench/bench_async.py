"""1,000 TTS lines at 200 ms service latency: the async client, the thread-based batch, a loop.

``await AsyncClient.tts.batch`` (chunks as tasks on one event loop), ``Client.tts.batch``
(chunks on a thread pool) and a plain loop of ``client.tts.speak`` (one line a call), against
a sandbox in its own process (so its work never lands on this process's event loop). As in
bench_tts.py, a warm-up pass fills the sandbox's result cache first, so the timed passes
measure requests and waiting, not espeak-ng on one machine.

Printed, from this one run: each way's time and its ratio to the ideal
``ceil(chunks / concurrency) x latency``; the peak of Python allocations during each batch
(tracemalloc, a pass of its own so its overhead stays out of the times); and the event loop's
longest stall while the async batch runs (a heartbeat task that sleeps 5 ms and notes how late
it woke). Nothing is asserted. The loop takes about 1,000 x 0.2 s: about four minutes in all.
"""

from __future__ import annotations

import asyncio
import math
import tempfile
import time
import tracemalloc
from pathlib import Path

from _box import Box

import dubkit

LINES = 1000
LATENCY = 0.2
VOICE = "sv_s1_en_us_clear_f"


def lines() -> list[str]:
    return [f"Line {i} of the rehearsal script." for i in range(LINES)]


def ideal(concurrency: int) -> float:
    return math.ceil(math.ceil(LINES / 50) / concurrency) * LATENCY


async def async_batch(client: dubkit.AsyncClient, concurrency: int) -> tuple[float, float]:
    """Seconds for the batch, and the loop's longest stall meanwhile."""
    stall, running = 0.0, True

    async def heartbeat() -> None:
        nonlocal stall
        while running:
            before = time.perf_counter()
            await asyncio.sleep(0.005)
            stall = max(stall, time.perf_counter() - before - 0.005)

    beat = asyncio.ensure_future(heartbeat())
    started = time.perf_counter()
    speech = await client.tts.batch(
        lines(), voice=VOICE, output_format="wav", concurrency=concurrency, progress=False
    )
    took = time.perf_counter() - started
    running = False
    await beat
    assert not speech.errors, speech.errors
    return took, stall


def thread_batch(client: dubkit.Client, concurrency: int) -> float:
    started = time.perf_counter()
    speech = client.tts.batch(
        lines(), voice=VOICE, output_format="wav", concurrency=concurrency, progress=False
    )
    assert not speech.errors, speech.errors
    return time.perf_counter() - started


def peak_mib(run) -> float:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> None:
    box = Box(Path(tempfile.mkdtemp(prefix="bench-async-")))
    client = box.start()
    handle = box.handle
    try:
        handle.set_throttle(rate=0, concurrency=0)  # measure the client, not the throttle
        thread_batch(client, 4)  # the warm-up: fills the sandbox's cache, no latency
        handle.set_faults(latency_ms=LATENCY * 1000, paths=["/task/tts/"])
        aclient = dubkit.AsyncClient(handle.api_key, handle.url)

        async def both(concurrency: int) -> tuple[float, float]:
            return await async_batch(aclient, concurrency)

        loop = asyncio.new_event_loop()
        rows = []
        for concurrency in (4, 16):
            threads_s = thread_batch(client, concurrency)
            async_s, stall = loop.run_until_complete(both(concurrency))
            rows.append((concurrency, threads_s, async_s, stall))
        mem_threads = peak_mib(lambda: thread_batch(client, 4))
        mem_async = peak_mib(lambda: loop.run_until_complete(both(4)))
        started = time.perf_counter()
        for text in lines():
            client.tts.speak(text, VOICE, output_format="wav")
        loop_s = time.perf_counter() - started
        loop.run_until_complete(aclient.aclose())
        loop.close()

        print(f"{LINES} TTS lines, {math.ceil(LINES / 50)} chunks of 50, {LATENCY * 1000:.0f} ms")
        print(
            f"  plain loop (one line a call):  {loop_s:8.2f} s  {loop_s / ideal(4):6.1f}x ideal(4)"
        )
        for concurrency, threads_s, async_s, stall in rows:
            best = ideal(concurrency)
            print(f"  concurrency {concurrency} (ideal {best:.2f} s):")
            print(
                f"    threads  Client.tts.batch:       {threads_s:6.2f} s  "
                f"{threads_s / best:5.2f}x ideal, {loop_s / threads_s:5.1f}x faster than the loop"
            )
            print(
                f"    asyncio  AsyncClient.tts.batch:  {async_s:6.2f} s  "
                f"{async_s / best:5.2f}x ideal, {loop_s / async_s:5.1f}x faster than the loop; "
                f"longest event-loop stall {stall * 1000:.1f} ms"
            )
        print(
            f"  peak Python allocations (tracemalloc, concurrency 4): threads "
            f"{mem_threads:.1f} MiB, asyncio {mem_async:.1f} MiB "
            f"({mem_async / mem_threads:.2f}x)"
        )
    finally:
        client.close()
        box.stop()


if __name__ == "__main__":
    main()
