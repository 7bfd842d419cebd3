"""How results show themselves: reprs that count in words, tables whose error columns say None."""

from __future__ import annotations

from dubkit.results import DubbingResult


def no_error_is_none(frame, failed: set[int]) -> None:
    """Every row's ``error`` is None (what a person reads as "no error"), never NaN."""
    assert frame["error"].dtype == object
    for index, value in frame["error"].items():
        if index in failed:
            assert isinstance(value, str) and value
        else:
            assert value is None, (index, value)


def test_reprs_count_in_words(client):
    one = client.translate.create(["Hello"], source="en-US", target="fr-FR")
    assert repr(one).startswith("Translation(1 segment, 0 failed")
    two = client.translate.create(["Hello", "Bye"], source="en-US", target="fr-FR")
    assert repr(two).startswith("Translation(2 segments, ")
    assert repr(client.tts.create(["Hi."], voice="sv_s1_en_us_clear_f")).startswith(
        "Speech(1 line, "
    )
    assert repr(client.voices.presets(voice="sv_s1_en_us_clear_f")) == "VoiceList(1 voice of 1)"
    result = DubbingResult(
        client.transport,
        {
            "translatedScripts": {"result": [{"id": "1", "text": "Salut"}]},
            "voiceMatch": [{"voiceId": "sv_s4_fr_fr_news_f"}],
        },
    )
    assert repr(result).endswith(", 1 line, 1 voice)")


def test_error_columns_say_none_whether_or_not_another_row_failed(client):
    # "2024" has no words to translate: the sandbox fails that segment, as the service would.
    mixed = client.translate.create(["Hello", "2024"], source="en-US", target="fr-FR")
    assert set(mixed.errors) == {1}
    no_error_is_none(mixed.to_frame(), {1})
    no_error_is_none(
        client.translate.create(["Hello"], source="en-US", target="fr-FR").to_frame(), set()
    )
    batch = client.translate.batch(
        ["Hi"] * 51 + ["2024"], source="en-US", target="de-DE", progress=False
    )
    no_error_is_none(batch.to_frame(), {51})
    lines = [{"text": "One."}, {"text": "Two.", "duration": 0.1}]  # too short: that line fails
    speech = client.tts.batch(lines, voice="sv_s1_en_us_clear_f", progress=False)
    assert set(speech.errors) == {1}
    no_error_is_none(speech.to_frame(), {1})
    no_error_is_none(client.tts.create(["One."], voice="sv_s1_en_us_clear_f").to_frame(), set())
