"""A batch when things go wrong, over real HTTP against the session's sandbox: a throttled
create tried again, a failed row kept alone, a cancel, a lost answer the task list cannot tell
apart (the webhook names it, or a person), a dub made but not saved. Each waits out the
sandbox's 409s or its poll timing, so the quick loop leaves the module to the full command."""

from __future__ import annotations

import numpy as np
import pytest
from _course import api, clips, dub_tasks  # noqa: F401  (fixtures)

from dubkit.batch import recovery
from dubkit.media import av
from dubkit.webhooks import Receiver

pytestmark = pytest.mark.heavy

PATH = "/task/media-translation/create-async"


def test_a_throttled_create_is_tried_again_and_a_failed_row_is_kept_alone(
    api, sandbox, clips, tmp_path
):
    silent = tmp_path / "quiet.wav"  # no speech: the sandbox has nothing to dub
    av.encode_audio(np.zeros(48_000, np.float32), 24_000, "wav", silent)
    sandbox.set_faults(error429=1.0, retry_after=0, paths=[PATH])
    course = api.dubbing.batch(
        [clips[0], silent], targets="fr-FR", out=tmp_path / "d", retries=2, start=False
    )
    course.start()
    while not all("attempt 1: Too many requests" in (r.error or "") for r in course.rows):
        assert not course._runner.finished.wait(0.05), course.rows  # tried again after 2 s
    sandbox.set_faults()
    course.wait()
    done, failed = course.rows
    assert done.status == "done" and done.attempt == 2 and done.error is None
    assert failed.status == "failed" and "no speech" in failed.error and not failed.transient
    assert len(dub_tasks(api)) == 2  # one per row: the throttled attempt made none
    course.close()


def test_cancel_starts_no_more_rows_and_the_same_call_picks_up_the_rest(
    api, sandbox, clips, tmp_path
):
    sandbox.set_timing("polls", 3)  # a task ends on its third poll: no clock involved
    try:
        course = api.dubbing.batch(
            clips, targets=["fr-FR", "de-DE"], out=tmp_path / "d", max_in_flight=1
        )
        while not any(r.status == "running" for r in course.rows):
            assert not course._runner.finished.wait(0.05)
        course.cancel().wait()
        statuses = [r.status for r in course.rows]
        assert statuses.count("done") == 1 and statuses.count("cancelled") == 5, statuses
        assert len(dub_tasks(api)) == 1
        course.close()
        rest = api.dubbing.batch(clips, targets=["fr-FR", "de-DE"], out=tmp_path / "d").wait()
        assert [r.status for r in rest.rows] == ["done"] * 6 and len(dub_tasks(api)) == 6
        rest.close()
    finally:
        sandbox.set_timing("immediate")


def test_a_cancel_while_rows_wait_to_create_starts_none_of_them(api, clips, tmp_path):
    """Two rows hold their claims and wait for the create lock (held here) as the batch is
    cancelled, so cancel() passes them by: neither may create its task after the cancel, and
    neither may be left planned (one gave its row back unstarted: seen in CI once)."""
    course = api.dubbing.batch(
        clips[:1], targets=["fr-FR", "de-DE"], out=tmp_path / "d", max_in_flight=1, start=False
    )
    with course.ledger.creating():
        course.start()
        runner = course._runner
        while len(runner._active) < 2:  # both rows claimed, their file uploaded, both waiting
            assert not runner.finished.wait(0.05), course.rows
        course.cancel()
    course.wait()
    assert [r.status for r in course.rows] == ["cancelled", "cancelled"]
    assert dub_tasks(api) == []
    course.close()


def test_a_lost_answer_the_task_list_cannot_tell_apart_is_found_by_its_webhook(
    api, sandbox, clips, tmp_path
):
    """A dub of the same file into the same locale made by hand just before: the batch's own
    create loses its answer, and the key's task list then holds two tasks alike. The batch
    waits (never creating a third) until the webhook, whose extraData echoes the create's
    idempotency key, names its own."""
    key = api.transport._secret
    secret = sandbox.set_webhook(None, api_key=key)["secret"]
    receiver = Receiver(secret, store=tmp_path / "events.sqlite3")
    sandbox.set_webhook(receiver.serve(), api_key=key)
    try:
        by_hand = api.dubbing.create(clips[0], target="fr-FR").wait()
        sandbox.set_faults(drop_after_commit=1.0, paths=[PATH])
        course = api.dubbing.batch(clips[:1], targets="fr-FR", out=tmp_path / "d").wait()
    finally:
        sandbox.set_faults()
        sandbox.set_webhook(None, api_key=key)
        receiver.stop()
    (row,) = course.rows
    assert row.status == "done" and row.task_id != by_hand.task_id
    assert sorted(dub_tasks(api)) == sorted([by_hand.task_id, row.task_id])
    # the key's tasks alone could not tell them apart: the webhook named the row's own
    material = course._runner._materials.known(row.file_hash).material_id
    details = lambda task_id: api.tasks.get(task_id).raw_result  # noqa: E731
    alike = recovery.find(api.tasks, details, row, set(), material)
    assert sorted(alike) == sorted([by_hand.task_id, row.task_id])
    course.close()


def test_a_lost_answer_nothing_can_tell_apart_waits_for_a_person_and_is_never_sent_again(
    api, sandbox, clips, tmp_path
):
    """As above with no receiver: the row ends the run ``unresolved`` naming both tasks (its
    cost counted as spent), and ``adopt`` settles it; no third task is made."""
    by_hand = api.dubbing.create(clips[0], target="fr-FR").wait()
    sandbox.set_faults(drop_after_commit=1.0, paths=[PATH])
    try:
        course = api.dubbing.batch(clips[:1], targets="fr-FR", out=tmp_path / "d").wait()
    finally:
        sandbox.set_faults()
    (row,) = course.rows
    (theirs,) = [t for t in dub_tasks(api) if t != by_hand.task_id]
    assert row.status == "unresolved" and by_hand.task_id in row.error and theirs in row.error
    assert course.spent == 60 and not course.finished
    course.adopt("lesson00", "fr-FR", theirs)
    course.start().wait()
    assert course.rows[0].status == "done" and course.rows[0].task_id == theirs
    assert sorted(dub_tasks(api)) == sorted([by_hand.task_id, theirs])
    course.close()


def test_a_dub_made_but_not_saved_is_saved_again_not_dubbed_again(api, clips, tmp_path):
    out = tmp_path / "d"
    out.mkdir()
    (out / "fr-FR").write_text("a file where the locale's folder goes")
    course = api.dubbing.batch(clips[:1], targets="fr-FR", out=out).wait()
    (row,) = course.rows
    assert row.status == "failed" and row.task_id and "fr-FR" in row.error
    assert course.spent == 60  # its dub was made and charged: the failure does not hide it
    (out / "fr-FR").unlink()
    course.retry_failed().wait()
    assert course.rows[0].status == "done" and course.rows[0].task_id == row.task_id
    assert av.probe(out / "fr-FR" / "lesson00.mp4").has_video
    assert dub_tasks(api) == [row.task_id]  # saved again, not dubbed again
    course.close()
