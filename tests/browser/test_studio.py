"""The audition studio as a person uses it: ``dubkit studio``, then a browser tab.

The studio is started by the real command (``python -m dubkit.cli studio``, Voila serving
notebooks/apps/audition_studio.ipynb against its own sandbox); each test is a fresh page, so a
fresh kernel and studio.
"""

from __future__ import annotations

import json
import re

import pytest

from dubkit import audio, samples
from dubkit.studio import APP_SOURCE
from jupyter_servers import NOTEBOOKS, SCREENSHOTS, start_studio
from page_checks import load_media, media_problems, press_play, screenshot, shown_errors

STUDIO = ".dubkit-studio"
TAKES = f"{STUDIO} .dubkit-audition"


@pytest.fixture(scope="module")
def studio(browser, tmp_path_factory, shots):
    base = tmp_path_factory.mktemp("studio")
    server = start_studio(base / "home", shots / "studio.log")
    yield server
    server.stop()


def open_studio(page, studio) -> None:
    page.goto(f"{studio.url}/")
    page.locator(f"{STUDIO} button", has_text="Hear them").wait_for(timeout=90_000)


def control(page, kind: str, label: str):
    """The input of the ipywidget of ``kind`` (dropdown, textarea, text) labelled ``label``."""
    return page.locator(f"{STUDIO} .widget-{kind}").filter(
        has=page.locator("label", has_text=label)).locator("select, textarea, input").first


def card_voice_ids(page) -> list[str]:
    return page.locator(f"{TAKES} > div code").all_inner_texts()


def test_the_app_notebook_runs_the_studio_as_the_command_would():
    """``dubkit studio`` without the repository writes APP_SOURCE; the repo's app is the same."""
    notebook = json.loads((NOTEBOOKS / "apps" / "audition_studio.ipynb").read_text())
    code = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    assert code == [APP_SOURCE]


@pytest.mark.browser
def test_studio_says_a_line_with_the_chosen_voices_side_by_side(studio, page, client,
                                                                  tmp_path):
    expected = client.voices.presets(locale="en-GB", gender="female", limit=3).ids
    assert expected, "the catalogue has en-GB female voices"
    open_studio(page, studio)
    control(page, "dropdown", "locale").select_option("en-GB")
    control(page, "dropdown", "gender").select_option("female")
    control(page, "textarea", "line").fill("Mind the gap between the train and the platform.")
    page.locator(f"{STUDIO} button", has_text="Hear them").click()
    page.locator(f"{TAKES} audio").nth(len(expected) - 1).wait_for(timeout=60_000)

    assert "Mind the gap" in page.locator(f"{STUDIO}").inner_text()
    assert card_voice_ids(page) == expected        # the presets of that locale and gender
    players = load_media(page, f"{TAKES} audio")
    assert len(players) == len(expected) and not media_problems(players), players
    played = press_play(page.locator(f"{TAKES} audio").first)
    assert played["error"] is None and played["currentTime"] > 0.2, played

    with page.expect_download() as pending:
        page.locator(f"{STUDIO} a.dubkit-download").first.click()
    download = pending.value
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    name = client.voices.preset(expected[0]).display_name
    assert saved.stem == name and saved.suffix in {".m4a", ".wav", ".mp3"}, saved.name
    samples_, rate = audio.decode(saved.read_bytes(), saved.suffix.lstrip("."))
    assert len(samples_) / rate > 0.5, "the download holds the spoken line"
    assert not shown_errors(page, "body")


@pytest.mark.browser
def test_studio_clones_an_uploaded_recording_and_hears_it_beside_the_presets(studio, page,
                                                                              shots, tmp_path):
    transcript = "The harbour lights come on one by one as the fog rolls in from the sea."
    recording = samples.speech_recording(tmp_path / "narrator.wav", transcript, variant="m3",
                                         rate_wpm=125, pitch=25)
    open_studio(page, studio)
    with page.expect_file_chooser() as chooser:
        page.locator(f"{STUDIO} .widget-upload").click()
    chooser.value.set_files(str(recording))
    page.locator(f"{STUDIO} .widget-upload", has_text="(1)").wait_for()   # the file is in
    control(page, "text", "name").fill("Harbour narrator")
    control(page, "textarea", "says").fill(transcript)
    page.locator(f"{STUDIO} button", has_text=re.compile(r"^\s*Clone\s*$")).click()

    # the clone's A/B players in the panel, and its take beside the presets
    page.locator(f"{STUDIO} .dubkit-ab audio").nth(1).wait_for(timeout=90_000)
    page.wait_for_function("(sel) => [...document.querySelectorAll(sel)].some("
                           "c => c.innerText.startsWith('cv_'))",
                           arg=f"{TAKES} > div code", timeout=60_000)
    ids = card_voice_ids(page)
    clones = [v for v in ids if v.startswith("cv_")]
    assert len(clones) == 1 and len(ids) == 4, ids      # 3 presets and the clone
    players = load_media(page, f"{STUDIO} audio")
    assert len(players) == 6 and not media_problems(players), players   # 4 takes, A and B
    downloads = page.locator(f"{STUDIO} a.dubkit-download").all_inner_texts()
    assert "Harbour narrator (clone)" in downloads, downloads
    assert not shown_errors(page, "body")
    page.set_viewport_size({"width": 1400, "height": 1250})    # Voila scrolls inside a panel
    screenshot(page, shots / "audition-studio.png", SCREENSHOTS / "audition-studio.png")


@pytest.mark.browser
def test_studio_with_a_key_talks_to_the_service_of_that_key(sandbox, new_key, client_for,
                                                            page, tmp_path, shots):
    """DUBKIT_API_KEY and DUBKIT_BASE_URL set: the studio uses that service (here the test
    session's sandbox, reached over HTTP like any service), and the work is that key's."""
    server = start_studio(tmp_path / "home", shots / "studio-with-key.log",
                          service=(sandbox.url, new_key))
    try:
        open_studio(page, server)
        assert f"the service at {sandbox.url}" in page.locator(STUDIO).inner_text()
        page.locator(f"{STUDIO} button", has_text="Hear them").click()
        page.locator(f"{TAKES} audio").first.wait_for(timeout=60_000)
        assert not media_problems(load_media(page, f"{TAKES} audio"))
        assert client_for(new_key).tasks.list(), "the studio's speech is a task of this key"
        assert new_key not in page.content(), "the key is never shown"
    finally:
        server.stop()
