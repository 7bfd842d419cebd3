"""Text to speech end to end: real synthesis over real HTTP, audio decoded and measured; a
request's lines encoded in one run; the take cache."""

from __future__ import annotations

import json
import re
import uuid

import numpy as np
import pytest
from _double import STUB, answer_double, fixed
from _html import plays_by_itself
from _http import webhook_catcher
from _waiting import PATIENCE, wait_for

import dubkit
from dubkit.media import audio
from dubkit.sandbox.engines import voiceprint
from dubkit.views.players import speech_table_html
from dubkit.webhooks import verify


@pytest.fixture
def client(each_client):
    """This module's scenarios run through both clients (tests/_clients.py)."""
    return each_client


VOICE = "sv_s1_en_us_clear_f"  # S1


OTHER_TIER = "sv_s3_en_us_story_m"  # S3


TEXT = "The quick brown fox jumps over the lazy dog."


def decoded_seconds(line) -> float:
    return len(line.audio) / line.sample_rate


def pitch_of(line) -> float:
    return voiceprint.measure(line.audio, line.sample_rate).median_pitch_hz


def credits(sandbox, api_key: str) -> float:
    return sandbox.credits(api_key)


@pytest.fixture
def clone(client, client_for, new_key):
    """Clone a recording for ``new_key`` through the clone endpoint (by default a preset's
    preview); made with a client other than the tests', which learn providers themselves."""
    maker = client_for(new_key)
    preview = client.voices.preset(VOICE).audio

    def make(provider: str = "V1", reference: str | None = None) -> str:
        return maker.clones.create(reference or preview, provider=provider).voice_id

    return make


LINE_VALUES = {
    "voice_id": "sv_s3_en_us_story_m",
    "timbre_ref_audio": "https://example.org/ref.wav",
    "emo_weight": 0.9,
    "emo_ref_audio": "https://example.org/mood.wav",
    "emo_prompt": "angry",
    "duration": 3.0,
    "pitch": 2,  # a field the schema does not know yet: the wire keeps it, so must the key
}


def test_a_request_of_new_m4a_lines_is_encoded_in_one_run(client, ffmpeg_runs):
    tag = uuid.uuid4().hex[:4]
    voice = client.voices.presets(limit=1)[0].voice_id
    lines = [f"Batch line {i}, {tag}." for i in range(6)]
    ffmpeg_runs.clear()
    speech = client.tts.create(lines, voice=voice, output_format="m4a")
    assert not speech.errors
    encodes = [run for run in ffmpeg_runs if "aac" in run]
    assert len(encodes) == 1
    assert all(line.duration and line.duration > 0.5 for line in speech.lines)
    decoded = audio.decode_many([(line.data, "m4a") for line in speech.lines])
    heard = [len(s) / r for s, r in decoded]  # type: ignore[misc]
    # each file is its own line, as long as the answer says (durations are given in ms)
    assert all(abs(h - line.duration) < 0.002 for h, line in zip(heard, speech.lines))


def test_a_speech_table_draws_its_m4a_waveforms_with_one_run(client, ffmpeg_runs):
    voice = client.voices.presets(limit=1)[0].voice_id
    speech = client.tts.create([f"Row {i}." for i in range(5)], voice=voice, output_format="m4a")
    for line in speech.lines:
        assert line.data
    ffmpeg_runs.clear()
    table = speech_table_html(speech.lines)
    assert len(ffmpeg_runs) == 1
    assert table.count("<svg class='dubkit-wave'") == 5


@pytest.mark.parametrize("fmt", ["wav", "mp3", "m4a"])
def test_speak_returns_playable_audio_of_the_reported_length(client, tmp_path, fmt):
    line = client.tts.speak(TEXT, VOICE, output_format=fmt)
    assert line.ok and line.format == fmt and line.uri.endswith(f".{fmt}")
    assert line.audio.dtype == np.float32 and np.abs(line.audio).max() > 0.05
    assert decoded_seconds(line) == pytest.approx(line.duration, rel=0.05)
    saved = line.save(tmp_path)
    assert saved.suffix == f".{fmt}" and saved.read_bytes() == line.data


def test_default_format_is_m4a_and_players_never_autoplay(client):
    speech_ = client.tts.create(["First line.", "Second line."], voice=VOICE)
    assert [ln.format for ln in speech_] == ["m4a", "m4a"]
    view = speech_._repr_html_()
    assert view.count("<audio") == 2 and "audio/mp4" in view
    assert not plays_by_itself(view)
    assert view.count("class='dubkit-wave'") == 2 and "First line." in view


@pytest.mark.parametrize("target", [1.2, 4.0])
def test_duration_is_met_within_five_percent(client, target):
    line = client.tts.speak(TEXT, VOICE, duration=target, output_format="wav")
    assert line.duration == pytest.approx(target, rel=0.05)
    assert decoded_seconds(line) == pytest.approx(target, rel=0.05)


def test_trim_removes_leading_and_trailing_silence(client):
    loose, tight = (
        client.tts.speak("Hello.", VOICE, output_format="wav", trim=t) for t in (False, True)
    )
    assert tight.duration < loose.duration

    def edge_silence(line) -> int:
        loud = np.flatnonzero(np.abs(line.audio) > 0.02)
        return int(loud[0] + len(line.audio) - loud[-1])

    assert edge_silence(tight) < edge_silence(loose)


def test_emotion_prompts_change_pace_and_pitch(client):
    def say(**emotion):
        return client.tts.speak(TEXT, "sv_s7_en_us_emote_f", output_format="wav", **emotion)

    neutral, sad = say(), say(emo_prompt="sad and tired", emo_weight=1)
    excited = say(emo_prompt="excited!", emo_weight=1)
    assert sad.duration > neutral.duration * 1.1 > excited.duration * 1.1
    assert pitch_of(excited) > pitch_of(neutral) > pitch_of(sad)
    assert say(emo_prompt="excited!", emo_weight=0).duration == pytest.approx(
        neutral.duration, rel=0.03
    )
    assert "excited" in excited.extra["emotion"]


def test_emotion_reference_audio_lends_its_pace(client):
    voice = "sv_s1_en_us_clear_m"
    plain = client.tts.speak(TEXT, voice, output_format="wav")
    hurried, dragged = (
        client.tts.speak(TEXT, VOICE, output_format="wav", duration=plain.duration * f)
        for f in (0.5, 1.8)
    )

    def lent(reference):
        return client.tts.speak(
            TEXT, voice, output_format="wav", emo_ref_audio=reference.uri, emo_weight=1
        )

    assert lent(hurried).duration < plain.duration * 0.85
    assert lent(dragged).duration > plain.duration * 1.15


def test_language_target_changes_what_the_voice_speaks(client):
    english = client.tts.speak("Bonjour tout le monde", VOICE, output_format="wav")
    french = client.tts.speak("Bonjour tout le monde", VOICE, output_format="wav", locale="fr-FR")
    assert abs(french.duration - english.duration) > 0.05
    with pytest.raises(dubkit.BadRequestError) as err:
        client.tts.speak("Hi", VOICE, locale="xx-YY")
    assert "language.target" in str(err.value)


def test_clone_voices_speak_with_the_pace_of_their_recording(client_for, new_key, clone, client):
    plain = client.tts.speak(TEXT, VOICE, output_format="wav")
    hurried, dragged = (
        client.tts.speak(TEXT, VOICE, output_format="wav", duration=plain.duration * f).uri
        for f in (0.5, 2.0)
    )
    fast, slow = clone("V3", hurried), clone("V3", dragged)
    speech_ = client_for(new_key).tts.create(
        [{"text": TEXT, "voice_id": slow}, {"text": TEXT, "voice_id": fast}], output_format="wav"
    )
    assert speech_[0].duration > 1.8 * speech_[1].duration


def test_timbre_reference_imitates_the_speakers_pitch(client_for, new_key, client):
    mine = client_for(new_key)
    high = client.voices.preset("sv_s1_en_us_clear_f").audio  # sandbox-served WAVs
    low = client.voices.preset("sv_s1_en_us_clear_m").audio
    speech_ = mine.tts.create(
        [{"text": TEXT, "timbre_ref_audio": high}, {"text": TEXT, "timbre_ref_audio": low}],
        output_format="wav",
    )
    assert not speech_.errors
    assert pitch_of(speech_[0]) > 1.3 * pitch_of(speech_[1])


def test_one_bad_line_fails_alone(client, sandbox):
    lines = ["Fine.", {"text": TEXT, "duration": 0.2}, "Also fine."]
    speech_ = client.tts.create(lines, voice=VOICE, output_format="wav")
    assert [ln.ok for ln in speech_] == [True, False, True]
    assert speech_.errors[1].startswith("duration:") and "0.25x to 4x" in speech_.errors[1]
    with pytest.raises(dubkit.DubkitError, match="not spoken: duration"):
        client.tts.speak(TEXT, VOICE, duration=0.2)  # the one-liner says so


def test_unreachable_reference_fails_only_its_line(client_for, new_key, clone, client):
    mine = client_for(new_key)
    voice = clone("V2")
    speech_ = mine.tts.create(
        [
            {"text": "Good.", "voice_id": voice},
            {
                "text": "Bad.",
                "voice_id": voice,
                "timbre_ref_audio": client.base_url + "/files/missing.wav",
            },
        ],
        output_format="wav",
    )
    assert speech_[0].ok and not speech_[1].ok
    assert "timbreRefAudio" in speech_.errors[1]


def test_credits_run_out_with_402_and_nothing_is_made(client, sandbox):
    sandbox.set_credits(3)
    before = len(client.tasks.list(task_type="tts"))
    with pytest.raises(dubkit.InsufficientCreditsError):
        client.tts.speak("x" * 201, VOICE)  # 4 credits
    assert len(client.tasks.list(task_type="tts")) == before


def test_bad_input_is_refused_before_sending(client, sandbox):
    before = (credits(sandbox, sandbox.api_key), len(client.tasks.list(task_type="tts")))
    cases = [
        (dict(lines=["x"] * 51, voice=VOICE), "data", "client.tts.batch()"),
        (dict(lines=["hi"], voice="alloy"), "data[0].voiceId", "no voice 'alloy'"),
        (
            dict(lines=[{"text": "a", "voice_id": VOICE}, {"text": "b", "voice_id": OTHER_TIER}]),
            "data[1].voiceId",
            "data[0] is S1 and data[1] is S3",
        ),
        (
            dict(lines=[{"text": "a", "voice_id": VOICE, "timbre_ref_audio": "https://x/y.wav"}]),
            "data[0].timbreRefAudio",
            "preset voice (S1)",
        ),
        (dict(lines=["hi"], voice=VOICE, emo_weight=1.5), "data[0].emoWeight", "1"),
        (dict(lines=["hi"], voice=VOICE, output_format="ogg"), "outputFormat", "'m4a'"),
        (dict(lines=["hi"]), "data[0]", "voiceId or timbreRefAudio"),
    ]
    for kwargs, field, words in cases:
        with pytest.raises(dubkit.ValidationError) as err:
            client.tts.create(**kwargs)
        assert err.value.field == field and words in err.value.problem, err.value
    assert "at most 50 lines per request, got 51" in str(
        pytest.raises(dubkit.ValidationError, client.tts.create, ["x"] * 51, voice=VOICE).value
    )
    assert (credits(sandbox, sandbox.api_key), len(client.tasks.list(task_type="tts"))) == before


@pytest.mark.parametrize(
    "lines, message",
    [
        (
            [{"text": "a", "voiceId": VOICE}, {"text": "b", "voiceId": "sv_nope"}],
            "voiceId not found in system or clone voice library: data[1] voiceId=sv_nope. Use "
            "POST /openapi/v1/assets/voice/basic/list for system voices or POST "
            "/openapi/v1/assets/voice/clone/list for clone voices.",
        ),
        (
            [{"text": "a", "voiceId": VOICE}, {"text": "b", "voiceId": OTHER_TIER}],
            "all voiceId in one batch must share the same provider, but found multiple: "
            "S1, S3. Please use voices from the same provider, or split into separate "
            f"requests. (Sandbox detail: data[0] {VOICE} -> S1, data[1] {OTHER_TIER} -> S3.)",
        ),
        (
            [{"text": "a", "voiceId": VOICE, "timbreRefAudio": "https://x/y.wav"}],
            "timbreRefAudio requires a clone provider (V1-V5), but voiceId in this batch resolved "
            "to a system provider (S1). ",
        ),
        ([{"text": "a", "voiceId": VOICE, "emoWeight": 1.5}], "data[0].emoWeight"),
        ([{"text": "a" * 10_001, "voiceId": VOICE}], "data[0].text: at most 10000 characters"),
    ],
)
@pytest.mark.sends_invalid_requests
def test_sandbox_refuses_the_same_with_400(client, lines, message):
    with pytest.raises(dubkit.BadRequestError) as err:  # sent raw, past client checks
        client.request("POST", "/task/tts/create", json={"data": lines})
    assert err.value.http_status == 400 and message in err.value.message


# The TTS batch rules as the vendor's errors page words them, newest version (interface §8.4);
# "..." is where the page leaves out what depends on the request.
ERRORS_PAGE = {
    "unknown voice": "voiceId not found in system or clone voice library: data[0] ... Use POST "
    "/openapi/v1/assets/voice/basic/list for system voices or POST "
    "/openapi/v1/assets/voice/clone/list for clone voices.",
    "mixed providers": "all voiceId in one batch must share the same provider, but found "
    "multiple: S1, S2. Please use voices from the same provider, or split into separate requests.",
    "reference with a preset": "timbreRefAudio requires a clone provider (V1-V5), but voiceId "
    "in this batch resolved to a system provider (S1). ...",
}
ERRORS_PAGE_CASES = {
    "unknown voice": [{"text": "a", "voiceId": "sv_nope"}],
    "mixed providers": [
        {"text": "a", "voiceId": VOICE},
        {"text": "b", "voiceId": "sv_s2_en_nz_chat_m"},
    ],
    "reference with a preset": [
        {"text": "a", "voiceId": VOICE, "timbreRefAudio": "https://x/y.wav"}
    ],
}


@pytest.mark.parametrize("rule", sorted(ERRORS_PAGE))
@pytest.mark.sends_invalid_requests
def test_a_batch_rule_s_message_is_the_errors_page_s_then_the_sandbox_s_detail(client, rule):
    """The page's words, in order, with only what it leaves out ("...") filled in; anything the
    sandbox adds comes after the page's last word, in parentheses."""
    with pytest.raises(dubkit.BadRequestError) as err:
        client.request("POST", "/task/tts/create", json={"data": ERRORS_PAGE_CASES[rule]})
    page, message = ERRORS_PAGE[rule], err.value.message
    goes_on = page.endswith("...")  # the page's message goes on past what it shows
    shown = page.removesuffix("...").rstrip()
    said = re.match(r" \S.*? ".join(re.escape(p.strip()) for p in shown.split("...")), message)
    assert said, (page, message)
    rest = message[said.end() :]
    if goes_on:
        assert rest.startswith(" ") and rest.strip(), message
    else:
        assert rest == "" or re.fullmatch(r" \(Sandbox detail: [^()]*\.\)", rest), rest


def test_sandbox_refuses_mixed_clone_engines(client_for, new_key, clone):
    v1, v2 = clone("V1"), clone("V2")
    with pytest.raises(dubkit.BadRequestError) as err:
        client_for(new_key).request(
            "POST",
            "/task/tts/create",
            json={"data": [{"text": "a", "voiceId": v1}, {"text": "b", "voiceId": v2}]},
        )
    assert "found multiple: V1, V2. Please use voices" in err.value.message
    assert err.value.message.endswith(f"(Sandbox detail: data[0] {v1} -> V1, data[1] {v2} -> V2.)")


def test_a_ten_thousand_character_line_is_spoken(client):
    text = ("This sentence is one of many. " * 400)[:10_000]
    line = client.tts.speak(text, VOICE, output_format="mp3")
    assert line.ok and line.duration > 300


def test_async_create_delivers_a_signed_openapi_tts_webhook(client, sandbox):
    with webhook_catcher() as caught:
        sandbox.set_webhook(f"{caught.url}/hook")
        task = client.tts.create_async(
            ["Later, alligator.", "In a while."],
            voice=VOICE,
            output_format="wav",
            extra_data={"order": 7},
        )
        result = task.wait(PATIENCE).result
        assert isinstance(result, dubkit.Speech) and not result.errors
        assert [ln.text for ln in result] == ["Later, alligator.", "In a while."]
        assert result[0].audio.size > 0
        ours = wait_for(  # events held for this key earlier may arrive too: pick this task's
            lambda: [d for d in caught.deliveries if task.task_id.encode() in d[1]]
        )
        headers, body = ours[0]
        verify(sandbox.webhook_secret, headers["X-Timestamp"], body, headers["X-Signature"])
        envelope = json.loads(body)
        assert envelope["event"] == "openapi-tts" and envelope["data"]["taskId"] == task.task_id
        assert len(envelope["data"]["results"]) == 2
        assert envelope["extraData"] == {"dubkitIdempotencyKey": task.idempotency_key, "order": 7}


def test_batch_splits_providers_chunks_fifty_and_keeps_order(client):
    tiers = [VOICE, "sv_s2_en_us_chat_f", OTHER_TIER]
    lines = [{"text": f"Line number {i}.", "voice_id": tiers[i % 3]} for i in range(160)]
    lines[77] = {"text": TEXT, "voice_id": tiers[77 % 3], "duration": 0.1}
    speech_ = client.tts.batch(lines, output_format="wav", progress=False)
    assert len(speech_) == 160 and [ln.text for ln in speech_] == [ln["text"] for ln in lines]
    assert [ln.voice_id for ln in speech_] == [ln["voice_id"] for ln in lines]
    assert list(speech_.errors) == [77]
    assert len(speech_.task_ids) == 6  # 54/53/53 lines: two requests per provider
    assert speech_[5].duration == pytest.approx(decoded_seconds(speech_[5]), rel=0.05)


def test_batch_learns_clone_engines_it_has_not_seen(client_for, new_key, clone, sandbox):
    v1, v4 = clone("V1"), clone("V4")
    fresh = client_for(new_key)  # knows no providers yet
    assert fresh.voices._provider_of(v1) is None
    speech_ = fresh.tts.batch(
        [
            {"text": "One.", "voice_id": v1},
            {"text": "Two.", "voice_id": v4},
            {"text": "Three.", "voice_id": v1},
        ],
        output_format="wav",
        progress=False,
    )
    assert not speech_.errors and len(speech_.task_ids) == 2
    assert fresh.voices._provider_of(v4) == "V4"


def test_batch_reports_a_failed_request_on_its_lines(client, sandbox):
    sandbox.set_credits(3)  # the first line costs 2 credits, the second 4
    lines = [{"text": "Short.", "voice_id": VOICE}, {"text": "x" * 300, "voice_id": OTHER_TIER}]
    speech_ = client.tts.batch(lines, output_format="wav", progress=False)
    assert speech_[0].ok and not speech_[1].ok
    assert "Insufficient quota" in speech_.errors[1]


def test_speech_joins_lines_and_saves_them_all(client, tmp_path):
    speech_ = client.tts.create(["One.", "Two.", "Three."], voice=VOICE, output_format="mp3")
    assert speech_.audio.shape[0] == sum(len(ln.audio) for ln in speech_)
    assert speech_.duration == pytest.approx(sum(ln.duration for ln in speech_))
    paths = speech_.save(tmp_path)
    assert [p.name for p in paths] == ["000.mp3", "001.mp3", "002.mp3"]
    frame = speech_.to_frame()
    assert list(frame["text"]) == ["One.", "Two.", "Three."] and frame["error"].isna().all()


def test_a_local_reference_is_uploaded_only_after_the_rest_is_valid(client, sync_client, tmp_path):
    from dubkit import samples

    reference = samples.speech_recording(tmp_path / "me.wav", "My own voice, recorded.")
    before = len(sync_client.materials.list())  # the same key's materials
    with pytest.raises(dubkit.ValidationError) as info:
        client.tts.create([{"text": "Hi", "timbre_ref_audio": reference, "emo_weight": 1.5}])
    assert info.value.field == "data[0].emoWeight"
    assert len(sync_client.materials.list()) == before


@pytest.mark.parametrize("field", sorted(LINE_VALUES))
def test_a_line_that_differs_in_any_one_field_is_not_served_the_cached_take(field):
    """The cache key covers the whole line and the whole request (but its lines and
    extraData), so a field added later cannot be served another line's file."""
    from dubkit.sandbox.catalogue import preset
    from dubkit.sandbox.products.tts_takes import cache_key
    from dubkit.schema import TTSRequest

    base = {"text": TEXT, "voice_id": VOICE}
    request = TTSRequest.model_validate({"data": [base], "output_format": "wav"})
    other = TTSRequest.model_validate({"data": [{**base, field: LINE_VALUES[field]}]})
    voice = preset(VOICE).speaking  # the same heard voice: only the line differs

    def key(r: TTSRequest) -> str:
        return cache_key("sk_x", r, r.data[0], voice, "en-us")

    assert key(request) == key(TTSRequest.model_validate(request.to_wire()))
    assert key(request) != key(other.model_copy(update={"output_format": "wav"}))
    for change in ({"trim": True}, {"output_format": "mp3"}, {"language": {"target": "fr-FR"}}):
        assert key(request) != key(TTSRequest.model_validate({**request.to_wire(), **change}))


# ------------------------------------------------------------- answers the service rarely gives

KNOWN_PRESET = {  # a catalogue that knows the voice the tests speak with
    "voices.presets": [fixed({"records": [{"voiceId": "sv_x", "provider": "S1"}], "total": 1})]
}


def test_an_answer_with_fewer_results_than_lines_marks_the_lines_it_left_out_failed():
    with answer_double() as double, dubkit.Client("sk_double_0123456789", double.url) as client:
        double.script({**KNOWN_PRESET, "tts.create": [fixed({"results": [{"uri": ""}]})]})
        speech = client.tts.create(["One", "Two", "Three"], voice="sv_x")
        assert len(speech) == 3 and len(speech.to_frame()) == 3 and speech._repr_html_()
        assert [line.error_message is None for line in speech] == [True, False, False]
        assert "answered 1 results for 3 lines" in speech[2].error_message

        double.script({**KNOWN_PRESET, "tts.create": [fixed({"results": []})]})
        with pytest.raises(dubkit.DubkitError) as caught:
            client.tts.speak("One", "sv_x")
        assert "no answer for this line" in str(caught.value) and caught.value.req_id


def test_batch_lines_each_chunk_up_with_its_own_lines():
    with answer_double() as double, dubkit.Client("sk_double_0123456789", double.url) as client:
        one = fixed({"results": [{"uri": f"{STUB}/files/tone.wav"}]})  # 1 result for any chunk
        double.script({**KNOWN_PRESET, "tts.create": [one]})
        speech = client.tts.batch([f"Line {i}" for i in range(60)], voice="sv_x", progress=False)
    assert len(speech) == 60 and len(speech.to_frame()) == 60
    assert [i for i, line in enumerate(speech) if line.error_message is None] == [0, 50]
    assert "answered 1 results for 50 lines" in speech[1].error_message
    assert "answered 1 results for 10 lines" in speech[51].error_message
