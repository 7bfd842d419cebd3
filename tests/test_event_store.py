"""The receiver's event store shared by several processes: a read in one thread never makes
another thread's write fail (the cause of a rare 503 with two receivers on one store)."""

from __future__ import annotations

import threading

from dubkit.webhooks import EventStore


def test_reads_and_writes_from_many_threads_beside_another_writer_never_fail(tmp_path):
    # ``here`` is one process's store, used by worker threads that read and write at once;
    # ``there`` is a second connection to the same file, as another process has. A read whose
    # rows were fetched after the store's lock was released held a read transaction open, and
    # a write through the same connection then failed at once with "database is locked".
    here, there = EventStore(tmp_path / "events.db"), EventStore(tmp_path / "events.db")
    here.claim("seed", "openapi-tts", "t-seed", b"{}", lease=60)
    errors: list[BaseException] = []

    def keep(work, count: int) -> None:
        for i in range(count):
            try:
                work(i)
            except Exception as exc:  # noqa: BLE001  (collected and asserted below)
                errors.append(exc)
                return

    def claims(store: EventStore, name: str):
        return lambda i: store.claim(f"{name}-{i}", None, None, b"{}", lease=60)

    workers = [
        *(
            threading.Thread(target=keep, args=(lambda i: here.get("seed"), 10000))
            for _ in range(3)
        ),
        threading.Thread(target=keep, args=(lambda i: here.counts(), 2000)),
        threading.Thread(target=keep, args=(claims(here, "here"), 4000)),
        threading.Thread(target=keep, args=(claims(there, "there"), 4000)),
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    assert here.counts() == {"pending": 8001}
    assert here.get("seed")["task_id"] == "t-seed"
    here.close()
    there.close()
