"""Text translation end to end over real HTTP: sync and async, glossary and context, batches,
a string as one segment."""

from __future__ import annotations

import uuid

import pytest
import requests
from _double import Answer, answer_double, fixed
from _storage_fixtures import api, storage_defaults  # noqa: F401  (fixtures)
from _waiting import PATIENCE

import dubkit
from dubkit.schema.prices import translation_credits
from dubkit.widgets.tasks import TaskMonitor


@pytest.fixture
def client(each_client):
    """This module's scenarios run through both clients (tests/_clients.py)."""
    return each_client


VOICE = "sv_s1_en_us_clear_f"


LANG = {"source": "en-US", "target": "fr-FR"}


def sandbox_answer(box, body):
    return requests.post(
        f"{box.url}/openapi/v1/task/translate/create",
        json=body,
        headers={"Authorization": f"Bearer {box.api_key}", "X-Idempotency-Key": uuid.uuid4().hex},
        timeout=10,
    ).json()


def test_a_string_is_one_segment_or_line(client):
    assert len(client.translate.create("Hello world", source="en-US", target="fr-FR")) == 1
    assert (
        len(client.translate.batch("Hello world", source="en-US", target="fr-FR", progress=False))
        == 1
    )
    task = client.translate.create_async("Hello world", source="en-US", target="fr-FR")
    assert len(task.wait(PATIENCE).result) == 1
    assert len(client.tts.create("Hello world", voice=VOICE, output_format="wav")) == 1
    assert len(client.tts.batch("Hello world", voice=VOICE, progress=False)) == 1


def test_translation_is_aligned_deterministic_and_labelled(client):
    lines = ["The light is on.", "The keeper sleeps."]
    first = client.translate.create(lines, source="en-US", target="fr-FR")
    again = client.translate.create(lines, source="en-US", target="fr-FR")
    german = client.translate.create(lines, source="en-US", target="de-DE")
    assert first.texts == again.texts  # stable
    assert first.texts != german.texts  # depends on the target language
    assert all(t and t != s for t, s in zip(first.texts, lines))
    assert first.pseudo and "pseudo-translation" in first._repr_html_()
    frame = first.to_frame()
    assert list(frame.columns) == ["source", "translation", "error"]
    assert frame["source"].tolist() == lines


def test_glossary_terms_are_applied_exactly(client):
    result = client.translate.create(
        ["The Lighthouse keeper saw the lighthouse.", "lighthouses are not matched"],
        source="en-US",
        target="fr-FR",
        glossary={"lighthouse keeper": "gardien de phare", "lighthouse": "phare"},
    )
    assert "gardien de phare" in result.texts[0]
    assert result.texts[0].count("phare") == 2
    assert "phare" not in result.texts[1]  # whole words only


def test_context_modes_pick_the_right_neighbours(client):
    lines = [f"Line {n}." for n in "ABCDEFG"]

    def used(**opts):
        result = client.translate.create(lines, source="en-US", target="es-ES", **opts)
        return [item.context_used for item in result.items]

    assert used() == [[]] * 7
    window2 = used(context_mode="neighbor", context_window=2)
    assert window2[0] == ["Line B.", "Line C."]
    assert window2[3] == ["Line B.", "Line C.", "Line E.", "Line F."]
    assert used(context_mode="neighbor", context_window=20)[6] == lines[:6]
    provided = client.translate.create(
        [{"text": "It shines.", "context": ["At night."]}, {"text": "Alone."}],
        source="en-US",
        target="es-ES",
        context_mode="provided_only",
    )
    assert [i.context_used for i in provided.items] == [["At night."], []]


def test_failed_segment_does_not_fail_the_others_and_the_check_can_be_skipped(client):
    strict = client.translate.create(["Hello.", "42 !!", "Bye."], source="en-US", target="fr-FR")
    assert list(strict.errors) == [1] and strict.texts[1] is None
    assert strict.texts[0] and strict.texts[2]
    lenient = client.translate.create(
        ["Hello.", "42 !!"], source="en-US", target="fr-FR", skip_missing_translation_check=True
    )
    assert lenient.errors == {} and lenient.texts[1] == "42 !!"


def test_scene_and_stutter_options_change_the_output(client):
    long_line = " ".join(["lighthouse"] * 20)
    subtitle = client.translate.create(
        [long_line], source="en-US", target="fr-FR", scene="subtitle"
    ).texts[0]
    assert all(len(row) <= 42 for row in subtitle.split("\n")) and "\n" in subtitle
    clean = client.translate.create(
        ["Um, so, so the the light, uh, stays."],
        source="en-US",
        target="en-GB",
        allow_stutter=False,
    ).texts
    assert clean == ["so the light, stays."]


def test_prompt_and_options_are_recorded_on_the_task(client):
    task = client.translate.create_async(
        ["Hi"], source="en-US", target="fr-FR", prompt="Keep it formal", scene="voiceover"
    )
    assert task.wait(PATIENCE).status == "finished"
    assert task.result.texts[0]


@pytest.mark.parametrize(
    "bad, field",
    [
        (dict(segments=["x"] * 51), "segments"),
        (dict(segments=[{"text": "x", "start": 1.0}]), "segments[0]"),
        (dict(segments=[{"text": "x", "start": 2.0, "end": 1.0}]), "segments[0]"),
        (dict(context_window=0, context_mode="neighbor"), "options.sourceContext.contextWindow"),
        (dict(context_window=21, context_mode="neighbor"), "options.sourceContext.contextWindow"),
        (dict(glossary={"light": 3}), "options.glossary.light"),
        (dict(context_mode="sideways"), "options.sourceContext.mode"),
        (dict(target=None), "language.target"),
    ],
)
def test_bad_input_is_refused_by_the_client_before_sending(client, bad, field):
    before = len(client.tasks.list())
    args = {"segments": ["x"], "source": "en-US", "target": "fr-FR", **bad}
    with pytest.raises(dubkit.ValidationError) as info:
        client.translate.create(args.pop("segments"), **args)
    assert info.value.field == field
    assert len(client.tasks.list()) == before  # nothing reached the service


@pytest.mark.parametrize(
    "body, named",
    [
        ({"language": LANG, "segments": [{"text": "x"}] * 51}, "segments"),
        ({"language": LANG, "segments": [{"text": "x", "start": 1}]}, "segments[0]"),
        ({"language": LANG, "segments": [{"text": "x", "start": 2, "end": 1}]}, "segments[0]"),
        (
            {
                "language": LANG,
                "segments": [{"text": "x"}],
                "options": {"sourceContext": {"mode": "neighbor", "contextWindow": 0}},
            },
            "options.sourceContext.contextWindow",
        ),
        (
            {
                "language": LANG,
                "segments": [{"text": "x"}],
                "options": {"sourceContext": {"contextWindow": 21}},
            },
            "options.sourceContext.contextWindow",
        ),
        (
            {"language": LANG, "segments": [{"text": "x"}], "options": {"glossary": {"a": 1}}},
            "options.glossary.a",
        ),
        (
            {"language": {"source": "en-US", "target": "xx-XX"}, "segments": [{"text": "x"}]},
            "language.target",
        ),
    ],
)
def test_the_sandbox_refuses_the_same_with_400_naming_the_field(sandbox, body, named):
    answer = sandbox_answer(sandbox, body)
    assert answer["code"] == 400 and named in answer["message"], answer


def test_raw_wire_body_and_unknown_fields_pass_through(client):
    result = client.translate.create(
        {"language": LANG, "segments": [{"text": "Hello"}], "futureField": {"kept": True}}
    )
    assert result.texts[0]


def test_batch_keeps_order_across_concurrent_chunks(client):
    lines = [f"Sentence number {i} about boats." for i in range(137)]
    big = client.translate.batch(
        lines, source="en-US", target="it-IT", concurrency=4, progress=False
    )
    singles = [
        client.translate.create([line], source="en-US", target="it-IT").texts[0]
        for line in (lines[0], lines[50], lines[136])
    ]
    assert len(big) == 137 and big.sources == lines
    assert [big.texts[0], big.texts[50], big.texts[136]] == singles


def test_batch_validates_every_chunk_before_sending_any(client):
    before = len(client.tasks.list())
    lines = ["fine"] * 120 + [{"text": "bad", "start": 1.0}]
    with pytest.raises(dubkit.ValidationError) as info:
        client.translate.batch(lines, source="en-US", target="fr-FR", progress=False)
    assert info.value.field == "segments[120]"
    assert len(client.tasks.list()) == before


def test_async_result_by_polling_keeps_sources(client):
    task = client.translate.create_async(["One", "Two"], source="en-US", target="fr-FR")
    frame = task.wait(PATIENCE).result.to_frame()
    assert frame["source"].tolist() == ["One", "Two"] and frame["translation"].notna().all()


def test_task_monitor_refreshes_itself_until_the_task_ends(client, sandbox):
    sandbox.set_timing("seconds", 1)
    tasks = [
        client.translate.create_async([f"watch {i}"], source="en-US", target="fr-FR")
        for i in range(2)
    ]
    monitor = TaskMonitor(tasks, poll_interval=0.1)
    assert "running" in monitor._repr_mimebundle_()["text/html"]
    assert monitor.join(timeout=PATIENCE)
    html = monitor._repr_mimebundle_()["text/html"]
    assert html.count("data-status='finished'") == 2 and "running" not in html
    assert all(t.done for t in tasks)


def test_a_task_cell_learns_the_end_from_a_wait_in_a_later_cell_at_once(client, sandbox):
    """``task.wait()`` elsewhere ends the cell's row then and there, not at its next poll (a
    minute away here): the cell that waited carries the final picture into the saved file."""
    sandbox.set_timing("seconds", 1)
    task = client.translate.create_async(["watch me"], source="en-US", target="fr-FR")
    monitor = TaskMonitor(task, poll_interval=60, max_interval=60)
    assert "running" in monitor.value
    task.wait(PATIENCE)
    assert monitor.done and "data-status='finished'" in monitor.value and ">poll<" in monitor.value
    monitor.stop()
    assert monitor.join(timeout=PATIENCE)


def test_batch_reports_a_failed_chunk_per_segment_and_keeps_the_others(
    sandbox, new_key, client_for
):
    c = client_for(new_key)
    lines = [f"Line number {i:03d}." for i in range(100)]
    sandbox.set_credits(translation_credits(lines[:50]), api_key=new_key)  # one chunk's worth
    result = c.translate.batch(lines, source="en-US", target="fr-FR", concurrency=1, progress=False)
    assert all(result.texts[:50]) and sorted(result.errors) == list(range(50, 100))
    assert all(m.startswith("request failed:") and "credits" in m for m in result.errors.values())


def test_batch_says_when_a_chunk_was_accepted_but_its_answer_lost(client, sandbox):
    sandbox.set_faults(drop_after_commit=1.0, paths=["/task/translate/create"])
    try:
        result = client.translate.batch(
            ["one", "two"], source="en-US", target="fr-FR", progress=False
        )
    finally:
        sandbox.set_faults()
    assert all(m.startswith("accepted, answer lost") for m in result.errors.values())
    assert len(result.errors) == 2


# ------------------------------------------------------------- answers the service rarely gives


def _items(*texts: str) -> Answer:
    return fixed({"items": [{"text": t} for t in texts]})


def test_an_answer_with_fewer_or_more_items_lines_up_with_the_segments_sent():
    with answer_double() as double, dubkit.Client("sk_double_0123456789", double.url) as client:
        double.script({"translate.create": [_items("Un")]})
        fewer = client.translate.create(["One", "Two", "Three"], source="en-US", target="fr-FR")
        assert fewer.texts == ["Un", None, None] and sorted(fewer.errors) == [1, 2]
        assert "answered 1 items for 3 lines" in fewer.errors[1]
        assert len(fewer.to_frame()) == 3 and "Three" in fewer._repr_html_()

        double.script({"translate.create": [_items("Un", "Deux", "Trois")]})
        more = client.translate.create(["One", "Two"], source="en-US", target="fr-FR")
        assert more.texts == ["Un", "Deux"] and not more.errors and len(more.to_frame()) == 2


def test_batch_lines_each_chunk_up_with_its_own_segments():
    with answer_double() as double, dubkit.Client("sk_double_0123456789", double.url) as client:
        double.script({"translate.create": [_items("A", "B", "C")]})  # 3 items for every chunk
        result = client.translate.batch(
            [f"Line {i}" for i in range(120)], source="en-US", target="fr-FR", progress=False
        )
    assert len(result) == 120 and len(result.to_frame()) == 120
    assert [result.texts[i] for i in (0, 2, 3, 50, 52, 53, 100, 119)] == (
        ["A", "C", None, "A", "C", None, "A", None]
    )
    assert sorted(result.errors) == [i for i in range(120) if i % 50 > 2]
