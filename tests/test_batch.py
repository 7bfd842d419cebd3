"""Dubbing batches (``client.dubbing.batch``) over real HTTP against the session's sandbox:
files × locales through one ledger, resumed without paying twice, refused before any upload
when the input is wrong, faults absorbed, outputs never overwritten."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from _course import course_of

import dubkit
from dubkit.batch import recovery
from dubkit.batch.ledger import LEDGER_FILE
from dubkit.errors import BatchOverBudgetError, ValidationError
from dubkit.media import av
from dubkit.webhooks import Receiver

PATH = "/task/media-translation/create-async"


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> list[Path]:
    return course_of(tmp_path_factory.mktemp("course"), 3, stem="lesson", words="Hello there.")


@pytest.fixture
def api(sandbox, new_key):
    with dubkit.Client(new_key, sandbox.url, sandbox=sandbox) as made:
        yield made


def dub_tasks(api) -> list[str]:
    return [t.task_id for t in api.tasks.list() if t.task_type in ("vt", "at")]


def test_a_course_is_dubbed_once_and_a_second_run_sends_nothing(api, sandbox, clips, tmp_path):
    before = sandbox.credits(api.transport._secret)
    course = api.dubbing.batch(clips[:2], targets=["fr-FR", "de-DE"], out=tmp_path / "dubs")
    assert course.plan.quote == 4 * 60
    course.wait()
    assert [r.status for r in course.rows] == ["done"] * 4
    assert len(api.materials.list()) == 2 and len(dub_tasks(api)) == 4
    assert before - sandbox.credits(api.transport._secret) == course.quote == 240
    for row in course.rows:
        assert row.charged == row.quote == 60
        video = tmp_path / "dubs" / row.locale / f"{row.file_name}.mp4"
        assert row.outputs == {
            "video": f"{row.locale}/{row.file_name}.mp4",
            "srt": f"{row.locale}/{row.file_name}.srt",
            "vtt": f"{row.locale}/{row.file_name}.vtt",
        }
        assert av.probe(video).has_video
        assert "-->" in video.with_suffix(".srt").read_text(encoding="utf-8")
        assert video.with_suffix(".vtt").read_text(encoding="utf-8").startswith("WEBVTT")
    course.close()

    again = api.dubbing.batch(clips[:2], targets=["fr-FR", "de-DE"], out=tmp_path / "dubs")
    again.wait()
    assert again.plan.to_send == [] and len(dub_tasks(api)) == 4
    assert len(api.materials.list()) == 2
    assert again.to_frame()["status"].tolist() == ["dubbed"] * 4
    again.close()


def test_a_folder_or_a_glob_names_the_files(api, clips, tmp_path):
    by_folder = api.dubbing.batch(clips[0].parent, targets="fr-FR", out=tmp_path / "a", start=False)
    assert [r.file_name for r in by_folder.rows] == [c.stem for c in clips]
    by_glob = api.dubbing.batch(
        str(clips[0].parent / "lesson0[12].mp4"), targets="fr-FR", out=tmp_path / "b", start=False
    )
    assert [r.file_name for r in by_glob.rows] == ["lesson01", "lesson02"]
    assert dub_tasks(api) == [] and len(api.materials.list()) == 0  # start=False sends nothing
    by_folder.close()
    by_glob.close()


@pytest.mark.parametrize(
    ("files", "targets", "options", "says"),
    [
        (["lesson00.mp4", "missing.mp4"], ["fr-FR"], {}, "files[1]: no such file: "),
        (["lesson00.mp4"], ["fr-FR", "fr-FX"], {}, "targets[1]: 'fr-FX' is not among the"),
        (["*.mov"], ["fr-FR"], {}, "files: the pattern"),
        (["lesson00.mp4"], ["fr-FR"], {"voices": ["sv_no_such_voice"]}, "voices[0]"),
    ],
)
def test_bad_input_is_refused_before_any_upload(
    api, clips, tmp_path, files, targets, options, says
):
    named = [str(clips[0].parent / f) for f in files]
    with pytest.raises(ValidationError) as refused:
        api.dubbing.batch(named, targets=targets, out=tmp_path / "dubs", **options)
    assert says in str(refused.value)
    assert len(api.materials.list()) == 0 and dub_tasks(api) == []


def test_a_cast_lacking_a_roles_voice_in_one_target_is_refused_naming_both(api, clips, tmp_path):
    cast = dubkit.Cast(default_locale="en-US")
    cast.assign("Host", api.voices.presets(locale="fr-FR", limit=1)[0].voice_id, locale="fr-FR")
    with pytest.raises(ValidationError) as refused:
        api.dubbing.batch(
            clips[:1], targets=["fr-FR", "de-DE"], out=tmp_path, cast=cast, speakers={1: "Host"}
        )
    said = str(refused.value)
    assert said.startswith("targets[1] (de-DE)") and "Host" in said
    assert len(api.materials.list()) == 0


def test_a_budget_too_small_names_the_rows_it_cannot_cover(api, clips, tmp_path):
    with pytest.raises(BatchOverBudgetError) as refused:
        api.dubbing.batch(clips, targets=["fr-FR", "de-DE"], out=tmp_path / "d", budget=250)
    assert refused.value.rows == ["lesson02 → fr-FR (60)", "lesson02 → de-DE (60)"]
    assert "4 rows" not in str(refused.value) and "2 rows do not fit" in str(refused.value)
    assert len(api.materials.list()) == 0 and dub_tasks(api) == []
    partly = api.dubbing.batch(
        clips[:2],
        targets=["fr-FR", "de-DE", "es-ES"],
        out=tmp_path / "e",
        budget=250,
        over_budget="skip",
    ).wait()
    assert [r.status for r in partly.rows] == ["done"] * 4 + ["over budget"] * 2
    assert len(dub_tasks(api)) == 4
    partly.close()


def test_a_changed_option_makes_a_new_revision_of_only_the_rows_it_touches(api, clips, tmp_path):
    out = tmp_path / "dubs"
    first = api.dubbing.batch(clips[:2], targets=["fr-FR"], out=out).wait()
    first.close()
    voice = api.voices.presets(locale="de-DE", limit=1)[0].voice_id
    second = api.dubbing.batch(
        clips[:2], targets=["fr-FR", "de-DE"], out=out, voices=None, start=False
    )
    assert second.plan.changed == [] and len(second.plan.new) == 2
    second.close()
    third = api.dubbing.batch(
        clips[:1], targets=["fr-FR"], out=out, clone_style="consistent", start=False
    )
    assert [(old.revision, new.revision) for old, new in third.plan.changed] == [(1, 2)]
    assert "options" in third.plan.describe() and "lesson00 → fr-FR (revision 2)" in (
        third.plan.describe()
    )
    third.start().wait()
    row = third.row("lesson00", "fr-FR")
    assert row.revision == 2 and row.outputs["video"] == "fr-FR/lesson00.r2.mp4"
    assert (out / "fr-FR/lesson00.mp4").exists()  # revision 1's dub is kept as it was
    assert len(dub_tasks(api)) == 3  # two first dubs, one re-made: lesson01 untouched
    assert voice  # a de-DE voice exists: the second plan only added rows
    third.close()


def test_an_earlier_result_at_a_rows_name_is_never_overwritten(api, clips, tmp_path):
    out = tmp_path / "dubs"
    mine = out / "fr-FR" / "lesson00.mp4"
    mine.parent.mkdir(parents=True)
    mine.write_bytes(b"my own earlier dub")
    course = api.dubbing.batch(clips[:1], targets="fr-FR", out=out).wait()
    row = course.rows[0]
    assert mine.read_bytes() == b"my own earlier dub"
    assert row.outputs["video"] == f"fr-FR/lesson00.{row.task_id[-8:]}.mp4"
    assert av.probe(out / row.outputs["video"]).has_video
    course.close()


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


def test_the_ledger_is_one_sqlite_file_in_the_output_folder(api, clips, tmp_path):
    course = api.dubbing.batch(clips[:1], targets="fr-FR", out=tmp_path / "d").wait()
    course.close()
    with sqlite3.connect(tmp_path / "d" / LEDGER_FILE) as db:
        ((status, key, task_id),) = db.execute(
            "SELECT status, idempotency_key, task_id FROM dubkit_batch_rows"
        ).fetchall()
    assert status == "done" and key.startswith("dk-") and task_id == course.rows[0].task_id
    assert dubkit.batch.read_rows(tmp_path / "d")[0].task_id == task_id


def test_review_marks_and_the_course_report(api, clips, tmp_path):
    course = api.dubbing.batch(clips[:2], targets="fr-FR", out=tmp_path / "d").wait()
    course.approve("lesson00")
    course.flag("lesson01", "fr-FR", "the name is said wrong")
    with pytest.raises(ValidationError, match="note: say what is wrong"):
        course.flag("lesson01", "fr-FR", "")
    with pytest.raises(ValidationError, match="no row 'lesson09'"):
        course.approve("lesson09", "fr-FR")
    csv_text = course.report(tmp_path / "report.csv").read_text(encoding="utf-8").splitlines()
    assert csv_text[0].startswith("file,locale,revision,status,quote,charged")
    assert "approved" in csv_text[1] and "flagged,the name is said wrong" in csv_text[2]
    page = course.report(tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<h1>Course report: d</h1>" in page and "2 of 2 dubbed" in page
    with pytest.raises(ValidationError, match=".csv or .html"):
        course.report(tmp_path / "report.txt")
    course.close()


def test_a_redub_of_a_rows_dub_is_its_next_revision_with_its_cost(api, clips, tmp_path):
    out = tmp_path / "d"
    course = api.dubbing.batch(clips[:1], targets="fr-FR", out=out).wait()
    dub = course.result("lesson00", "fr-FR")
    dub.edit(dub.script[0].id, translation="Bonjour et bienvenue à tous.")
    row = course.redub("lesson00", "fr-FR", dub)
    assert (row.revision, row.kind, row.status) == (2, "redub", "done")
    assert row.quote == 2 and row.task_id == course.ledger.history(row.key)[0].task_id
    assert av.probe(out / row.outputs["video"]).has_video
    assert row.outputs["video"] == "fr-FR/lesson00.r2.mp4" and (out / "fr-FR/lesson00.mp4").exists()
    assert course.rows[0].revision == 2  # the row now stands at its re-dub
    again = api.dubbing.batch(clips[:1], targets="fr-FR", out=out, start=False)
    assert again.plan.to_send == [] and again.rows[0].kind == "redub"  # not dubbed over
    course.close()
    again.close()


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
