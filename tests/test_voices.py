"""Voices: the preset catalogue and its filters, cloned voices, and an unknown voice id, the same
error wherever it is passed, before anything is sent."""

from __future__ import annotations

import io

import numpy as np
import pytest
import requests
import soundfile as sf
from _actions import use
from _double import answer_double, fixed
from _html import plays_by_itself
from _storage_fixtures import api, storage_defaults  # noqa: F401  (fixtures)

import dubkit
from dubkit import samples
from dubkit.widgets.voices import VoiceBrowser


@pytest.fixture
def client(each_client):
    """This module's scenarios run through both clients (tests/_clients.py)."""
    return each_client


REST_PATHS = ("/openapi/v1", "assets/voice")


HINT = "client.voices.presets()"


SHAPES = ["sv_s1_nowhere", "cv_" + "0" * 32, "cv_123", "nonsense", "sv bad/../id"]


@pytest.fixture(scope="module")
def dub_account(sandbox, tmp_path_factory):
    """A key of its own and a short registered video, for the media entry points."""
    key = sandbox.create_key("newcomer")
    client = dubkit.Client(key, sandbox.url, sandbox=sandbox)
    clip = samples.narrated_clip(
        tmp_path_factory.mktemp("clip") / "clip.mp4", ["Hello there.", "Goodbye now."]
    )
    yield client, client.materials.upload(clip, progress=False), clip, key
    client.close()


def assert_unknown_voice(error: dubkit.ValidationError, field: str, voice_id: str) -> None:
    assert type(error) is dubkit.ValidationError
    assert error.field == field
    assert repr(voice_id) in error.problem and HINT in error.problem
    assert not any(path in str(error) for path in REST_PATHS), str(error)


RECORD_FIELDS = (
    "voice_id",
    "local_name",
    "display_name",
    "locale",
    "locale_name",
    "provider",
    "gender",
    "style",
    "role_play",
    "description",
    "personalities",
    "personality_list",
    "scenarios",
    "scenario_list",
    "score",
    "cover",
    "audio",
    "create_time",
    "update_time",
)


@pytest.fixture
def make_clone(client, client_for):
    """Clone a preset's preview through the clone endpoint, with a client of ``api_key``
    other than the one a test lists with (so listings, not creation, teach providers)."""
    reference = client.voices.preset("sv_s1_en_us_clear_f").audio

    def make(api_key: str, name: str, provider: str = "V1") -> str:
        return (
            client_for(api_key)
            .clones.create(reference, name=name, provider=provider, locale="en-US", text="sample")
            .voice_id
        )

    return make


def test_an_unknown_id_shaped_like_a_sandbox_preset_is_looked_up_not_guessed(client):
    with pytest.raises(dubkit.ValidationError) as err:
        client.tts.create(["hi"], voice="sv_s1_zz_nobody_f")
    assert err.value.field == "data[0].voiceId"


@pytest.mark.parametrize("voice_id", SHAPES)
def test_an_unknown_voice_is_the_same_error_in_every_entry_point(client, dub_account, voice_id):
    mine, material, _, _ = dub_account
    tasks_before = len(mine.tasks.list())
    calls = [
        ("data[0].voiceId", lambda: client.tts.speak("Hi.", voice_id)),
        ("voices[1]", lambda: client.tts.audition("Hi.", ["sv_s1_en_us_clear_f", voice_id])),
        (
            "voices[1]",
            lambda: mine.dubbing.create(
                material, target="fr-FR", voices=["sv_s4_fr_fr_news_f", voice_id]
            ),
        ),
        (
            "options.voiceSpeakers.selectedVoicesList[0].voiceId",
            lambda: mine.dubbing.create(
                material,
                target="fr-FR",
                options={"voiceSpeakers": {"selectedVoicesList": [{"voiceId": voice_id}]}},
            ),
        ),
    ]
    for field, call in calls:
        with pytest.raises(dubkit.ValidationError) as info:
            call()
        assert_unknown_voice(info.value, field, voice_id)
    with pytest.raises(dubkit.ValidationError) as info:
        client.voices.preset(voice_id)
    assert type(info.value) is dubkit.ValidationError and info.value.field == "voice"
    assert repr(voice_id) in info.value.problem and HINT in info.value.problem
    assert len(mine.tasks.list()) == tasks_before  # nothing was sent for any of them


def test_preset_lookup_names_the_argument_and_points_clone_ids_to_clones(client):
    assert client.voices.preset("sv_s4_en_gb_news_f").provider == "S4"
    with pytest.raises(dubkit.ValidationError) as info:
        client.voices.preset("cv_" + "1" * 32)
    assert "client.voices.clones(" in info.value.problem
    with pytest.raises(dubkit.ValidationError) as info:
        client.voices.preset("")  # not "the first preset of the catalogue"
    assert info.value.field == "voice"


def test_a_dub_with_unknown_voices_costs_no_upload(dub_account, tmp_path):
    mine, _, clip, _ = dub_account
    copy = tmp_path / "again.mp4"
    copy.write_bytes(clip.read_bytes() + b"\0")  # other bytes: an upload would be new
    before = len(mine.materials.list())
    with pytest.raises(dubkit.ValidationError) as info:
        mine.dubbing.create(copy, target="de-DE", voices=["sv_s1_nowhere"])
    assert info.value.field == "voices[0]"
    assert len(mine.materials.list()) == before


def test_known_voices_pass_and_a_wrong_provider_is_named(dub_account, client_for):
    mine, material, _, key = dub_account
    clone = mine.clones.create(
        mine.voices.preset("sv_s1_en_us_clear_f").audio,
        name="Tester",
        provider="V2",
        locale="en-US",
    )
    fresh = client_for(key)  # a client that has seen no voice yet: it must look them up
    task = fresh.dubbing.create(
        material, target="fr-FR", voices=["sv_s4_fr_fr_news_f", clone.voice_id]
    )
    assert task.task_id
    with pytest.raises(dubkit.ValidationError) as info:
        fresh.dubbing.create(
            material, target="fr-FR", voices=[{"voiceId": "sv_s4_fr_fr_news_f", "provider": "S1"}]
        )
    assert info.value.field == "voices[0].provider" and "'S4'" in info.value.problem


def test_every_preset_record_field_is_filled(client):
    voices = client.voices.presets(locale="en-GB")
    assert len(voices) >= 10
    for voice in voices:
        record = voice.model_dump()
        empty = [f for f in RECORD_FIELDS if record.get(f) in (None, "", [])]
        assert not empty, f"{voice.voice_id} has empty {empty}"
        assert voice.provider in {f"S{i}" for i in range(1, 8)}
        assert voice.voice_id.startswith(f"sv_{voice.provider.lower()}_")
        assert voice.is_hd in (0, 1) and voice.is_preferred in (0, 1)
        assert voice.personality_list == voice.personalities.split(", ")


def test_catalogue_spans_all_seven_tiers_and_many_locales(client):
    voices = client.voices.presets()
    assert {v.provider for v in voices} == {f"S{i}" for i in range(1, 8)}
    assert len({v.locale for v in voices}) > 100
    assert voices.total == len(voices) == len(set(voices.ids))


def test_filters_each_narrow_to_matching_voices(client):
    female = client.voices.presets(locale="de-DE", gender="female")
    assert female and {(v.locale, v.gender) for v in female} == {("de-DE", "female")}
    seniors = client.voices.presets(age="senior")
    assert seniors and all(v.age == "senior" for v in seniors)
    hd = client.voices.presets(quality="high")
    assert hd and all(v.is_hd == 1 for v in hd)
    assert client.voices.presets(quality="any").total == client.voices.presets().total
    news = client.voices.presets(category="news")
    assert news and all(v.category == "news" for v in news)
    include = client.voices.presets(emotion_prompt="include")
    exclude = client.voices.presets(emotion_prompt="exclude")
    assert include and exclude and include.total + exclude.total == client.voices.presets().total
    assert all(v.supports_emotion_prompt for v in include)
    one = client.voices.presets(voice="sv_s1_en_us_clear_f")
    assert one.ids == ["sv_s1_en_us_clear_f"]
    whole_language = client.voices.presets(locale="en")
    assert {v.locale.split("-")[0] for v in whole_language} == {"en"}
    assert len({v.locale for v in whole_language}) > 5


def test_search_matches_display_or_local_name(client):
    name = client.voices.presets(locale="ja-JP")[0].display_name
    found = client.voices.presets(search=name.lower())
    assert found and all(name.lower() in (v.display_name + v.local_name).lower() for v in found)
    endonym = client.voices.presets(search="日本語")
    assert endonym and all(v.locale == "ja-JP" for v in endonym)


def test_pages_cover_the_whole_list_once_and_default_to_ten(client):
    raw = client.call("voices.presets", {"locale": "en-US"})
    assert len(raw["records"]) == 10 and raw["total"] > 10
    pages = [client.voices.presets_page(p, 4, locale="en-US") for p in range(1, 6)]
    ids = [i for page in pages for i in page.ids]
    assert len(ids) == len(set(ids)) == raw["total"]
    assert ids == client.voices.presets(locale="en-US", page_size=3).ids


def test_ordering_and_pinned_ids(client):
    default = client.voices.presets(locale="fr-FR")
    keys = [(-v.is_preferred, -v.score) for v in default]
    assert keys == sorted(keys)
    by_score = client.voices.presets(locale="fr-FR", order_by="score", order="asc")
    assert [v.score for v in by_score] == sorted(v.score for v in by_score)
    newest = client.voices.presets(locale="fr-FR", order_by="create_time")
    assert [v.create_time for v in newest] == sorted((v.create_time for v in newest), reverse=True)
    pinned = ["sv_s6_fr_fr_whisper_m", "sv_s1_fr_fr_clear_m"]
    listed = client.voices.presets(locale="fr-FR", top_ids=pinned, order_by="voiceId")
    assert listed.ids[:2] == pinned
    assert listed.ids[2:] == sorted(listed.ids[2:], reverse=True)


def test_unknown_locale_is_refused_with_suggestions(client):
    with pytest.raises(dubkit.BadRequestError) as err:
        client.voices.presets(locale="en_US")
    assert "locale" in str(err.value) and "en-US" in str(err.value)


def test_free_string_filters_reach_the_service(client):
    """age, quality, emotionPrompt, orderBy and order are free strings in the interface: the
    client sends any value, and the service's answer decides (the sandbox filters by what it
    knows, and names a value it cannot apply)."""
    assert len(client.voices.presets(age="teen")) == 0
    with pytest.raises(dubkit.BadRequestError) as err:
        client.voices.clones(order_by="score")
    assert "orderBy" in err.value.message and "create_time" in err.value.message
    with pytest.raises(dubkit.BadRequestError, match="order: "):
        client.voices.presets(order="sideways")


def test_preview_is_speech_made_once_and_served_again(client, sandbox):
    voice = client.voices.presets(voice="sv_s1_es_es_clear_m")[0]
    answer = requests.get(voice.audio, timeout=10)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("audio/")
    samples, rate = sf.read(io.BytesIO(answer.content))
    assert 0.5 < len(samples) / rate < 6 and np.abs(samples).max() > 0.05
    path = sandbox.data_dir / "files" / "voices" / "previews" / "sv_s1_es_es_clear_m.wav"
    made = path.stat().st_mtime_ns
    assert client.voices.presets(voice="sv_s1_es_es_clear_m")[0].audio == voice.audio
    assert path.stat().st_mtime_ns == made
    cover = requests.get(voice.cover, timeout=10)
    assert cover.status_code == 200 and "<svg" in cover.text


def test_preset_lookup_and_missing_preset(client):
    assert client.voices.preset("sv_s4_en_gb_news_f").provider == "S4"
    with pytest.raises(dubkit.ValidationError, match="voice"):
        client.voices.preset("sv_s4_nowhere")


def test_clone_list_filters_order_and_paging(client, new_key, client_for, make_clone):
    mine = client_for(new_key)
    ids = [
        make_clone(new_key, name, provider)
        for name, provider in (("Narrator warm", "V2"), ("Anna", "V3"), ("narrator cold", "V5"))
    ]
    assert mine.voices._provider_of(ids[2]) is None
    assert mine.voices.clones().ids == ids[::-1]  # newest first by default
    assert mine.voices.clones(order_by="name", order="asc").ids == [ids[1], ids[0], ids[2]]
    assert mine.voices.clones(search="NARRATOR").ids == [ids[2], ids[0]]
    assert mine.voices.clones(voice=ids[1]).ids == [ids[1]]
    assert set(mine.voices.clones(voices=ids[:2]).ids) == set(ids[:2])
    assert mine.voices.clones(page_size=1).ids == ids[::-1]
    page = mine.call("voices.clones", {"pageSize": 2, "currentPage": 2})
    assert page["total"] == 3 and [r["voiceId"] for r in page["records"]] == [ids[0]]
    record = mine.voices.clones(voice=ids[1])[0]
    assert (record.provider, record.example_language, record.content) == ("V3", "en-US", "sample")
    assert mine.voices._provider_of(ids[2]) == "V5"  # learnt from the listing
    assert client.voices.clones(voices=ids).ids == []  # another key sees none of them


def test_rename_and_delete_clone(client, new_key, client_for, make_clone):
    mine = client_for(new_key)
    voice_id = make_clone(new_key, "Old name")
    before = mine.voices.clones(voice=voice_id)[0]
    mine.voices.rename(voice_id, "New name")
    after = mine.voices.clones(voice=voice_id)[0]
    assert after.name == "New name" and after.update_time >= before.update_time
    with pytest.raises(dubkit.NotFoundError):
        client.voices.rename(voice_id, "Stolen")  # another key's clone is 404
    with pytest.raises(dubkit.BadRequestError) as err:
        mine.voices.rename(voice_id, "  ")
    assert "voiceName" in str(err.value)
    mine.voices.delete(voice_id)
    assert mine.voices.clones().ids == []
    with pytest.raises(dubkit.NotFoundError):
        mine.voices.delete(voice_id)
    with pytest.raises(dubkit.ValidationError) as err:  # a deleted clone cannot speak:
        mine.tts.create(["Hello"], voice=voice_id)  # the client looks it up first
    assert err.value.field == "data[0].voiceId" and "no voice" in err.value.problem
    with pytest.raises(dubkit.BadRequestError) as err:  # and the service refuses it too
        mine.call("tts.create", {"data": [{"text": "Hello", "voiceId": voice_id}]})
    assert "voiceId not found" in str(err.value)


def test_voice_table_plays_previews_without_autoplay(client):
    voices = client.voices.presets(locale="it-IT")
    page = voices._repr_html_()
    assert page.count("<audio") == len(voices)
    assert not plays_by_itself(page) and "audio/wav" in page
    frame = voices.to_frame()
    assert list(frame["voice_id"]) == voices.ids and frame["audio"].notna().all()


def test_browser_filters_ticks_and_auditions_side_by_side(client):
    """Given either client (an AsyncClient's calls belong to its loop: the browser, whose
    controls run in callbacks, uses its sync twin)."""
    browser = VoiceBrowser(getattr(client, "unwrapped", client), locale="en-US", page_size=5)
    assert browser.total == client.voices.presets(locale="en-US").total
    browser.set_filters(gender="male", quality="high")
    assert browser.voices and all(v.gender == "male" and v.is_hd for v in browser.voices)
    assert browser.page == 1 and len(browser.voices) <= 5
    browser.tick(browser.voice_ids[:2])
    browser.set_filters(quality=None, age="senior")  # ticks survive a new page
    browser.tick(browser.voice_ids[:1])
    assert len(browser.ticked) == 3
    audition = browser.audition("Welcome aboard, everyone.")
    assert audition is not None and len(audition.speech) == 3 and not audition.speech.errors
    assert len({line.voice_id for line in audition.speech}) == 3  # several tiers, one call
    view = browser._repr_mimebundle_()["text/html"]
    assert view.count("<audio") >= 3 + len(browser.voices) and not plays_by_itself(view)
    assert client.transport._secret not in view


def test_browser_reports_an_empty_audition_instead_of_failing(sync_client):
    client = sync_client  # the browser is a widget of the sync client
    browser = VoiceBrowser(client, locale="sv-SE")
    assert browser.audition("Hej!") is None
    assert "tick" in browser.result


def test_browser_controls_do_what_their_labels_say(sync_client):
    client = sync_client  # the browser is a widget of the sync client
    """The controls as the browser sends them (the widget's comm): a filter chosen, a page
    turned, two voices ticked, the line heard, with the fields' values as they were."""
    browser = VoiceBrowser(client, locale="en-US", page_size=3)

    def act(action: str, key: str = "", value: object = None, **fields: object) -> None:
        shown = {"locale": "en-US", "gender": "any", "age": "any", "quality": "any"}
        use(browser, action, key, value, **{**shown, "search": "", **fields})

    act("filter", gender="female")
    assert browser.voices and all(v.gender == "female" for v in browser.voices)
    first = browser.voice_ids
    act("next", gender="female")
    assert browser.page == 2 and browser.voice_ids != first
    act("tick", first[0], True)
    act("tick", browser.voice_ids[0], True)
    assert browser.ticked == [first[0], browser.voice_ids[0]]
    assert f"data-dubkit-key='{browser.voice_ids[0]}' aria-label" in browser.value
    assert browser.value.count(" checked>") == 1  # this page shows one of the two
    act("hear", gender="female", text="Two voices, one line.")
    assert browser.text == "Two voices, one line." and browser.last_audition is not None
    assert len(browser.last_audition.speech) == 2
    assert browser.value.count("<audio") >= 2 + len(browser.voices)


def test_a_listing_names_previews_and_the_first_fetch_makes_them(client, sandbox):
    voice_id = "sv_s1_fr_fr_clear_f"
    files = sandbox.data_dir / "files" / "voices"
    made = [files / "previews" / f"{voice_id}.wav", files / "covers" / f"{voice_id}.svg"]
    for path in made:
        path.unlink(missing_ok=True)
    voice = client.voices.presets(voice=voice_id)[0]
    assert not any(path.exists() for path in made)  # a listing waits for no synthesis
    preview, cover = requests.get(voice.audio, timeout=10), requests.get(voice.cover, timeout=10)
    assert preview.status_code == 200 and cover.status_code == 200 and "<svg" in cover.text
    samples, rate = sf.read(io.BytesIO(preview.content))
    assert 0.5 < len(samples) / rate < 6 and np.abs(samples).max() > 0.05
    assert all(path.is_file() for path in made)
    assert (
        requests.get(voice.audio.replace(voice_id, "sv_s1_nowhere"), timeout=10).status_code == 404
    )


# ------------------------------------------------------------- answers the service rarely gives


def test_preset_is_the_voice_asked_for_or_an_error_naming_both():
    other = fixed({"records": [{"voiceId": "sv_other", "provider": "S1"}], "total": 1})
    with answer_double() as double, dubkit.Client("sk_double_0123456789", double.url) as client:
        double.script({"voices.presets": [other]})
        with pytest.raises(dubkit.UnexpectedAnswerError) as caught:
            client.voices.preset("sv_wanted")
    error = caught.value
    assert error.operation == "voices.presets" and error.req_id
    assert "'sv_wanted'" in str(error) and "'sv_other'" in str(error)


def test_a_list_that_ignores_the_page_number_ends_at_the_repeated_page():
    page = fixed({"records": [{"voiceId": "sv_a", "provider": "S1"}], "total": 1000})
    with answer_double() as double, dubkit.Client("sk_double_0123456789", double.url) as client:
        double.script({"voices.presets": [page]})  # the same page, whatever page is asked
        voices = client.voices.presets(page_size=1)
    assert [v.voice_id for v in voices] == ["sv_a"] and len(double.requests) == 2
