"""Public names changed in this version keep working, each with a DeprecationWarning that names
its successor (one place lists them all, for their removal in the next version)."""

from __future__ import annotations

import re
import warnings

import pytest

import dubkit
from dubkit import studio
from dubkit.webhooks import parse_event


def warns_of(new: str):
    return pytest.warns(
        DeprecationWarning, match=rf"is now .*{re.escape(new)}|is internal to dubkit"
    )


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


def test_every_renamed_attribute_reads_its_new_name():
    from dubkit.results import DubbingResult, Redub
    from dubkit.results.dubbing import Subtitles
    from dubkit.studio import AuditionStudio, Take
    from dubkit.widgets.clone import ClonePanel

    renamed = {
        Subtitles: {"language": "locale"},
        DubbingResult: {"source_language": "source_locale", "target_language": "target_locale"},
        Redub: {"source_language": "source_locale", "target_language": "target_locale"},
        AuditionStudio: {
            "deliveries": "readings",
            "delivery_takes": "reading_takes",
            "clone_panel": "clone_form",
        },
        Take: {"delivery": "reading"},
        ClonePanel: {"language": "locale"},
    }
    for cls, names in renamed.items():
        for old, new in names.items():
            alias = vars(cls)[old]

            class Holder:  # an instance with just the new name, to read the old one through
                pass

            holder = Holder()
            setattr(holder, new, f"{cls.__name__}.{new}")
            with warns_of(f"{cls.__name__}.{new}"):
                assert alias.__get__(holder, Holder) == f"{cls.__name__}.{new}"


def test_the_clone_panels_fields_still_take_a_value(client):
    """ipywidgets' ``panel.name.value = ...`` (the panel was ipywidgets) fills the form."""
    from dubkit.widgets.clone import ClonePanel

    panel = ClonePanel(client)
    with warns_of("ClonePanel.set(name=...)"):
        panel.name.value = "From the panel"
    assert panel.form.name == "From the panel" and "From the panel" in panel.value
    with warns_of("ClonePanel.set(text=...)"):
        assert panel.text.value == panel.form.text


def test_every_renamed_keyword_still_works(client, sandbox, tmp_path):
    from dubkit import samples

    recording = samples.speech_recording(tmp_path / "me.wav", "Hello, this is my voice.")
    with warns_of("locale="):
        clone = client.clones.create(recording, name="Old keyword", language="en-GB")
    assert clone.locale == "en-GB"
    with warns_of("locale="):
        task = client.clones.create_async(recording, name="Old keyword", language="en-GB")
    assert task.wait().result.locale == "en-GB"
    with warns_of("body_limit="):
        sandbox.set_limits(bodyLimit=2**20)
    with warns_of("base_delay="):
        sandbox.set_delivery(baseDelay=1.0)
    with warns_of("voices="):
        assert client.voices.clones(voice_ids=[clone.voice_id]).ids == [clone.voice_id]


def test_an_edit_takes_its_old_keyword(client):
    from dubkit.results import DubbingResult

    dub = DubbingResult(
        client.transport,
        {"translatedScripts": {"result": [{"id": "1", "start": 0, "end": 1, "text": "Salut"}]}},
    )
    with warns_of("voice="):
        line = dub.edit("1", voice_id="sv_s1_fr_fr_clear_f")
    assert line.voice_id == "sv_s1_fr_fr_clear_f"


def test_the_old_task_handle_call_still_makes_a_handle(client):
    with warns_of("fetch=False"):
        handle = client.tasks.get("task_never_asked", "tts")
    assert handle.task_type == "tts" and handle.status is None


def test_old_module_names_and_event_class_facts():
    from dubkit import resources, schema, webhooks

    with warns_of("dubkit.resources.DubbingResource"):
        assert resources.MediaResource is resources.DubbingResource
    with warns_of("dubkit.schema.validated"):
        assert schema.parse is schema.validated
    assert webhooks.TTSEvent.EVENT == "openapi-tts" and webhooks.TTSEvent.TASK_TYPE == "tts"
    assert webhooks.MediaTranslationEvent.TASK_TYPE is None  # its data says vt or at
    assert dubkit.results.RESULT_TYPES["vt"] is dubkit.results.RESULT_TYPES["at"]
