"""What things cost: the published price table the sandbox charges from (credits read through
the admin API before and after), the client's quotes from the same table, the budget guard
that refuses a call before it is sent, and the throttling a paid call may meet on the way."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
from _double import answer_double, fixed
from _waiting import PATIENCE

import dubkit
from dubkit import samples
from dubkit.sandbox.throttle import DEFAULTS as THROTTLE_DEFAULTS
from dubkit.schema import prices

VOICE = "sv_s1_en_us_clear_f"
FAST = dubkit.RetryPolicy(max_retries=2, backoff=0.01, max_backoff=0.05, max_retry_after=0.01)
SCRIPT = ["The harbour wakes before the sun.", "Boats leave one by one."]


def spent(sandbox, key, action):
    """Credits ``action`` took from ``key``, and what it returned."""
    before = sandbox.credits(key)
    result = action()
    return before - sandbox.credits(key), result


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("priced")
    video = samples.narrated_clip(folder / "short.mp4", SCRIPT)
    spoken = samples.speech_recording(folder / "line.wav", SCRIPT[0])
    audio, rate = sf.read(spoken)
    long = folder / "long.wav"  # 61 s: the line, then silence
    sf.write(long, np.concatenate([audio, np.zeros(int(61 * rate) - len(audio))]), rate)
    return {"video": video, "long": long}


# --------------------------------------------------------------------------- the table


@pytest.mark.parametrize(
    "lines, credits",
    [
        (["abc"] * 50, 2),  # 150 characters in 50 lines: the guide's 2, not 2 a line
        (["x"], 2),
        (["x" * 200], 2),
        (["x" * 201], 4),
        (["x" * 400], 4),
        (["x" * 401], 6),
        (["x" * 100] * 2, 2),  # 200 in two lines
        (["x" * 100, "y" * 101], 4),  # 201 in two
        (["x" * 100] * 4, 4),  # 400 in four
        (["x" * 100] * 4 + ["z"], 6),  # 401 in five
        (["x" * 150, "y" * 250], 4),
    ],
)
def test_speech_costs_2_credits_per_started_200_characters_of_the_whole_request(
    sandbox, new_key, client_for, lines, credits
):
    c = client_for(new_key)
    quote = c.tts.quote(lines)
    assert quote.credits == credits and quote.estimate
    cost, speech = spent(
        sandbox, new_key, lambda: c.tts.create(lines, voice=VOICE, output_format="wav")
    )
    assert cost == credits == quote.credits and not speech.errors


def test_a_failed_line_gives_back_its_share_and_never_more(sandbox, new_key, client_for):
    """401 characters in four lines cost 6; the failed one (100 of the 401) gives back its
    share, 1.496 rounded to 1 (largest remainders: the shares 2, 1, 2, 1 add up to 6)."""
    c = client_for(new_key)
    lines = ["x" * 100, {"text": "y" * 100, "duration": 0.2}, "z" * 150, "w" * 51]
    assert prices.speech_shares(["x" * 100, "y" * 100, "z" * 150, "w" * 51]) == [2, 1, 2, 1]
    cost, speech = spent(
        sandbox, new_key, lambda: c.tts.create(lines, voice=VOICE, output_format="wav")
    )
    assert [line.ok for line in speech] == [True, False, True, True]
    assert cost == 6 - 1


def test_a_request_whose_every_line_failed_costs_nothing(sandbox, new_key, client_for):
    c = client_for(new_key)
    lines = [{"text": "x" * 150, "duration": 0.2}, {"text": "y" * 120, "duration": 0.2}]
    cost, speech = spent(
        sandbox, new_key, lambda: c.tts.create(lines, voice=VOICE, output_format="wav")
    )
    assert len(speech.errors) == 2 and cost == 0


@pytest.mark.parametrize(
    "sizes", [[3] * 50, [1], [200, 1], [100, 100, 150, 51], [7, 7, 7], [1] * 401, [199, 199, 3]]
)
def test_speech_shares_add_up_to_the_charge_in_proportion(sizes):
    texts = ["x" * n for n in sizes]
    shares = prices.speech_shares(texts)
    total = prices.speech_credits(texts)
    assert sum(shares) == total and all(s >= 0 for s in shares)
    for share, n in zip(shares, sizes):  # each within one credit of its exact proportion
        assert abs(share - total * n / sum(sizes)) < 1


def test_a_batch_quote_counts_each_chunk_of_50_lines_as_a_request(sandbox, new_key, client_for):
    c = client_for(new_key)
    lines = ["abc"] * 60  # 150 characters, then 30: 2 + 2 credits
    quote = c.tts.quote(lines)
    assert quote.credits == 4 and "in 2 requests" in quote.basis
    cost, speech = spent(
        sandbox,
        new_key,
        lambda: c.tts.batch(lines, voice=VOICE, output_format="wav", progress=False),
    )
    assert cost == quote.credits and not speech.errors


@pytest.mark.parametrize(
    "segments, credits", [(["x" * 100], 1), (["x" * 101], 2), (["x" * 60, "y" * 60], 2)]
)
def test_translation_costs_1_credit_per_started_100_characters_of_all_segments(
    sandbox, new_key, client_for, segments, credits
):
    c = client_for(new_key)
    assert c.translate.quote(segments).credits == credits
    cost, _ = spent(
        sandbox, new_key, lambda: c.translate.create(segments, source="en-US", target="fr-FR")
    )
    assert cost == credits


def test_a_batch_quote_rounds_each_request_up_on_its_own(sandbox, new_key, client_for):
    c = client_for(new_key)
    segments = ["x" * 10] * 60  # 50 + 10 segments: 500 and 100 characters, 5 + 1 credits
    assert c.translate.quote(segments).credits == 6
    cost, result = spent(
        sandbox,
        new_key,
        lambda: c.translate.batch(segments, source="en-US", target="fr-FR", progress=False),
    )
    assert cost == 6 and not result.errors


def test_a_clone_costs_10_credits(sandbox, new_key, client_for, client):
    c = client_for(new_key)
    preview = client.voices.preset(VOICE).audio
    cost, clone = spent(sandbox, new_key, lambda: c.clones.create(preview, provider="V1"))
    assert cost == 10 == c.clones.quote().credits and clone.voice_id


def test_a_dub_under_a_minute_costs_a_full_minute_and_lip_sync_adds_90(
    sandbox, new_key, client_for, clips
):
    c = client_for(new_key)
    material = c.materials.upload(clips["video"], progress=False)
    assert material.duration_seconds < 60
    assert c.dubbing.quote(clips["video"]).credits == 60  # a local file, measured here
    assert (c.dubbing.quote(material).credits, c.dubbing.quote(material, lipsync=True).credits) == (
        60,
        150,
    )
    plain, task = spent(sandbox, new_key, lambda: c.dubbing.create(material, target="fr-FR"))
    assert plain == 60 and task.wait(PATIENCE).status == "finished"
    lipped, task = spent(
        sandbox, new_key, lambda: c.dubbing.create(material, target="fr-FR", lipsync=True)
    )
    dub = task.wait(PATIENCE).result
    assert lipped == 150 and any("lip sync" in notice for notice in dub.notices)


def test_a_dub_past_a_minute_costs_each_started_minute(sandbox, new_key, client_for, clips):
    c = client_for(new_key)
    material = c.materials.upload(clips["long"], progress=False)
    quote = c.dubbing.quote(material, lipsync=True)  # audio: lip sync does not apply
    assert quote.credits == 120 and "2 min" in quote.basis
    cost, task = spent(sandbox, new_key, lambda: c.dubbing.create(material, target="fr-FR"))
    assert cost == 120 and task.wait(PATIENCE).status == "finished"


def test_asset_calls_are_free(sandbox, new_key, client_for, clips):
    c = client_for(new_key)
    cost, _ = spent(
        sandbox,
        new_key,
        lambda: (
            c.materials.delete(c.materials.upload(clips["long"], progress=False)),
            c.materials.list(),
            c.voices.presets(),
            c.voices.clones(),
        ),
    )
    assert cost == 0


def test_the_prices_are_one_table_with_its_source(client):
    table = client.prices
    assert set(table["product"]) >= {"dubbing", "lip sync", "text to speech", "voice clone"}
    assert table.attrs["read_on"] == prices.PRICES_READ_ON and "Source:" in prices.__doc__
    assert prices.dub_credits(8.36) == 60 and prices.dub_credits(8.36, lipsync=True) == 150


# --------------------------------------------------------------------------- the budget


def test_a_budget_refuses_a_call_before_it_is_sent(sandbox, new_key):
    with dubkit.Client(new_key, sandbox.url, sandbox=sandbox, budget=5) as c:
        c.tts.create(["x" * 300], voice=VOICE, output_format="wav")  # 4 credits
        before = (sandbox.credits(new_key), len(c.tasks.list()))
        with pytest.raises(dubkit.BudgetExceededError) as err:
            c.translate.create(["x" * 150], source="en-US", target="fr-FR")  # 2 credits
        assert (err.value.budget, err.value.spent, err.value.cost) == (5, 4, 2)
        assert "the budget is 5 credits, 4 spent, 1 left. Nothing was sent" in str(err.value)
        assert (sandbox.credits(new_key), len(c.tasks.list())) == before  # nothing was sent
        with pytest.raises(dubkit.BadRequestError):  # refused by the service: not spent
            c.translate.create(["x"], source="en-US", target="xx-XX")
        c.translate.create(["x"], source="en-US", target="fr-FR")  # 1 credit still fits
        assert (c.budget.spent, c.budget.left) == (5, 0)


def test_a_budget_prices_a_dub_from_its_material(sandbox, new_key, clips):
    with dubkit.Client(new_key, sandbox.url, sandbox=sandbox, budget=100) as c:
        material = c.materials.upload(clips["video"], progress=False)
        before = sandbox.credits(new_key)
        with pytest.raises(dubkit.BudgetExceededError, match="150 credits"):
            c.dubbing.create(material, target="fr-FR", lipsync=True)
        assert sandbox.credits(new_key) == before and c.budget.spent == 0


def test_a_budget_guards_the_escape_hatch_and_a_dub_before_its_upload(sandbox, new_key, clips):
    with dubkit.Client(new_key, sandbox.url, sandbox=sandbox, budget=3) as c:
        body = {"data": [{"text": "x" * 300, "voiceId": VOICE}]}  # 4 credits
        before = (sandbox.credits(new_key), len(c.materials.list()))
        with pytest.raises(dubkit.BudgetExceededError):
            c.request("POST", "/task/tts/create", json=body)
        with pytest.raises(dubkit.BudgetExceededError, match="60 credits"):
            c.dubbing.create(clips["video"], target="fr-FR")  # measured here, never uploaded
        assert (sandbox.credits(new_key), len(c.materials.list())) == before
        c.request("POST", "/task/tts/create", json={"data": [{"text": "x", "voiceId": VOICE}]})
        assert c.budget.spent == 2 == before[0] - sandbox.credits(new_key)


def test_a_call_sent_again_with_its_key_is_not_counted_twice(limits, new_key):
    """The way to find out whether a lost answer's call committed (send it again with its
    idempotency key) is not refused by a budget that already counts it."""
    sandbox = limits
    with dubkit.Client(new_key, sandbox.url, sandbox=sandbox, budget=2, retry=FAST) as c:
        sandbox.set_faults(drop_after_commit=1, paths=["/task/tts/create"])
        with pytest.raises(dubkit.DubkitError) as lost:
            c.tts.create(["Hello."], voice=VOICE, idempotency_key="lesson-1")
        assert lost.value.maybe_committed and c.budget.spent == 2
        sandbox.set_faults()
        with pytest.raises(dubkit.IdempotencyConflictError):  # it had committed
            c.tts.create(["Hello."], voice=VOICE, idempotency_key="lesson-1")
        assert c.budget.spent == 2


def test_a_material_without_a_duration_cannot_be_priced():
    material = {"materialId": "m1", "name": "new.mp4", "category": "video"}  # not measured yet
    with (
        answer_double() as double,
        dubkit.Client("sk_double_0123456789", double.url, budget=1000) as c,
    ):
        double.script({"materials.list": [fixed({"total": 1, "records": [material]})]})
        with pytest.raises(dubkit.ValidationError, match="has no duration yet"):
            c.dubbing.quote("m1")
        with pytest.raises(dubkit.ValidationError, match="has no duration yet"):
            c.dubbing.create("m1", target="fr-FR")
        assert not any("media-translation" in target for _, target, _, _ in double.requests)


def test_a_budget_works_the_same_against_the_service():
    """A double of the service (no sandbox): the guard prices a dub from the material list the
    service answers and refuses it without sending the create; a TTS call that fits is sent."""
    material = {"materialId": "m1", "name": "talk.mp4", "category": "video", "duration": 95_000}
    with (
        answer_double() as double,
        dubkit.Client("sk_double_0123456789", double.url, budget=100) as c,
    ):
        double.script(
            {
                "materials.list": [fixed({"total": 1, "records": [material]})],
                "voices.presets": [
                    fixed({"total": 1, "records": [{"voiceId": VOICE, "provider": "S1"}]})
                ],
                "tts.create": [fixed({"taskId": "t1", "results": [{"uri": "u", "duration": 1}]})],
            }
        )
        with pytest.raises(dubkit.BudgetExceededError, match="120 credits"):
            c.dubbing.create("m1", target="fr-FR")  # 95 s: two started minutes
        c.tts.create(["Hello."], voice=VOICE)
        sent = [target for _, target, _, _ in double.requests]
    assert not any("media-translation" in target for target in sent)
    assert any("/task/tts/create" in target for target in sent) and c.budget.spent == 2


# --------------------------------------------------------------------------- throttling


@pytest.fixture
def limits(sandbox):
    """The sandbox's admin handle, its throttle and faults put back after the test."""
    yield sandbox
    sandbox.set_throttle(**THROTTLE_DEFAULTS)
    sandbox.set_faults()


def test_a_throttled_batch_finishes_and_each_request_is_charged_once(limits, new_key):
    sandbox = limits
    sandbox.set_throttle(rate=1, burst=1)
    patient = dubkit.RetryPolicy(max_retries=12, backoff=0.1)
    with dubkit.Client(new_key, sandbox.url, sandbox=sandbox, retry=patient) as c:
        segments = [f"Line number {i}." for i in range(160)]  # 4 requests, sent at once
        cost, result = spent(
            sandbox,
            new_key,
            lambda: c.translate.batch(
                segments, source="en-US", target="fr-FR", concurrency=4, progress=False
            ),
        )
        assert not result.errors and all(result.texts)
        assert cost == c.translate.quote(segments).credits
    assert sum(sandbox.throttle()["refused"].values()) > 0  # it was throttled


def test_a_429_with_an_http_date_is_waited_out_then_the_call_goes_through(limits, new_key):
    sandbox = limits
    sandbox.set_faults(
        error429=1, retry_after=1, retry_after_as_date=True, paths=["/task/translate/create"]
    )
    once = dubkit.RetryPolicy(max_retries=0)
    with dubkit.Client(new_key, sandbox.url, sandbox=sandbox, retry=once) as c:
        cost, _ = spent(
            sandbox,
            new_key,
            lambda: pytest.raises(
                dubkit.RateLimitError, c.translate.create, ["Hi"], source="en-US", target="fr-FR"
            ),
        )
    err = _.value
    assert err.http_status == 429 and 0 < err.retry_after <= 2 and not err.maybe_committed
    assert cost == 0
    sandbox.set_faults(error429=0.5, seed=7, paths=["/task/translate/create"])
    patient = dubkit.RetryPolicy(max_retries=10, max_retry_after=1)
    with dubkit.Client(new_key, sandbox.url, sandbox=sandbox, retry=patient) as c:
        refused = sum(sandbox.throttle()["refused"].values())
        cost, done = spent(
            sandbox,
            new_key,
            lambda: [c.translate.create(["Hi"], source="en-US", target="fr-FR") for _ in range(4)],
        )
    assert len(done) == 4 and cost == 4  # each call charged once
    assert sum(sandbox.throttle()["refused"].values()) > refused  # and some met a 429
