"""Public names changed in this version keep working, each with a DeprecationWarning that names
its successor (one place lists them all, for their removal in the next version)."""

from __future__ import annotations

import warnings

import pytest
from _http import local_http

import dubkit
from dubkit import studio
from dubkit.webhooks import parse_event


def warns_of(new: str):
    return pytest.warns(DeprecationWarning, match=rf"is now {new}|is internal to dubkit")


def test_client_media_is_client_dubbing(client):
    with warns_of("client.dubbing"):
        media = client.media
    assert media is client.dubbing
    with warns_of("DubbingResource.create"):
        assert media.translate == client.dubbing.create


def test_old_keywords_are_passed_on_under_their_new_names(client, sandbox):
    with warns_of("locale="):
        speech = client.tts.create(["Bonjour"], voice="sv_s1_en_us_clear_f", language="fr-FR")
    assert speech[0].ok
    with warns_of("voices="):
        audition = client.tts.audition("Hi.", voice_ids=["sv_s1_en_us_clear_f"])
    assert audition.speech[0].ok
    with warns_of("voice="):
        assert client.voices.preset(voice_id="sv_s1_en_us_clear_f").provider == "S1"
    with warns_of("voice="):
        assert client.voices.presets(voice_id="sv_s1_en_us_clear_f").ids == ["sv_s1_en_us_clear_f"]
    with pytest.raises(TypeError, match="both"):
        client.voices.presets(voice_id="a", voice="b")


def test_tasks_detail_is_tasks_get_which_fetches(client):
    task = client.translate.create_async(["Hi"], source="en-US", target="fr-FR")
    with warns_of("TasksResource.get"):
        found = client.tasks.detail(task.task_id)
    assert found.task_id == task.task_id and found.status is not None
    handle = client.tasks.get(task.task_id, fetch=False)
    assert handle.status is None and handle.refresh().status is not None


def test_internal_helpers_warn_that_they_are_internal(client):
    with warns_of("-"):
        assert client.voices.require(["sv_s1_en_us_clear_f"], ["v"]) == ["S1"]
    with warns_of("-"):
        assert client.voices.provider_of("sv_s1_en_us_clear_f") == "S1"
    with warns_of("-"):
        client.voices.remember("sv_x", "S1")
    with warns_of("-"):
        assert client.materials.audio_url("https://example.org/a.wav", "f").endswith("a.wav")


def test_sandbox_admin_keywords_were_camel_case(sandbox):
    with warns_of("latency_ms="):
        sandbox.set_faults(latencyMs=1, paths=["/nowhere"])
    assert sandbox.info()["faults"] == {"latencyMs": 1.0, "paths": ["/nowhere"]}
    sandbox.set_faults()
    assert sandbox.info()["faults"] == {}


def test_a_bad_admin_value_is_refused_before_it_is_sent(sandbox):
    with pytest.raises(dubkit.ValidationError) as info:
        sandbox.set_faults(drop_after_commit=2)
    assert info.value.field == "dropAfterCommit"


def test_module_level_renames():
    with warns_of("dubkit.webhooks.parse_event"):
        assert dubkit.webhooks.parse is parse_event
    with warns_of("dubkit.studio.speak_readings"):
        assert studio.speak_deliveries is studio.speak_readings


def test_renamed_attributes_read_their_new_names():
    from dubkit.results import Clone
    from dubkit.schema import CloneContext, CloneResult

    clone = Clone(CloneResult(voice_id="cv_1"), CloneContext(locale="en-GB"))
    with warns_of("Clone.locale"):
        assert clone.language == "en-GB"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert clone.locale == "en-GB"  # the new name is quiet


def test_the_shortlist_and_the_studio_take_their_new_names():
    from dubkit.studio import Shortlist

    entry = {"voice_id": "sv_a", "provider": "S1", "name": "A", "kind": "preset"}
    entry |= {"voice_locale": "en-US", "gender": "female", "locale": "en-US"}
    shortlist = Shortlist.from_records([entry])
    with warns_of("Shortlist.to_voices"):
        assert (
            shortlist.to_selected_voices()
            == shortlist.to_voices()
            == [{"provider": "S1", "voiceId": "sv_a"}]
        )


def test_nothing_here_needed_a_server_it_did_not_start():
    assert local_http  # the helpers this module shares with the transport tests import cleanly
