"""The client's overhead per call against raw ``requests.Session`` on the same sandbox endpoint.

Both sides make the same HTTP call to the same sandbox over keep-alive connections, and the raw
session is configured like dubkit's (``trust_env=False``, the same pool, the same headers) and
sends what dubkit sends (connect/read timeouts, no redirects followed, the ``req_id`` query
parameter): a session that re-reads proxy variables on every call, or sends no timeout, would
flatter the ratio. dubkit adds
validation, an idempotency key (POST), envelope unwrapping and typed errors. Calls alternate
between the two so drift in the machine's load hits both equally. Target: median ratio <= 1.05.
Then a profile of dubkit's calls says where the remaining microseconds go.

dubkit prepares each request itself and hands it to ``Session.send`` (see ``Transport._send``):
``Session.request`` re-merges the session's cookies and settings on every call, which under
requests 2.34 on Python 3.11 costs more than dubkit's own work. So a second baseline does what
dubkit does on the wire, by hand (``lean``): dubkit against it is dubkit's own work alone, the
figure the target would mean if requests were cheaper.

Two placements of the sandbox, each printed:

- **its own process** (the target's figure): as the service is, another program. Only the
  client's work lands between the request and the next one.
- **embedded**, a thread of this very process (the notebook default): the sandbox's own Python
  work after it has answered (its logs, its contract check) then competes with the client for
  the one interpreter lock, and is timed as the caller's. Both sides pay it, but dubkit's side,
  which runs more Python after the answer, pays more of it: this line shows that cost, it does
  not measure the client alone.
"""

from __future__ import annotations

import cProfile
import pstats
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import requests
from _box import Box
from requests.adapters import HTTPAdapter

import dubkit
from dubkit import SandboxHandle
from dubkit import start_sandbox as start

ROUNDS = 2000
SAME = {"timeout": (5.0, 120.0), "allow_redirects": False}  # what dubkit sends with each call


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def where_it_goes(call, rounds: int = 500, top: int = 6) -> None:
    """Where dubkit's own microseconds go: its functions by time spent in their own code
    (not in requests or the socket), per call, under cProfile (which inflates all figures)."""
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(rounds):
        call()
    profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    whole = max(cum for (_, _, _, cum, _) in stats.values()) / rounds * 1e6
    ours = [
        (own / rounds * 1e6, f"{Path(file).name}:{name}")
        for (file, _, name), (_, _, own, _, _) in stats.items()
        if "/dubkit/" in file and "/sandbox/" not in file
    ]
    print(f"    dubkit's own code: {sum(t for t, _ in ours):.0f} us of {whole:.0f} us a call")
    for micros, where in sorted(ours, reverse=True)[:top]:
        print(f"    {micros:8.1f} us  {where}")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as data_dir:
        own = Box(Path(data_dir))
        own.start()
        try:
            print("== the sandbox in its own process (the service's case; the target's figure)")
            compare(own.handle)
        finally:
            own.stop()
    embedded = start()
    try:
        print("\n== the sandbox embedded: a thread of this process, sharing its interpreter lock")
        compare(embedded)
    finally:
        embedded.stop()


def compare(box: SandboxHandle) -> None:
    """dubkit against raw requests on one sandbox, per endpoint."""
    # The loop calls far faster than the per-key default (200 a second): it measures
    # overhead, not throttling, so the sandbox's limits are off.
    box.set_throttle(rate=0, concurrency=0)
    client = dubkit.Client(box.api_key, box.url)
    session = requests.Session()  # configured as dubkit.Transport configures its own
    adapter = HTTPAdapter(pool_connections=16, pool_maxsize=16)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["Authorization"] = f"Bearer {box.api_key}"
    session.headers["User-Agent"] = f"dubkit/{dubkit.__version__}"
    session.trust_env = False
    # dubkit honours a CA bundle named in the environment (read once, see Transport): on a
    # machine that names one, requests then checks that path on every call, either side.
    session.verify = client._transport.session.verify
    task_id = (
        client.translate.create_async(["bench"], source="en-US", target="fr-FR").wait(10).task_id
    )
    detail_url = f"{box.url}/openapi/v1/tasks/detail"
    create_url = f"{box.url}/openapi/v1/task/translate/create"
    body = {"language": {"source": "en-US", "target": "fr-FR"}, "segments": [{"text": "hi"}]}

    def raw_get() -> None:
        answer = session.get(
            detail_url, params={"taskId": task_id, "req_id": uuid.uuid4().hex}, **SAME
        ).json()
        assert answer["code"] == 200

    def raw_post() -> None:
        answer = session.post(
            create_url,
            params={"req_id": uuid.uuid4().hex},
            json=body,
            headers={"X-Idempotency-Key": uuid.uuid4().hex},
            **SAME,
        ).json()
        assert answer["code"] == 200

    def lean(method: str, url: str, query: str, key: str | None = None, **body: object) -> None:
        """What dubkit sends, prepared by hand as dubkit prepares it."""
        headers = {**session.headers, **({"X-Idempotency-Key": key} if key else {})}
        prepared = requests.PreparedRequest()
        prepared.prepare(method=method, url=f"{url}?{query}", headers=headers, **body)
        answer = session.send(prepared, proxies={}, **SAME).json()
        assert answer["code"] == 200

    def lean_get() -> None:
        lean("GET", detail_url, f"taskId={task_id}&req_id={uuid.uuid4().hex}")

    def lean_post() -> None:
        lean("POST", create_url, f"req_id={uuid.uuid4().hex}", uuid.uuid4().hex, json=body)

    cases = {
        "GET tasks/detail": (
            raw_get,
            lean_get,
            lambda: client.call("tasks.detail", {"taskId": task_id}),
        ),
        "POST translate/create": (
            raw_post,
            lean_post,
            lambda: client.translate.create(["hi"], source="en-US", target="fr-FR"),
        ),
    }
    print(
        f"{'endpoint':24} {'raw ms':>8} {'lean ms':>8} {'dubkit ms':>10} {'ratio':>7} {'vs lean':>8}"
    )
    for name, (raw, by_hand, ours) in cases.items():
        for _ in range(50):  # warm the connection pools
            raw(), by_hand(), ours()
        raw_times, lean_times, our_times = [], [], []
        for _ in range(ROUNDS):
            raw_times.append(timed(raw))
            lean_times.append(timed(by_hand))
            our_times.append(timed(ours))
        raw_ms, lean_ms, our_ms = (
            statistics.median(times) * 1000 for times in (raw_times, lean_times, our_times)
        )
        print(
            f"{name:24} {raw_ms:8.3f} {lean_ms:8.3f} {our_ms:10.3f} {our_ms / raw_ms:7.3f} "
            f"{our_ms / lean_ms:8.3f}  (median of {ROUNDS}; target <= 1.05 vs raw)"
        )
        where_it_goes(ours)


if __name__ == "__main__":
    main()
