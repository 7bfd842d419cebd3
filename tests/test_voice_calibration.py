"""Clones and cloned speakers take espeak's calibration from a shipped table: the first clone
or dub of a process no longer measures espeak for a second. The table must hold every voice a
clone can speak with and say what measuring says. After an espeak update,
``DUBKIT_UPDATE_CALIBRATION=1`` makes the first test write it again (about 2.5 minutes)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dubkit.media import speech
from dubkit.sandbox import catalogue
from dubkit.sandbox.engines import voiceprint


def test_the_table_holds_every_voice_and_clone_variant_of_the_interfaces_locales():
    if os.environ.get("DUBKIT_UPDATE_CALIBRATION") == "1":
        voiceprint.write_calibration_table(catalogue.clone_calibrations())
    shipped = voiceprint._shipped()
    assert shipped, "the shipped table is missing or was written for another espeak"
    pairs = catalogue.clone_calibrations()
    assert {f"{voice}+{variant}" for voice, variant in pairs} <= set(shipped)
    assert ("en-us", "f2") in pairs and ("fr-fr", "m3") in pairs and ("cmn", "f2") in pairs


TARGETS = [
    voiceprint.Voiceprint(float(median), float(spread), rate, 0.6, "female")
    for median in (90, 130, 180, 240)
    for spread in (10, 40, 80)
    for rate in (2.0, 3.5, 5.0)
]


@pytest.mark.parametrize("voice, variant", [("en-us", "f2"), ("fr-fr", "m3"), ("cmn", "f2")])
def test_the_table_gives_the_prosody_measuring_gives(monkeypatch, voice, variant):
    """espeak's variants breathe at random, so two measurements differ a little: prosody
    derived from them differs by up to 2 pitch, 4 range and 2 wpm steps (seen over repeated
    runs). The table must agree with a fresh measurement within twice that."""
    tables = {
        "shipped": {
            k: np.asarray(v) for k, v in voiceprint._shipped()[f"{voice}+{variant}"].items()
        },
        "measured": voiceprint._measure_calibration(voice, variant),
    }
    derived = {}
    for name, table in tables.items():
        monkeypatch.setattr(voiceprint, "_calibrations", {(voice, variant): table})
        derived[name] = [voiceprint.derive_prosody(t, voice, variant) for t in TARGETS]
    for shipped, measured in zip(derived["shipped"], derived["measured"]):
        assert abs(shipped.pitch - measured.pitch) <= 4, (shipped, measured)
        assert abs(shipped.pitch_range - measured.pitch_range) <= 8, (shipped, measured)
        assert abs(shipped.rate_wpm - measured.rate_wpm) <= 5, (shipped, measured)


def test_a_voice_in_the_table_is_not_measured_again(monkeypatch):
    spoken: list[str] = []
    real = speech.synthesize

    def counting(text, *args, **kwargs):
        spoken.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(speech, "synthesize", counting)
    monkeypatch.setattr(voiceprint, "_calibrations", {})
    target = voiceprint.Voiceprint(180.0, 40.0, 3.0, 0.6, "female")
    voiceprint.derive_prosody(target, "de", "f2")
    assert spoken == []
    voiceprint.derive_prosody(target, "de", "f3")  # a variant outside the table is measured
    assert spoken and set(spoken) == {voiceprint._CALIBRATION_TEXT}
