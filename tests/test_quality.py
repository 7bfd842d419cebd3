"""A dub checked before anyone listens, measured on sandbox dubs seeded with known faults: the
check flags exactly the seeded lines; a translator's subtitles come in and re-dub only the lines
they change; a series glossary reaches the translation request and its misses are flagged."""

from __future__ import annotations

import re

import pytest
from _actions import use
from _waiting import PATIENCE

import dubkit
from dubkit import samples
from dubkit.cast import Cast
from dubkit.media.subtitles import Cue, parse_srt, to_srt
from dubkit.results import DubbingResult
from dubkit.results.quality import Limits

# Eight lines whose clean French dub is within every limit (their subtitles under 17
# characters a second), two speakers taking turns.
SCRIPT = [
    ("Welcome to the harbour, where the boats come home at night.", "f2"),
    ("Gulls follow the boats out past the lighthouse and back.", "m3"),
    ("When the weather turns, the whole town comes down to watch.", "f2"),
    ("Tomorrow we will follow one boat from dawn to dusk.", "m3"),
    ("The old lighthouse keeper still climbs the stairs each evening.", "f2"),
    ("Children run along the harbour wall after school.", "m3"),
    ("Every summer the town holds a festival by the sea.", "f2"),
    ("Nobody remembers a quieter winter than this one.", "m3"),
]
QUIET = "6"  # laid 15 dB down by the sandbox's fault, as a quiet take would be


@pytest.fixture(scope="module")
def made(sandbox, tmp_path_factory):
    """One sandbox dub of the eight lines, line 6 fifteen dB quieter than the rest."""
    key = sandbox.create_key("quality")
    client = dubkit.Client(key, sandbox.url, sandbox=sandbox)
    clip = samples.narrated_clip(
        tmp_path_factory.mktemp("quality") / "harbour.mp4", SCRIPT, width=160, height=90, fps=10
    )
    material = client.materials.upload(clip, progress=False)
    sandbox.set_faults(line_gain_db={QUIET: -15})
    try:
        task = client.dubbing.create(
            material, target="fr-FR", source="en-US", separation_mode="remove"
        )
    finally:
        sandbox.set_faults()  # only this dub is made while it is set
    raw = task.wait(PATIENCE).result.raw
    yield key, client, raw
    client.close()


def fresh(made) -> tuple[dubkit.Client, DubbingResult]:
    _, client, raw = made
    return client, DubbingResult(client.transport, raw)


def precision_recall(flagged: list[str], seeded: set[str]) -> tuple[float, float]:
    hits = len(seeded & set(flagged))
    return hits / max(1, len(flagged)), hits / len(seeded)


def test_the_quiet_line_is_the_only_one_flagged_and_a_second_check_fetches_nothing(made):
    client, dub = fresh(made)
    report = dub.check()
    assert report.flagged == [QUIET]
    quiet = report.line(QUIET)
    assert [(f.problem, f.verdict) for f in quiet.findings] == [("loudness", "fix")]
    assert quiet.loudness_delta is not None and -18 < quiet.loudness_delta < -12
    assert report.verdict == "fix" and report.counts() == {"ok": 7, "listen": 0, "fix": 1}
    frame = report.to_frame()
    assert list(frame["id"]) == [str(i) for i in range(1, 9)]
    assert frame.loc[frame["id"] == QUIET, "problems"].item().startswith("loudness (")
    # Every line's pace is the service's report; its reading speed is within Netflix's 17.
    assert all(line.speed_from == "service" and line.cps < 17 for line in report.lines)
    fetched = len(dub._measured)
    dub.check()
    assert len(dub._measured) == fetched == 8  # one measure per line's audio, kept


def test_seeded_faults_are_flagged_exactly_after_a_redub(made, tmp_path):
    client, dub = fresh(made)
    checked = dub.check()
    third = checked.line("3")
    long_line = dub.line("2")
    dub.edit("2", translation=" ".join([long_line.translation] * 3))  # three times too long
    # line 4 starts 0.6 s before line 3's dubbed speech ends: the two overlap
    dub.edit("4", start=round(third.start + third.spoken - 0.6, 3))
    seven = dub.line("7")
    dub.edit(
        "7", translation=seven.translation + " " + seven.translation[: len(seven.translation) // 2]
    )
    again = client.dubbing.redub(dub, tmp_path, progress=False)
    report = again.check()
    seeded = {"2", "3", "4", QUIET, "7"}
    assert set(report.flagged) == seeded, report.to_frame()[
        ["id", "start", "end", "speed", "overlap", "overrun", "problems"]
    ].to_string()
    assert precision_recall(report.flagged, seeded) == (1.0, 1.0)
    problems = {line.id: {f.problem for f in line.findings} for line in report.lines}
    assert "sped up" in problems["2"] and "reading speed" in problems["2"]
    assert "overlaps" in problems["3"] and "overlaps" in problems["4"]
    assert "loudness" in problems[QUIET]
    assert "reading speed" in problems["7"]
    page = report._repr_html_()
    assert page.count("data-verdict='fix'") + page.count("data-verdict='listen'") == 2 * len(seeded)
    assert "<svg" in page and "role='img'" in page and "<table" in page


def test_the_timeline_marks_flagged_lines_by_shape_and_word(made):
    _, dub = fresh(made)
    svg = dub.check().timeline()._repr_html_()
    assert svg.count("<g data-dubkit-line=") == 8
    flagged = re.findall(r"<g data-dubkit-line='(\d+)' data-verdict='(\w+)'>", svg)
    assert [i for i, v in flagged if v != "ok"] == [QUIET]
    assert "<rect x=" in svg and f">fix {QUIET}</text>" in svg  # a square and the word
    assert "Timeline of 8 lines, 1 flagged" in svg


def test_limits_are_settable(made):
    _, dub = fresh(made)
    strict = dub.check(Limits(reading_speed=5))
    assert all("reading speed" in {f.problem for f in line.findings} for line in strict.lines)
    loose = dub.check(Limits(loudness_listen=30, loudness_fix=40))
    assert loose.flagged == []


def test_a_dubs_own_subtitles_read_back_change_nothing(made, tmp_path):
    _, dub = fresh(made)
    for fmt in ("srt", "vtt"):
        path = tmp_path / f"own.{fmt}"
        path.write_text(dub.subtitles.text(fmt), encoding="utf-8")
        edits = dub.edit_from_subtitles(path)
        assert edits.changed == [] and edits.unreached == [] and edits.unmatched_cues == []
        assert edits.unchanged == [line.id for line in dub.script]
        assert dub.edited() == []


def test_three_changed_cues_re_dub_exactly_three_lines(made, sandbox, tmp_path):
    key, client, _ = made
    _, dub = fresh(made)
    cues = parse_srt(dub.subtitles.text("srt"))
    changed = {
        1: "Bienvenue au port, où rentrent les bateaux.",
        4: "Demain, un bateau.",
        7: "Personne.",
    }
    for i, text in changed.items():
        cues[i] = Cue(cues[i].start, cues[i].end, text)
    path = tmp_path / "fr.srt"
    path.write_text(to_srt(cues), encoding="utf-8")
    edits = dub.edit_from_subtitles(path)
    assert edits.changed == ["2", "5", "8"] and len(edits.unchanged) == 5
    before = _tts_calls(sandbox, key)
    again = client.dubbing.redub(dub, tmp_path / "redub", progress=False)
    assert again.redubbed == ["2", "5", "8"]
    after = _tts_calls(sandbox, key)
    assert after["calls"] == before["calls"] + 1  # one TTS request (one provider)
    assert sorted(after["latest"]) == sorted(changed.values())  # holding exactly those lines


def _tts_calls(sandbox, key) -> dict:
    student = next(
        s for s in sandbox.class_report(everyone=True).students if key.endswith(s.api_key[-4:])
    )
    calls = sum(
        n for kind, counts in student.tasks.items() if kind == "tts" for n in counts.values()
    )
    latest = next((t for t in student.latest if t.task_type == "tts"), None)
    texts = [line["text"] for line in (latest.request or {}).get("data", [])] if latest else []
    return {"calls": calls, "latest": texts}


@pytest.mark.parametrize(
    "text, says",
    [
        ("1\n00:00:00,500 --> 00:00:02,000\nBonjour\n\n2\nnot a time\nSalut\n", r"fr\.srt, line 6"),
        ("1\n00:00:00,500 --> 00:00:02,000\n\n", r"fr\.srt: holds no cues|fr\.srt, line 1"),
        (
            to_srt([Cue(100 + i, 101 + i, "ailleurs") for i in range(8)]),
            r"fr\.srt, line 1: .*another dub",
        ),
    ],
    ids=["malformed", "empty", "another dub's"],
)
def test_a_bad_cue_file_is_refused_naming_file_and_line_and_nothing_changes(
    made, text, says, tmp_path
):
    _, dub = fresh(made)
    path = tmp_path / "fr.srt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(dubkit.ValidationError, match=says):
        dub.edit_from_subtitles(path)
    assert dub.edited() == []


def test_a_glossary_term_reaches_the_translation_and_a_line_missing_it_is_flagged(made, tmp_path):
    client, dub = fresh(made)
    cast = Cast("The harbour", default_locale="en-US")
    cast.add_term("Harbour Lights", {"fr-FR": "Phare du Port"})
    cast.add_term("harbour", {"fr": "port"})
    sent = []
    client.transport.session.hooks["response"].append(lambda r, **_: sent.append(r.request))
    made_text = client.translate.create(
        ["Tonight at Harbour Lights."], source="en-US", target="fr-FR", cast=cast
    )
    body = next(r.body for r in sent if "/task/translate/create?" in r.url)
    glossary = __import__("json").loads(body)["options"]["glossary"]
    assert glossary == {"Harbour Lights": "Phare du Port", "harbour": "port"}
    assert "Phare du Port" in made_text.items[0].text
    # Lines 1 and 6 say "harbour"; the sandbox's French does not say "port": both flagged.
    flagged = dub.check(Limits(loudness_fix=99, loudness_listen=99), cast=cast)
    assert flagged.flagged == ["1", "6"]
    assert [f.problem for f in flagged.line("1").findings] == ["term"]
    dub.edit("1", translation="Bienvenue au port.")
    assert dub.check(Limits(loudness_fix=99, loudness_listen=99), cast=cast).flagged == ["6"]


def test_the_glossary_and_pronunciations_live_in_the_cast_file(tmp_path):
    cast = Cast("The harbour", default_locale="en-US")
    cast.assign("Narrator", "sv_s3_en_us_story_f")
    cast.add_term("Harbour Lights", {"fr-FR": "Phare du Port"})
    cast.add_pronunciation("Nguyen", "Win")
    cast.add_pronunciation("Nguyen", "Nouyèn", locale="fr-FR")
    path = cast.save(tmp_path / "cast.json")
    again = Cast.load(path)
    assert again.terms == {"Harbour Lights": {"fr-FR": "Phare du Port"}}
    assert again.glossary("fr-FR") == {"Harbour Lights": "Phare du Port"}
    assert again.glossary("de-DE") == {}
    said = again.lines_for(["NARRATOR: Hello, Mr Nguyen."])
    assert said[0]["text"] == "Hello, Mr Win."
    assert again.pronounce("Nguyen!", "fr-FR") == "Nouyèn!"
    with pytest.raises(dubkit.ValidationError, match=r"renderings\['fx-FR'\].*fr-FR"):
        cast.add_term("Quay", {"fx-FR": "Quai"})


def test_an_unknown_glossary_locale_in_the_file_names_the_file_and_line(tmp_path):
    path = tmp_path / "cast.json"
    path.write_text(
        '{\n  "title": "x",\n  "roles": [],\n  "terms": {\n    "Quay": {\n'
        '      "fr-FR": "Quai",\n      "xx-YY": "?"\n    }\n  }\n}\n',
        encoding="utf-8",
    )
    with pytest.raises(dubkit.ValidationError, match=r"cast\.json, line 7: terms 'Quay': 'xx-YY'"):
        Cast.load(path)


def test_a_redub_says_names_as_the_cast_spells_them_and_subtitles_keep_the_name(
    made, sandbox, tmp_path
):
    key, client, _ = made
    _, dub = fresh(made)
    cast = Cast("The harbour")
    cast.add_pronunciation("Nguyen", "Nouyèn", locale="fr-FR")
    dub.edit("1", translation="Bienvenue, monsieur Nguyen.")
    again = client.dubbing.redub(dub, tmp_path, progress=False, cast=cast)
    assert _tts_calls(sandbox, key)["latest"] == ["Bienvenue, monsieur Nouyèn."]
    assert "Bienvenue, monsieur Nguyen." in again.subtitles.text("srt")


def test_the_common_mends_are_one_call_each_and_re_dub_only_their_line(made, tmp_path):
    client, dub = fresh(made)
    after = dub.line("3").start
    dub.edit("2", translation=" ".join([dub.line("2").translation] * 2))
    squeezed = client.dubbing.redub(dub, tmp_path / "a", progress=False).check().line("2")
    line = dub.borrow_silence("2")
    assert line.end == round(after - 0.05, 3)
    roomy = client.dubbing.redub(dub, tmp_path / "b", progress=False)
    assert roomy.redubbed == ["2"]
    assert roomy.check().line("2").speed < squeezed.speed  # more room: less squeezed
    _, other = fresh(made)
    natural = other.service_lines()["5"]["raw_duration"]
    assert other.set_speed("5", 1.25).end == round(other.line("5").start + natural / 1.25, 3)
    assert [line.id for line in other.edited()] == ["5"]
    with pytest.raises(dubkit.ValidationError, match="speed: from 0.8 to 1.6"):
        other.set_speed("5", 3)
    assert other.borrow_silence("8").end == other.original.duration  # the last: to the end
    with pytest.raises(dubkit.ValidationError, match="no silence after it"):
        other.borrow_silence("8")


def test_the_live_check_opens_a_line_and_mends_it_with_one_button(made):
    client, dub = fresh(made)
    view = dubkit.CheckView(client, dub)
    assert view.value.count("role='button'") == 8 and "role='group'" in view.value
    assert "role='img'" in view.fallback_html()  # saved notebooks keep the picture
    use(view, "line", "2")
    assert "<b>Line 2</b>" in view.opened and "<audio autoplay" in view.opened
    assert view.editor is not None and view.editor.dub is dub
    use(view, "borrow", "2")
    assert "line 2 now ends at" in view.value and [x.id for x in dub.edited()] == ["2"]
    use(view, "pace", "3")
    assert [x.id for x in dub.edited()] == ["2", "3"]
    use(view, "borrow", "8")
    use(view, "borrow", "8")  # the second time there is nothing left to borrow
    assert "no silence after it" in view.value
