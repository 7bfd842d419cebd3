"""Notebooks as apps and as saved pages: standalone Voila and marimo (real, for a remote
browser), and ``nbconvert --to html`` offline; the same person's checks as in
test_front_ends.py (every player loads and plays, a dub seeks, a task cell finishes)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _waiting import PATIENCE
from accessibility import assert_no_violations, assert_players_named
from front_ends import marimo_copy, start_marimo, start_voila, wait_for_marimo_run
from jupyter_servers import NOTEBOOKS
from page_checks import (
    DEEP,
    block_other_loopback_ports,
    load_media,
    media_problems,
    refuse,
    screenshot,
    shown_errors,
)
from player_checks import check_players, check_task_cell_finished, play_each

pytestmark = pytest.mark.browser

DEEP_FOCUS = """() => {
    let el = document.activeElement;
    while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
    return el ? el.id || el.tagName : null;
}"""  # the focused element, looked for inside shadow roots

LESSONS = ("02_text_to_speech.ipynb", "06_translate_and_dub.ipynb")


@contextmanager
def in_marimo(page, notebook: Path, folder: Path, log: Path) -> Iterator[list[str]]:
    """``notebook`` converted and run by ``marimo run``, open in ``page`` once every cell has
    run; the loopback ports the page was refused (only marimo's own is reachable)."""
    server = start_marimo(marimo_copy(notebook, folder), folder / "home", log)
    try:
        refused = block_other_loopback_ports(page, server.port)
        page.goto(server.url, timeout=PATIENCE * 1000)
        wait_for_marimo_run(page, PATIENCE)
        yield refused
    finally:
        server.stop()


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_lesson_plays_in_voila_for_a_remote_browser(lesson, page, tmp_path, shots):
    """Standalone Voila serves no ``/proxy/``: its players take the comm."""
    notebook = tmp_path / lesson
    shutil.copy(NOTEBOOKS / lesson, notebook)
    server = start_voila(notebook, tmp_path / "home", shots / f"voila-{notebook.stem}.log")
    try:
        refused = block_other_loopback_ports(page, server.port)
        page.goto(server.url, timeout=PATIENCE * 1000)
        page.wait_for_selector("audio, video", timeout=PATIENCE * 1000)
        page.wait_for_load_state("networkidle", timeout=PATIENCE * 1000)
        assert not shown_errors(page, "body")
        check_players(page, "audio, video", refused, vscode=False)
        assert_no_violations(page, f"{lesson} in Voila")
        screenshot(page, shots / f"voila-{notebook.stem}.png")
    finally:
        server.stop()


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_lesson_plays_in_marimo(lesson, page, tmp_path, shots):
    """``marimo convert`` of the notebook, run by ``marimo run``: anywidget is its widgets."""
    stem = Path(lesson).stem
    with in_marimo(page, NOTEBOOKS / lesson, tmp_path, shots / f"marimo-{stem}.log") as refused:
        text = page.inner_text("body")
        assert "Traceback" not in text and "not supported in marimo" not in text, text[-2000:]
        check_players(page, "audio, video", refused, vscode=False)
        if lesson.startswith("06"):
            check_task_cell_finished(page, "table.dubkit-tasks")
        assert_no_violations(page, f"{lesson} in marimo")
        screenshot(page, shots / f"marimo-{stem}.png")


def test_a_course_is_dubbed_with_its_live_table_in_marimo(page, tmp_path, shots):
    """Notebook 11 in marimo: the batch's live table (an anywidget) refreshes by itself until
    every row is dubbed, its summary a polite live region, its buttons named by their rows."""
    notebook = NOTEBOOKS / "11_dub_a_course.ipynb"
    with in_marimo(page, notebook, tmp_path, shots / "marimo-course.log"):
        text = page.inner_text("body")
        assert "Traceback" not in text and "not supported in marimo" not in text, text[-2000:]
        summary = page.locator(".dubkit-batch-summary").first
        summary.wait_for(timeout=PATIENCE * 1000)
        assert summary.get_attribute("role") == "status"
        page.wait_for_function(
            f"""() => ({DEEP})(document, '.dubkit-batch-summary')
                .some(r => /6 of 6 dubbed/.test(r.textContent))""",
            timeout=PATIENCE * 1000,
        )
        names = page.evaluate(
            f"() => ({DEEP})(document, 'table.dubkit-batch button').map(b => b.ariaLabel)"
        )
        assert len(names) == 12 and len(set(names)) == 12, names
        assert_no_violations(page, "11_dub_a_course in marimo")
        page.locator("table.dubkit-batch").first.scroll_into_view_if_needed()
        screenshot(page, shots / "marimo-11_dub_a_course.png")


def test_the_voice_table_filters_ticks_and_auditions_in_marimo(page, tmp_path, shots):
    """Notebook 01's voice browser in marimo (which has no ipywidgets): a filter chosen, two
    voices ticked, the line heard, all from the keyboard (the focus staying on a box through
    the kernel's redraw); the takes play."""
    notebook = NOTEBOOKS / "01_voices_and_audition.ipynb"
    with in_marimo(page, notebook, tmp_path, shots / "marimo-voice-table.log"):
        table = page.locator(".dubkit-filters").first
        table.scroll_into_view_if_needed()
        gender = page.locator("select[name='gender']").first
        gender.focus()
        gender.select_option("female")  # what the arrow keys and Enter do in a select
        # The filtered page itself, not only the pager: ticks given to the page before it is
        # redrawn would tick rows that are about to go.
        page.wait_for_function(
            f"""() => {{
                const boxes = ({DEEP})(document, "input[data-dubkit-action='tick']");
                return boxes.length > 0 && boxes.every(box => box.dataset.dubkitKey.endsWith('_f'))
                    && ({DEEP})(document, "select[name='gender']")[0].value === 'female';
            }}""",
            timeout=PATIENCE * 1000,
        )
        # Two voices the notebook's own code left unticked (it ticks some itself: Space on
        # those would untick them), each ticked from the keyboard and seen ticked, as a person
        # sees the box before moving on (the kernel redraws the table).
        boxes = f"""({DEEP})(document, "input[data-dubkit-action='tick']")"""
        keys = page.evaluate(f"() => {boxes}.filter(b => !b.checked).map(b => b.dataset.dubkitKey)")
        assert len(keys) >= 2, keys
        for key in keys[:2]:
            box = page.locator(f"input[data-dubkit-key='{key}']").first
            box.focus()
            page.evaluate(f"() => {boxes}.forEach(b => {{ b.dataset.drawn = 'before'; }})")
            page.keyboard.press("Space")
            page.wait_for_function(  # the kernel's redraw shows it ticked (a box drawn anew)
                f"""(key) => {boxes}.some(
                    b => b.dataset.dubkitKey === key && b.checked && !b.dataset.drawn)""",
                arg=key,
                timeout=PATIENCE * 1000,
            )
            # and the keyboard is still on that box, inside marimo's shadow root
            assert page.evaluate(DEEP_FOCUS) == box.get_attribute("id"), key
        page.locator("button[data-dubkit-action='hear']").first.focus()
        page.keyboard.press("Enter")
        takes = ".dubkit-audition-result audio"
        page.wait_for_function(  # a result with a take of each voice ticked here
            f"""(keys) => ({DEEP})(document, ".dubkit-audition-result")
                .some(r => keys.every(k => r.textContent.includes(k)))""",
            arg=keys[:2],
            timeout=PATIENCE * 1000,
        )
        states = load_media(page, takes)
        assert not media_problems(states), media_problems(states)
        play_each(page, takes, len(states))
        screenshot(page, shots / "marimo-voice-table.png")


def test_the_studio_auditions_and_shortlists_in_marimo(page, tmp_path, shots):
    """The audition studio's app notebook in marimo: three voices heard side by side, each
    take plays, one starred from the keyboard lands in the shortlist."""
    notebook = NOTEBOOKS / "apps" / "audition_studio.ipynb"
    with in_marimo(page, notebook, tmp_path, shots / "marimo-studio.log"):
        hear = page.locator("button[data-dubkit-action='hear']").first
        hear.focus()
        page.keyboard.press("Enter")
        takes = ".dubkit-takes audio"
        page.wait_for_function(
            f"() => ({DEEP})(document, {takes!r}).length >= 3", timeout=PATIENCE * 1000
        )
        states = load_media(page, takes)
        assert len(states) == 3 and not media_problems(states), states
        play_each(page, takes, 3)
        page.locator(".dubkit-takes button.dubkit-star").first.focus()
        page.keyboard.press("Space")
        page.wait_for_function(
            f"() => ({DEEP})(document, 'table.dubkit-shortlist tbody tr').length === 1",
            timeout=PATIENCE * 1000,
        )
        assert (
            page.locator(".dubkit-takes button.dubkit-star").first.get_attribute("aria-pressed")
            == "true"
        )
        assert_no_violations(page, "the studio in marimo")
        screenshot(page, shots / "marimo-studio.png")


def test_every_saved_notebook_exported_to_html_plays_with_no_network(page, tmp_path, shots):
    """``jupyter nbconvert --to html``: every player with a source plays offline; a player that
    needs the kernel says so beside it; no widget output is left blank."""
    paths = sorted(p for p in NOTEBOOKS.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--output-dir", tmp_path]
        + [str(p) for p in paths],
        check=True,
        capture_output=True,
    )
    refuse(page, "^(?!file:|data:)", lambda url: True)  # no network: only the files load
    for path in paths:
        page.goto((tmp_path / f"{path.stem}.html").as_uri())
        embedded = "audio[src], video[src]"
        states = load_media(page, embedded)
        assert not media_problems(states), (path.name, media_problems(states))
        play_each(page, embedded, len(states))
        live = page.eval_on_selector_all(
            "audio:not([src]), video:not([src])",
            "els => els.map(el => !!el.parentElement.querySelector('.dubkit-live-note'))",
        )
        assert all(live), f"{path.name}: a player with no source and no note"
        blank = page.eval_on_selector_all(
            ".jupyter-widgets", "els => els.filter(el => !el.innerText.trim()).length"
        )
        assert not blank, f"{path.name}: {blank} widget outputs show nothing"
        assert_no_violations(page, f"{path.name} exported")
        assert_players_named(page, f"{path.name} exported")
        if path.stem == "06_translate_and_dub":
            screenshot(page, shots / "static-export-06.png")
        if path.stem == "08_edit_and_redub":  # a dub's check: its timeline lives in the file
            timeline = page.locator(".dubkit-check svg[role='img']").first
            assert timeline.get_attribute("aria-label").startswith("Timeline of 2 lines")
            timeline.scroll_into_view_if_needed()
            screenshot(page, shots / "static-export-08-check.png")
