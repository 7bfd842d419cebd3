"""What a hostile or unlucky caller can do to a sandbox, measured in one run (issue 11).

    python bench/bench_safety.py

A standalone sandbox (``dubkit sandbox``) runs in its own process so its memory can be read
from /proc. Printed:

* a 512 MB chunked body: how much the sandbox took before answering, its answer, and the
  sandbox's peak resident memory before and after;
* eight concurrent uploads of the same bytes: how many materials they made;
* ``tasks/list`` (one page of 20): median latency with 20 and with 20,000 stored tasks.

It talks to whatever ``dubkit`` is importable (PYTHONPATH picks an older checkout to compare).
"""

from __future__ import annotations

import select
import socket
import statistics
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _box import Box  # bench/_box.py

import dubkit
from dubkit import samples

MiB = 1024 * 1024


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-safety-") as tmp:
        box = Box(Path(tmp) / "box")
        try:
            client = box.start()
            chunked_body(box)
            same_bytes(client, Path(tmp))
            task_list_growth(client)
        finally:
            box.stop()


def chunked_body(box: Box) -> None:
    peak_before = box.memory_kb()["VmHWM"]
    handle = box.handle
    sock = socket.create_connection(("127.0.0.1", box.port), timeout=120)
    sock.sendall(
        (
            f"POST /openapi/v1/task/translate/create HTTP/1.1\r\nHost: {handle.url[7:]}\r\n"
            f"Authorization: Bearer {handle.api_key}\r\nX-Idempotency-Key: "
            f"{uuid.uuid4().hex}\r\nContent-Type: application/json\r\n"
            f"Transfer-Encoding: chunked\r\n\r\n"
        ).encode()
    )
    chunk, sent = b"%x\r\n%s\r\n" % (MiB, b" " * MiB), 0
    try:
        while sent < 512 * MiB and not select.select([sock], [], [], 0)[0]:
            sock.sendall(chunk)
            sent += MiB
        if sent == 512 * MiB:
            sock.sendall(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    status = sock.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace")
    sock.close()
    time.sleep(1)
    print(
        f"512 MB chunked body: {sent / MiB:.0f} MiB taken before the answer "
        f"'{status}'; sandbox peak RSS {peak_before / 1024:.0f} MB before, "
        f"{box.memory_kb()['VmHWM'] / 1024:.0f} MB after"
    )


def same_bytes(client: dubkit.Client, tmp: Path) -> None:
    path = samples.speech_recording(tmp / "same.wav", "Eight uploads of the same bytes.")
    with ThreadPoolExecutor(8) as pool:
        made = list(
            pool.map(
                lambda i: client.materials.upload(
                    path, progress=False, state_dir=tmp / f"state{i}"
                ),
                range(8),
            )
        )
    print(
        f"8 concurrent uploads of the same bytes: {len({m.material_id for m in made})} material(s)"
    )


def task_list_growth(client: dubkit.Client) -> None:
    def page_ms() -> float:
        times = []
        for _ in range(40):
            started = time.perf_counter()
            client.call("tasks.list", {"currentPage": 1, "pageSize": 20})
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times)

    def add(count: int) -> None:
        with ThreadPoolExecutor(4) as pool:
            list(
                pool.map(
                    lambda i: client.translate.create(["Hi"], source="en-US", target="fr-FR"),
                    range(count),
                )
            )

    add(20)
    small = page_ms()
    add(20_000 - 20)
    large = page_ms()
    print(
        f"tasks/list page of 20: {small:.1f} ms at 20 tasks, {large:.1f} ms at 20,000 "
        f"({large / small:.2f}x)"
    )


if __name__ == "__main__":
    main()
