"""Dubbing batches (``client.dubbing.batch``) over real HTTP against the session's sandbox:
files × locales through one ledger, resumed without paying twice, refused before any upload
when the input is wrong, faults absorbed, outputs never overwritten."""

from __future__ import annotations

import sqlite3

import pytest
from _course import api, clips, dub_tasks  # noqa: F401  (fixtures)

import dubkit
from dubkit.batch.ledger import LEDGER_FILE
from dubkit.cast import Cast
from dubkit.errors import BatchOverBudgetError, ValidationError
from dubkit.media import av

PATH = "/task/media-translation/create-async"


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


def test_a_course_is_checked_with_its_glossary_and_each_verdict_shows_in_its_table(
    api, clips, tmp_path
):
    course = api.dubbing.batch(clips[:2], targets="fr-FR", out=tmp_path / "d").wait()
    cast = Cast("Lessons")
    cast.add_term("Hello", {"fr-FR": "Bonjour"})  # the sandbox's French never says it
    checked = course.check(cast=cast)
    assert sorted(checked.reports) == ["lesson00|fr-FR", "lesson01|fr-FR"]
    assert checked.verdict == "fix"
    frame = checked.to_frame()
    assert set(frame["file"]) == {"lesson00", "lesson01"}
    missed = frame[
        frame["problems"].str.contains("term ('Hello' should read 'Bonjour')", regex=False)
    ]
    assert sorted(missed["file"]) == ["lesson00", "lesson01"]  # the term's line, in each dub
    kept = course.qa()
    assert sorted(kept) == sorted(checked.reports)
    assert all(
        kept[k] == f"fix: {r.summary().split(': ', 1)[1]}" for k, r in checked.reports.items()
    )
    table = course._repr_html_()
    assert table.count("<th scope='col'>QA</th>") == 1 and table.count("■</span> fix") == 2
    assert "qa" in course.to_frame().columns
    again = api.dubbing.batch(clips[:2], targets="fr-FR", out=tmp_path / "d", start=False)
    assert again.qa() == course.qa()  # kept in the ledger: a new kernel's table shows it
    course.close()
    again.close()
