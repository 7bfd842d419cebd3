"""The sandbox's database stays flat as it grows: every statement it runs is planned by SQLite
without a walk, sort or count of a growing table."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from dubkit import samples
from dubkit.sandbox.database import Database
from dubkit.sandbox.products.materials import SCHEMA as MATERIALS_SCHEMA

GROWING = ("tasks", "materials", "cloned_voices", "outbox", "deliveries", "t", "o")


PENDING_ONLY = ("outbox_due",)


def _walks(store: Database, statement: str) -> list[str]:
    """The plan lines of ``statement`` that walk or sort a growing table, or count its rows
    (a count is a walk of every row it counts, however well indexed)."""
    plan = [row["detail"] for row in store.all("EXPLAIN QUERY PLAN " + statement)]
    if "COUNT(" in statement.upper():
        plan.append("COUNT")
    bounded = any(f"INDEX {index} " in line for line in plan for index in PENDING_ONLY)
    return [
        line
        for line in plan
        if line == "COUNT"
        or ("TEMP B-TREE" in line and not bounded)
        or (line.startswith("SCAN ") and line.split()[1] in GROWING)
    ]


def test_calls_and_idle_time_run_no_statement_that_walks_a_growing_table(
    client, sandbox, tmp_path: Path
):
    recording = samples.speech_recording(tmp_path / "voice.wav", "Stored rows do not slow me.")
    store = sandbox.server.backend.db
    seen: set[str] = set()
    store._db.set_trace_callback(seen.add)
    try:
        task = client.translate.create_async(["Hello"], source="en-US", target="fr-FR")
        task.wait()
        client.translate.create(["Hello"], source="en-US", target="fr-FR")
        client.tts.speak("Hello there.", client.voices.presets(limit=1)[0].voice_id)
        client.materials.upload(recording, progress=False, state_dir=tmp_path / "state")
        client.call("tasks.detail", {"taskId": task.task_id})
        client.call("tasks.list", {"currentPage": 1, "pageSize": 20})
        client.call("tasks.list", {"pageSize": 5, "status": "finished", "taskType": "vt"})
        client.call("materials.list", {"currentPage": 1, "pageSize": 20})
        for order in ("create_time", "update_time", "name", "voiceId"):
            client.call("voices.clones", {"orderBy": order, "order": "asc"})
        time.sleep(11)  # idle: the ticker, the delivery loop and two recovery passes run
    finally:
        store._db.set_trace_callback(None)
    statements = {s for s in seen if s.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE"))}
    assert any("FROM outbox o WHERE o.task_id" in s for s in statements), "no recovery pass seen"
    walking = {s: lines for s in statements if (lines := _walks(store, s))}
    assert walking == {}, "\n".join(f"{s[:160]}: {lines}" for s, lines in walking.items())


def test_kept_counts_follow_inserts_deletes_and_start_from_rows_already_stored(tmp_path: Path):
    store = Database(tmp_path / "box.sqlite3").ensure(MATERIALS_SCHEMA)

    def add(api_key: str, seq: int, deleted: int = 0) -> str:
        material_id = uuid.uuid4().hex
        store.execute(
            "INSERT INTO materials (material_id, api_key, file_hash, relpath, object_key, "
            "record, deleted, seq) VALUES (?, ?, 'h', 'r', 'o', '{}', ?, ?)",
            (material_id, api_key, deleted, seq),
        )
        return material_id

    # rows stored before the counts were kept (an older data dir) are counted once
    for seq in range(5):
        add("a", seq, deleted=int(seq == 4))
    add("b", 9)
    store.count_live_rows("materials")
    assert (store.live_rows("materials", "a"), store.live_rows("materials", "b")) == (4, 1)

    kept = add("a", 10)
    add("a", 11, deleted=1)
    assert store.live_rows("materials", "a") == 5
    store.execute("UPDATE materials SET deleted = 1 WHERE material_id = ?", (kept,))
    assert store.live_rows("materials", "a") == 4
    store.execute("DELETE FROM materials WHERE api_key = 'b'")
    assert store.live_rows("materials", "b") == 0
    assert store.live_rows("materials", "nobody") == 0

    # a second opening of the same file keeps counting from where it was
    store.close()
    again = Database(tmp_path / "box.sqlite3").ensure(MATERIALS_SCHEMA).count_live_rows("materials")
    add_again = again.execute(
        "INSERT INTO materials (material_id, api_key, file_hash, relpath, object_key, record, "
        "seq) VALUES ('m2', 'a', 'h', 'r', 'o', '{}', 12)"
    )
    assert add_again.rowcount == 1 and again.live_rows("materials", "a") == 5
    truth = again.one("SELECT COUNT(*) AS n FROM materials WHERE api_key = 'a' AND deleted = 0")
    assert truth["n"] == 5


@pytest.mark.parametrize("body", [{}, {"searchName": "zz"}, {"voiceIds": ["cv_nope"]}])
def test_clone_list_totals_match_the_records_it_can_page_through(client, body):
    first = client.call("voices.clones", {**body, "pageSize": 100})
    seen = len(first["records"])
    page = 2
    while seen < first["total"]:
        more = client.call("voices.clones", {**body, "pageSize": 100, "currentPage": page})
        assert more["records"], "total promises more records than the pages hold"
        seen, page = seen + len(more["records"]), page + 1
    assert seen == first["total"]
