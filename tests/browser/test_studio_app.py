"""The audition studio as a person uses it: ``dubkit studio``, then a browser tab.

The studio is started by the real command (``python -m dubkit.cli studio``, Voila serving
notebooks/apps/audition_studio.ipynb against its own sandbox); each test is a fresh page, so a
fresh kernel and studio. The browser is a remote one: every request to a loopback port other
than the studio's (its sandbox's above all) is refused, and every take must still play.
"""

from __future__ import annotations

import base64
import csv
import json
import re

import pytest
from accessibility import PLAYER_NAMES, assert_no_violations, assert_players_named, tab_to
from jupyter_servers import NOTEBOOKS, SCREENSHOTS, start_studio
from page_checks import (
    block_other_loopback_ports,
    load_media,
    media_problems,
    press_play,
    screenshot,
    shown_errors,
)

from dubkit import samples
from dubkit.media import audio, loudness
from dubkit.studio import APP_INTRO, APP_SOURCE, Shortlist

STUDIO = ".dubkit-studio"
TAKES = f"{STUDIO} .dubkit-takes"
CARDS = f"{TAKES} .dubkit-take"
READINGS = f"{STUDIO} .dubkit-readings .dubkit-take"
SHORTLIST = f"{STUDIO} .dubkit-shortlist-panel"
LEVEL = re.compile(r"^(-\d+\.\d) LUFS → -23$")
LINE = "Mind the gap between the train and the platform."


@pytest.fixture(scope="module")
def studio(browser, tmp_path_factory, shots):
    base = tmp_path_factory.mktemp("studio")
    server = start_studio(base / "home", shots / "studio.log")
    yield server
    server.stop()


def open_studio(page, studio) -> list[str]:
    """Open the app as a remote browser would; the loopback requests it refused."""
    refused = block_other_loopback_ports(page, studio.port)
    page.goto(f"{studio.url}/")
    page.locator(f"{STUDIO} button", has_text="Hear them").wait_for()
    return refused


def control(page, label: str):
    """The control named ``label`` (its ``<label>``), as a screen reader names it."""
    return page.locator(STUDIO).get_by_label(label, exact=True).first


def hear(
    page, count: int, *, locale: str | None = None, gender: str | None = None, line: str = LINE
) -> None:
    if locale:
        control(page, "locale").select_option(locale)
    if gender:
        control(page, "gender").select_option(gender)
    control(page, "line").fill(line)
    page.locator(f"{STUDIO} button", has_text="Hear them").click()
    page.locator(f"{CARDS} audio").nth(count - 1).wait_for()


def texts(page, selector: str) -> list[str]:
    return [t.strip() for t in page.locator(selector).all_inner_texts()]


def played_sources(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(f"{selector} audio", "els => els.map(e => e.src)")


def level_of_wav_uri(uri: str) -> float:
    """ffmpeg's loudness of what a player plays (a ``data:audio/wav;base64,`` URI)."""
    assert uri.startswith("data:audio/wav;base64,"), uri[:60]
    decoded, rate = audio.decode(base64.b64decode(uri.split(",", 1)[1]), "wav")
    return loudness.measure(decoded, rate)


def download(page, locator, folder):
    with page.expect_download() as pending:
        locator.click()
    saved = folder / pending.value.suggested_filename
    pending.value.save_as(saved)
    return saved


def test_the_app_notebook_runs_the_studio_as_the_command_would():
    """``dubkit studio`` without the repository writes these cells; the repo's app is the same."""
    notebook = json.loads((NOTEBOOKS / "apps" / "audition_studio.ipynb").read_text())
    cells = {
        kind: ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == kind]
        for kind in ("code", "markdown")
    }
    assert cells == {"code": [APP_SOURCE], "markdown": [APP_INTRO]}


@pytest.mark.browser
def test_the_app_says_nothing_that_only_fits_a_notebook_or_one_port(studio, page):
    refused = open_studio(page, studio)
    shown = page.locator("body").inner_text()
    assert "Audition studio" in shown and "Connected to the local sandbox" in shown
    for wrong in (":8866", "cell below", "run the cell", "studio.shortlist"):
        assert wrong not in shown, wrong  # no fixed port, no notebook-only instructions
    assert "Shortlist.load('shortlist.json')" in shown  # how an export reaches code
    assert not shown_errors(page, "body") and not refused, refused


@pytest.mark.browser
def test_takes_are_labelled_loudness_matched_and_all_play(studio, page, client, tmp_path, shots):
    voices = client.voices.presets(locale="en-GB", gender="female", limit=3)
    assert len(voices) == 3, "the catalogue has three en-GB female voices"
    refused = open_studio(page, studio)
    hear(page, 3, locale="en-GB", gender="female")

    assert texts(page, f"{CARDS} .dubkit-take-name") == [v.display_name for v in voices]
    assert texts(page, f"{CARDS} .dubkit-take-facts") == [
        f"en-GB · female · {v.provider}{' HD' if v.is_hd else ''}" for v in voices
    ]
    first_id = page.locator(f"{CARDS} .dubkit-voice-id").first
    assert not first_id.locator("code").is_visible()  # the id is one click away
    first_id.locator("summary").click()
    assert first_id.locator("code").inner_text() == voices[0].voice_id

    # Each take shows the level it came at, which is the take's own level ...
    levels = texts(page, f"{CARDS} .dubkit-loudness")
    assert len(levels) == 3 and all(LEVEL.match(t) for t in levels), levels
    spoken = client.tts.audition(LINE, voices.ids, locale="en-GB").speech
    for shown, line in zip(levels, spoken):
        own = loudness.measure(line.audio, line.sample_rate)
        assert float(LEVEL.match(shown).group(1)) == pytest.approx(own, abs=0.5), (shown, own)
    # ... and plays at -23 LUFS, embedded, so a remote browser plays it too
    for uri in played_sources(page, CARDS):
        assert level_of_wav_uri(uri) == pytest.approx(-23, abs=0.3)
    players = load_media(page, f"{CARDS} audio")
    assert len(players) == 3 and not media_problems(players), players
    for i in range(3):
        state = press_play(page.locator(f"{CARDS} audio").nth(i))
        assert state["error"] is None and state["currentTime"] > 0.2, state

    button = page.locator(f"{CARDS} a.dubkit-download").first
    look = button.evaluate(
        "el => { const s = getComputedStyle(el); return {display: s.display,"
        " border: parseFloat(s.borderTopWidth), pad: parseFloat("
        "s.paddingLeft), radius: parseFloat(s.borderTopLeftRadius)}; }"
    )
    assert (
        look["display"] in ("inline-block", "block")  # a flex row's item is a block
        and look["border"] > 0
        and look["pad"] > 0
        and look["radius"] > 0
    ), look  # drawn as a button
    saved = download(page, button, tmp_path)
    assert saved.stem == voices[0].display_name and saved.suffix in {".m4a", ".wav", ".mp3"}
    decoded, rate = audio.decode(saved.read_bytes(), saved.suffix.lstrip("."))
    assert len(decoded) / rate > 0.5, "the download holds the spoken line"
    assert not shown_errors(page, "body") and not refused, refused
    assert_no_violations(page, "the studio's takes")
    assert assert_players_named(page, "the studio's takes") == 3
    page.locator(TAKES).scroll_into_view_if_needed()
    screenshot(page, shots / "studio-takes.png")


@pytest.mark.browser
def test_shortlist_stars_notes_and_exports(studio, page, tmp_path, shots):
    open_studio(page, studio)
    hear(page, 3)
    names = texts(page, f"{CARDS} .dubkit-take-name")
    ids = page.eval_on_selector_all(
        f"{CARDS} .dubkit-voice-id code", "els => els.map(e => e.textContent)"
    )
    cards = page.locator(CARDS)
    cards.nth(0).locator(".dubkit-star").click()  # star, then a note
    cards.nth(0).get_by_label("note").fill("bright, a touch fast")
    cards.nth(0).get_by_label("note").press("Enter")
    cards.nth(2).get_by_label("note").fill("warm; first choice")  # a note, then star
    cards.nth(2).get_by_label("note").press("Enter")
    cards.nth(2).locator(".dubkit-star").click()
    rows = page.locator(f"{SHORTLIST} table.dubkit-shortlist tbody tr")
    rows.nth(1).wait_for()
    assert rows.count() == 2
    assert "★ Shortlisted" in cards.nth(0).locator(".dubkit-star").inner_text()
    table = texts(page, f"{SHORTLIST} table.dubkit-shortlist tbody tr")
    assert names[0] in table[0] and "bright, a touch fast" in table[0], table
    assert names[2] in table[1] and "warm; first choice" in table[1], table
    page.locator(SHORTLIST).scroll_into_view_if_needed()
    screenshot(page, shots / "studio-shortlist.png")

    exported = download(
        page, page.locator(f"{SHORTLIST} a.dubkit-download", has_text="CSV"), tmp_path
    )
    assert exported.name == "shortlist.csv"
    with exported.open(newline="", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    assert [(r["voice_id"], r["name"], r["note"]) for r in records] == [
        (ids[0], names[0], "bright, a touch fast"),
        (ids[2], names[2], "warm; first choice"),
    ]
    assert all(
        r["provider"].startswith("S")
        and r["locale"] == "en-US"
        and r["emotion"] == "neutral"
        and float(r["speed"]) == 1.0
        for r in records
    )
    as_json = download(
        page, page.locator(f"{SHORTLIST} a.dubkit-download", has_text="JSON"), tmp_path
    )
    handed = Shortlist.load(as_json).to_voices()
    assert handed == [{"voiceId": r["voice_id"], "provider": r["provider"]} for r in records]

    cards.nth(0).locator(".dubkit-star").click()  # unstar
    page.wait_for_function(
        "sel => document.querySelectorAll(sel).length === 1",
        arg=f"{SHORTLIST} table.dubkit-shortlist tbody tr",
    )
    assert names[0] not in page.locator(f"{SHORTLIST} table").inner_text()
    assert not shown_errors(page, "body")


@pytest.mark.browser
def test_one_voice_across_emotions_and_speeds(studio, page, tmp_path, shots):
    open_studio(page, studio)
    hear(page, 3)
    name = texts(page, f"{CARDS} .dubkit-take-name")[1]
    voice = control(page, "voice")
    options = voice.evaluate("select => [...select.options].map(o => o.text)")
    voice.select_option(index=next(i for i, o in enumerate(options) if o.startswith(f"{name} (")))
    for untick in ("happy", "calm"):
        page.locator(f"{STUDIO} .dubkit-emotion", has_text=untick).click()
    page.locator(f"{STUDIO} .dubkit-speed", has_text="1.25x").click()
    page.locator(f"{STUDIO} button", has_text="Hear readings").click()
    page.locator(f"{READINGS} audio").nth(3).wait_for()

    assert texts(page, f"{READINGS} .dubkit-take-name") == [
        "neutral · 1x",
        "neutral · 1.25x",
        "sad · 1x",
        "sad · 1.25x",
    ]
    assert all(
        f.startswith(f"{name} · en-US · ") for f in texts(page, f"{READINGS} .dubkit-take-facts")
    )
    players = load_media(page, f"{READINGS} audio")
    assert not media_problems(players), players
    seconds = [p["duration"] for p in players]  # neutral, neutral 1.25x, sad, sad 1.25x
    assert seconds[1] == pytest.approx(seconds[0] / 1.25, rel=0.05), seconds
    assert seconds[3] == pytest.approx(seconds[2] / 1.25, rel=0.05), seconds
    assert seconds[2] > seconds[0] * 1.05, "sad reads slower than neutral"
    assert all(LEVEL.match(t) for t in texts(page, f"{READINGS} .dubkit-loudness"))

    page.locator(READINGS).nth(3).locator(".dubkit-star").click()
    page.locator(f"{SHORTLIST} table.dubkit-shortlist tbody tr").first.wait_for()
    exported = download(
        page, page.locator(f"{SHORTLIST} a.dubkit-download", has_text="CSV"), tmp_path
    )
    (record,) = list(csv.DictReader(exported.open(newline="", encoding="utf-8")))
    assert (record["name"], record["emotion"], float(record["speed"])) == (name, "sad", 1.25)
    assert_no_violations(page, "the studio's readings")
    page.locator(f"{STUDIO} .dubkit-readings").scroll_into_view_if_needed()
    screenshot(page, shots / "studio-readings.png")
    assert not shown_errors(page, "body")


@pytest.mark.browser
def test_blind_ab_hides_the_voices_until_a_pick_then_reveals_and_records_it(
    studio, page, client, shots
):
    voices = client.voices.presets(locale="en-US", limit=3)
    refused = open_studio(page, studio)
    control(page, "blind A/B (voices hidden until you pick)").check()
    page.wait_for_function(  # the studio has it (the browser told the kernel)
        "sel => document.querySelector(sel).checked", arg=f"{STUDIO} .dubkit-blind input"
    )
    hear(page, 3)

    assert texts(page, f"{CARDS} .dubkit-take-name") == ["Take A", "Take B", "Take C"]
    # the whole markup, less the embedded audio (whose base64 can spell anything)
    hidden = re.sub(r"data:audio/[^\"']+", "", page.locator(TAKES).inner_html())
    for voice in voices:  # neither name, id nor tier gives a voice away
        assert voice.display_name not in hidden and voice.voice_id not in hidden
    assert page.locator(f"{CARDS} .dubkit-star, {CARDS} a.dubkit-download").count() == 0
    assert (
        texts(page, f"{CARDS} .dubkit-loudness")
        == [  # a voice's own level gives it away
            "plays at -23 LUFS; own level after pick"
        ]
        * 3
    )
    players = load_media(page, f"{CARDS} audio")
    assert len(players) == 3 and not media_problems(players), players
    assert press_play(page.locator(f"{CARDS} audio").nth(1))["currentTime"] > 0.2
    assert_no_violations(page, "a blind round")
    assert sorted(page.evaluate(PLAYER_NAMES)[0]) == ["Take A", "Take B", "Take C"]
    page.locator(TAKES).scroll_into_view_if_needed()
    screenshot(page, shots / "studio-blind-before-pick.png")

    page.locator(f"{STUDIO} button.dubkit-pick-button", has_text="Pick B").click()
    page.locator(f"{CARDS} .dubkit-take-facts").nth(2).wait_for()
    revealed = texts(page, f"{CARDS} .dubkit-take-name")
    assert [r[:3] for r in revealed] == ["A: ", "B: ", "C: "], revealed
    assert sorted(r[3:] for r in revealed) == sorted(v.display_name for v in voices)
    picked = revealed[1][3:]
    record = page.locator(f"{STUDIO} .dubkit-picks li").inner_text()
    picked_id = next(v.voice_id for v in voices if v.display_name == picked)
    assert record.startswith(f"Round 1: you picked B, {picked} ({picked_id})"), record
    assert page.locator(f"{STUDIO} button.dubkit-pick-button").count() == 0
    assert texts(page, f"{CARDS} .dubkit-your-pick") == ["✓ your pick"]
    assert page.locator(CARDS).nth(1).locator(".dubkit-your-pick").count() == 1
    assert all(LEVEL.match(t) for t in texts(page, f"{CARDS} .dubkit-loudness"))
    assert page.locator(f"{CARDS} .dubkit-star").count() == 3  # now it can be starred
    assert not shown_errors(page, "body") and not refused, refused
    assert_no_violations(page, "a blind round, picked")
    screenshot(page, shots / "studio-blind-after-pick.png")


@pytest.mark.browser
def test_studio_clones_an_uploaded_recording_and_hears_it_beside_the_presets(
    studio, page, shots, tmp_path
):
    transcript = "The harbour lights come on one by one as the fog rolls in from the sea."
    recording = samples.speech_recording(
        tmp_path / "narrator.wav", transcript, variant="m3", rate_wpm=125, pitch=25
    )
    refused = open_studio(page, studio)
    with page.expect_file_chooser() as chooser:
        control(page, "recording").click()
    chooser.value.set_files(str(recording))
    control(page, "name").fill("Harbour narrator")
    control(page, "says").fill(transcript)
    page.locator(f"{STUDIO} button", has_text=re.compile(r"^\s*Clone\s*$")).click()

    # the clone's A/B players in the panel, and its take beside the presets
    page.locator(f"{STUDIO} .dubkit-ab audio").nth(1).wait_for()
    page.locator(f"{CARDS} .dubkit-take-name", has_text="Harbour narrator").wait_for()
    names = texts(page, f"{CARDS} .dubkit-take-name")
    facts = texts(page, f"{CARDS} .dubkit-take-facts")
    assert len(names) == 4 and names[3] == "Harbour narrator", names  # 3 presets, the clone
    assert re.fullmatch(r"en-US · clone V\d", facts[3]), facts
    players = load_media(page, f"{STUDIO} audio")
    assert len(players) == 6 and not media_problems(players), players  # 4 takes, A and B
    assert all(LEVEL.match(t) for t in texts(page, f"{CARDS} .dubkit-loudness"))
    assert not shown_errors(page, "body") and not refused, refused
    assert_no_violations(page, "the studio with a clone")
    page.set_viewport_size({"width": 1400, "height": 1250})  # Voila scrolls inside a panel
    page.locator(STUDIO).evaluate("el => el.scrollIntoView({block: 'start'})")  # no cut line
    screenshot(page, shots / "audition-studio.png", SCREENSHOTS / "audition-studio.png")


@pytest.mark.browser
def test_studio_with_a_key_talks_to_the_service_of_that_key(
    sandbox, new_key, client_for, page, tmp_path, shots
):
    """DUBKIT_API_KEY and DUBKIT_BASE_URL set: the studio uses that service (here the test
    session's sandbox, reached over HTTP like any service), and the work is that key's."""
    server = start_studio(
        tmp_path / "home", shots / "studio-with-key.log", service=(sandbox.url, new_key)
    )
    try:
        open_studio(page, server)
        assert f"the service at {sandbox.url}" in page.locator(STUDIO).inner_text()
        page.locator(f"{STUDIO} button", has_text="Hear them").click()
        page.locator(f"{CARDS} audio").first.wait_for()
        assert not media_problems(load_media(page, f"{CARDS} audio"))
        assert all(LEVEL.match(t) for t in texts(page, f"{CARDS} .dubkit-loudness"))
        assert client_for(new_key).tasks.list(), "the studio's speech is a task of this key"
        assert new_key not in page.content(), "the key is never shown"
    finally:
        server.stop()


@pytest.mark.browser
def test_a_keyboard_alone_auditions_shortlists_and_picks_blind(studio, page, shots):
    """No mouse: two voices heard, one shortlisted, then a blind round picked, with Tab,
    Shift+Tab, arrow keys, Enter and Space only; the status line says each step."""
    open_studio(page, studio)
    page.locator("body").focus()
    tab_to(page, "el => el.name === 'count'")
    page.keyboard.press("ArrowDown")  # 3 voices down to 2
    tab_to(page, "el => el.dataset.dubkitAction === 'hear'")
    page.keyboard.press("Enter")
    page.locator(f"{CARDS} audio").nth(1).wait_for()
    assert page.locator(f"{CARDS} audio").count() == 2
    tab_to(page, "el => el.classList.contains('dubkit-star')")
    page.keyboard.press("Space")
    page.locator(f"{SHORTLIST} table.dubkit-shortlist tbody tr").first.wait_for()
    assert page.locator(f"{CARDS} .dubkit-star").first.get_attribute("aria-pressed") == "true"

    tab_to(page, "el => el.dataset.dubkitAction === 'blind'", back=True)
    page.keyboard.press("Space")
    page.wait_for_function(
        "sel => document.querySelector(sel).checked", arg=f"{STUDIO} .dubkit-blind input"
    )
    tab_to(page, "el => el.dataset.dubkitAction === 'hear'")
    page.keyboard.press("Enter")
    page.locator(f"{STUDIO} .dubkit-status", has_text="Blind round").wait_for()
    tab_to(page, "el => el.classList.contains('dubkit-pick-button') && /B$/.test(el.innerText)")
    page.keyboard.press("Enter")
    page.locator(f"{STUDIO} .dubkit-status", has_text="You picked B").wait_for()
    assert page.locator(f"{STUDIO} .dubkit-status").get_attribute("role") == "status"
    screenshot(page, shots / "studio-keyboard.png")
