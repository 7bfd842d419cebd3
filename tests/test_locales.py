"""Every locale the service lists works in the sandbox: the ten espeak-ng cannot speak are
spoken by their nearest language that it can, in TTS and in dubs, and the result says so."""

from __future__ import annotations

import pytest
from _waiting import PATIENCE

from dubkit import locales, samples
from dubkit.media import speech

VOICE = "sv_s1_en_us_clear_f"
STAND_INS = [
    "bho-IN",
    "fil-PH",
    "gl-ES",
    "jv-ID",
    "km-KH",
    "lo-LA",
    "mn-MN",
    "ps-AF",
    "so-SO",
    "zu-ZA",
]


def test_every_listed_locale_has_a_voice():
    for code in sorted(locales.SOURCE | locales.TARGET):
        assert speech.voice_for_locale(code), code
    assert [code for code in sorted(locales.TARGET) if speech.stand_in(code)] == STAND_INS


@pytest.mark.parametrize("locale", STAND_INS)
def test_tts_speaks_it_with_its_nearest_language_and_says_so(client, locale):
    spoken = client.tts.create(
        ["Hello, and welcome."], voice=VOICE, locale=locale, output_format="wav"
    )
    assert spoken[0].ok and spoken[0].duration > 0.3
    assert spoken.notices == [f"language.target: {speech.stand_in(locale)}"]


@pytest.mark.parametrize("locale", STAND_INS)
def test_text_translates_into_it(client, locale):
    translation = client.translate.create(
        ["Good morning, everyone."], source="en-US", target=locale
    )
    assert not translation.errors and translation.texts[0]


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    return samples.speech_recording(
        tmp_path_factory.mktemp("locales") / "line.wav", "The harbour wakes before the sun."
    )


@pytest.mark.parametrize("locale", STAND_INS)
def test_a_dub_into_it_is_spoken_and_says_by_what(client, recording, locale):
    material = client.materials.upload(recording, progress=False)
    dub = client.dubbing.create(material, target=locale, source="en-US").wait(PATIENCE).result
    assert dub.audio and dub.audio.url and dub.target_locale == locale
    assert f"language.target: {speech.stand_in(locale)}" in dub.notices


def test_a_preset_of_such_a_locale_says_what_speaks_it_without_a_target(client):
    spoken = client.tts.create(
        ["Sua s'dei.", {"text": "Hello.", "voice_id": "sv_s1_km_kh_clear_m"}],
        voice="sv_s1_km_kh_clear_f",
        output_format="wav",
    )
    assert not spoken.errors
    assert (
        spoken.notices == [f"data[{i}].voiceId: {speech.stand_in('km-KH')}" for i in range(2)]
        and "letter by letter" in spoken.notices[0]
    )
