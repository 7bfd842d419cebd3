"""Every notebook, run in JupyterLab in headless Chromium, checked the way a person looks at it.

The browser is made a remote one: it cannot reach the sandbox's loopback port (every request
to it is aborted), as on Binder or JupyterHub, and Lab runs both at the root and below a hub's
``/user/<name>/`` prefix. Every player must still load and play.

For each notebook in notebooks/ (whatever exists now): every cell runs, no error is shown,
every widget renders, every ``<audio>``/``<video>`` loads (metadata, a duration > 0), no player
autoplays or loops, and no task cell is left saying "running". Some notebooks promise more, and
the checks below keyed by notebook name hold them to it (see ``PROMISES``).
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from _waiting import PATIENCE
from accessibility import assert_no_violations, assert_players_named, set_lab_theme
from jupyter_servers import NOTEBOOKS, SCREENSHOTS
from lab_page import OUTPUTS, LabNotebook, RunReport
from page_checks import (
    MEDIA_STATE,
    block_other_loopback_ports,
    load_media,
    media_problems,
    press_play,
    screenshot,
    shown_errors,
)
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

PATHS = sorted(
    p.relative_to(NOTEBOOKS).as_posix()
    for p in NOTEBOOKS.rglob("*.ipynb")
    if ".ipynb_checkpoints" not in p.parts
)
PLAYERS = f"{OUTPUTS} audio, {OUTPUTS} video"
TERMINAL = {"finished", "failed"}

# What each notebook shows a person, beyond the checks every notebook gets:
#   task_cell     a task cell seen "running" after its cell ended, then "finished" (same [n]):
#                 it refreshed itself, nobody re-ran it (their sandbox timing is 2 s)
#   voice_table   a voice table whose play controls play
#   speech        TTS/audition players, one of which plays when pressed
#   video         the original and dubbed videos, which play when pressed
PROMISES = {
    "00_quickstart": {"task_cell"},
    "01_voices_and_audition": {"voice_table", "speech"},
    "02_text_to_speech": {"speech"},
    "03_voice_cloning": {"speech"},
    "04_text_translation": {"task_cell"},
    "06_translate_and_dub": {"task_cell", "video"},
    "07_tasks_and_webhooks": {"task_cell"},
    "08_edit_and_redub": {"check_timeline"},
    "11_dub_a_course": {"batch_table"},
}
# The README's pictures: the notebook, and the cell it scrolls to.
DOC_SHOTS = {
    "00_quickstart": "notebook-task-cell.png",
    "06_translate_and_dub": "notebook-dub-side-by-side.png",
    "08_edit_and_redub": "notebook-dub-check.png",
    "11_dub_a_course": "notebook-course-batch.png",
}
FOCUS = {
    "video": "video",
    "voice_table": "table.dubkit-voices",  # in order of preference
    "speech": ".dubkit-speech, .dubkit-audition",
    "task_cell": "table.dubkit-tasks",
    "batch_table": "table.dubkit-batch",
    "check_timeline": ".dubkit-check",
}


def test_the_tour_is_in_the_list():
    """The list is read from notebooks/, so a notebook cannot fall out of the suite unseen."""
    names = {Path(p).stem for p in PATHS}
    assert {"00_quickstart", "04_text_translation"} <= names, sorted(names)


# Below a hub's prefix, the notebooks that between them show every kind of output above (a
# task cell, a voice table, speech, video, a dub's check, a course's table): a prefix changes
# how each kind reaches the browser (its player's URL, the live channel's), not what a notebook
# does with it, so the others run at the root only. test_hub.py runs a class on a real hub.
UNDER_PREFIX = (
    "00_quickstart.ipynb",
    "01_voices_and_audition.ipynb",
    "06_translate_and_dub.ipynb",
    "08_edit_and_redub.ipynb",
    "11_dub_a_course.ipynb",
)


def test_the_notebooks_below_a_prefix_show_every_kind_of_output():
    shown = set().union(*(PROMISES.get(Path(p).stem, set()) for p in UNDER_PREFIX))
    assert set(UNDER_PREFIX) <= set(PATHS) and shown == set(FOCUS), sorted(shown)


@pytest.mark.parametrize(
    ("lab", "path"),
    [("root", p) for p in PATHS] + [("hub-prefix", p) for p in UNDER_PREFIX],
    indirect=["lab"],
    # One Lab per base for the session: without the scope, a mixed direct and indirect
    # parametrize is function-scoped, and each test started and stopped a Lab of its own.
    scope="session",
)
def test_notebook_runs_in_lab_as_a_person_sees_it(path, lab, page, shots):
    stem = Path(path).stem
    promises = PROMISES.get(stem, set())
    refused = block_other_loopback_ports(page, lab.port)
    notebook = LabNotebook(page, lab, path)
    notebook.open()
    try:
        report = notebook.run_all()
        print(f"{path}: all cells ran in {report.seconds:.1f} s")
        _check_cells(report)
        assert not shown_errors(page, OUTPUTS)
        players = load_media(page, PLAYERS)
        assert not media_problems(players), (media_problems(players), refused[:5])
        _check_task_cells(page, report, watched="task_cell" in promises)
        if "task_cell" in promises:
            _check_saved_task_pictures(page, lab, path)
        if "batch_table" in promises:
            _check_batch_table(page)
        if "check_timeline" in promises:
            _check_timeline(page)
        if "voice_table" in promises:
            _check_plays(page, _in_outputs("table.dubkit-voices audio"), "a voice preview")
        if "speech" in promises:
            _check_plays(
                page, _in_outputs(".dubkit-speech audio, .dubkit-audition audio"), "a speech line"
            )
        if "video" in promises:
            assert page.locator(f"{OUTPUTS} video").count() >= 2, "original and dub expected"
            state = _check_plays(page, f"{OUTPUTS} video", "the dubbed video", index=1)
            assert state["videoWidth"] > 0
            _check_captions(page, shots)
        if not urlsplit(lab.url).path:  # once (at the root): light and dark theme
            for dark in (False, True):
                set_lab_theme(page, dark)
                assert_no_violations(page, f"{path} ({'dark' if dark else 'light'} theme)")
            assert_players_named(page, path)
            set_lab_theme(page, False)
        _focus(
            page,
            [s for p, s in FOCUS.items() if p in promises]
            + [".jupyter-widgets, .dubkit-live", "audio"],
        )
        prefixed = bool(urlsplit(lab.url).path)
        targets = [shots / f"{stem}{'-under-prefix' if prefixed else ''}.png"]
        if stem in DOC_SHOTS and not prefixed:
            targets.append(SCREENSHOTS / DOC_SHOTS[stem])
        screenshot(page, *targets)
    finally:
        notebook.shutdown_kernel()


def _check_timeline(page) -> None:
    """A dub's check: its timeline drawn (an image with a name), each line on it, a flagged
    line marked by a word beside its shape, and the table that is its twin."""
    figure = page.locator(f"{OUTPUTS} .dubkit-check svg[role='img']").first
    assert figure.get_attribute("aria-label").startswith("Timeline of 2 lines, 1 flagged")
    assert figure.bounding_box()["width"] > 300
    static = page.locator(f"{OUTPUTS} .dubkit-check").first
    assert static.locator("g[data-dubkit-line]").count() == 2
    assert static.locator("svg text", has_text="listen 1").count() == 1
    rows = page.locator(f"{OUTPUTS} .dubkit-check table.dubkit-check tbody tr").first
    assert "reading speed" in rows.inner_text()
    # The live check (dubkit.CheckView): Enter on a line of its timeline plays the line and
    # opens the script editor below; a click on another line plays that one.
    live = page.locator(f"{OUTPUTS} .dubkit-live .dubkit-check").first
    opened = page.locator(f"{OUTPUTS} .dubkit-check-opened").first
    first = live.locator("g[role='button'][data-dubkit-key='1']")
    assert "play it and open it in the script editor" in first.get_attribute("aria-label")
    editor = page.locator(f"{OUTPUTS} input[aria-label='translation of line 1']")
    editors = editor.count()  # the notebook's own script editor, further down
    first.focus()
    page.keyboard.press("Enter")
    expect(opened).to_contain_text("Line 1", timeout=PATIENCE * 1000)
    player = opened.locator("audio")
    handle = player.element_handle(timeout=PATIENCE * 1000)
    try:
        page.wait_for_function("el => el.currentTime > 0.2", arg=handle, timeout=30_000)
    except PlaywrightTimeout:
        raise AssertionError(f"line 1 did not play: {player.evaluate(MEDIA_STATE)}") from None
    assert player.get_attribute("aria-label").startswith("fr-FR dubbed, line 1")
    expect(editor).to_have_count(editors + 1, timeout=PATIENCE * 1000)
    live.locator("g[role='button'][data-dubkit-key='2']").click()
    expect(opened).to_contain_text("Line 2", timeout=PATIENCE * 1000)
    expect(editor).to_have_count(editors + 1)  # the one it opened, not a second


@pytest.mark.parametrize("lab", ["root"], indirect=True)  # the kernel's doing, not the URL's
def test_a_cell_thread_prints_into_the_cell_that_started_it(lab, page):
    """The ipykernel 7 parent-header fix, seen in Lab: a thread started by one cell prints
    while the next cell runs, and its line shows in its own cell (a plain thread's would not
    show there; ipykernel gives it no parent, and Lab files it under whichever cell runs)."""
    cells = [
        "import time\nfrom dubkit.widgets._threads import start_cell_thread",
        "start_cell_thread(lambda: (time.sleep(1.5), print('line from the cell thread')),\n"
        "                  name='demo')\nprint('thread started')",
        "time.sleep(4)    # the thread prints while this cell runs\nprint('second cell done')",
    ]
    _scratch_notebook(lab, "zz_cell_threads.ipynb", cells)
    notebook = LabNotebook(page, lab, "zz_cell_threads.ipynb")
    notebook.open()
    try:
        _check_cells(notebook.run_all())
        starter = notebook.cell(1).locator(".jp-OutputArea").inner_text()
        later = notebook.cell(2).locator(".jp-OutputArea").inner_text()
        assert "line from the cell thread" in starter, (starter, later)
        assert "line from the cell thread" not in later
    finally:
        notebook.shutdown_kernel()


def test_an_awaited_call_plays_and_its_task_cell_refreshes_in_lab(lab, page, shots):
    """The async client in a Lab cell (Jupyter runs the loop; the cell awaits at top level):
    the speech it returns is the same player, which plays in a browser that cannot reach the
    sandbox; an AsyncTask shown with dubkit.monitor refreshes itself until it ends."""
    cells = [
        "import dubkit\nclient = await dubkit.connect_async()",
        'speech = await client.tts.create(["Hello from an awaited call."],\n'
        '                                 voice="sv_s1_en_us_clear_f")\nspeech',
        'client.sandbox.set_timing("seconds", 2)\n'
        'task = await client.translate.create_async(["Good morning"], source="en-US",\n'
        '                                           target="fr-FR")\ndubkit.monitor(task)',
    ]
    _scratch_notebook(lab, "zz_awaited.ipynb", cells)
    refused = block_other_loopback_ports(page, lab.port)
    notebook = LabNotebook(page, lab, "zz_awaited.ipynb")
    notebook.open()
    try:
        report = notebook.run_all()
        _check_cells(report)
        assert not shown_errors(page, OUTPUTS)
        players = load_media(page, PLAYERS)
        assert len(players) == 1 and not media_problems(players), (players, refused[:5])
        _check_plays(page, _in_outputs(".dubkit-speech audio"), "the awaited speech line")
        # the task ends some 2 s after its cell did: wait for the cell to say so by itself
        page.wait_for_function(
            f"""() => [...document.querySelectorAll(
                {f"{OUTPUTS} .dubkit-live table.dubkit-tasks td[data-status]"!r})]
                .some(td => td.dataset.status === 'finished')""",
            timeout=PATIENCE * 1000,
        )
        report.task_states = page.evaluate("() => window.__dubkitTaskStates")
        report.announced = page.evaluate("() => window.__dubkitAnnounced")
        _check_task_cells(page, report, watched=True)
        _focus(page, [".dubkit-speech"])
        prefixed = bool(urlsplit(lab.url).path)
        targets = [shots / f"awaited-tts{'-under-prefix' if prefixed else ''}.png"]
        if not prefixed:
            targets.append(SCREENSHOTS / "notebook-awaited-tts.png")
        screenshot(page, *targets)
    finally:
        notebook.shutdown_kernel()


def _scratch_notebook(lab, name: str, cells: list[str]) -> None:
    """A notebook of these code cells, unrun, in the Lab's folder."""
    code = [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": c}
        for c in cells
    ]
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook = {
        "cells": code,
        "metadata": {"kernelspec": kernel},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (lab.root / name).write_text(json.dumps(notebook))


def _check_cells(report: RunReport) -> None:
    errors = [f"cell {c['index']}: {e}" for c in report.code_cells for e in c["errors"]]
    assert not errors, errors
    not_run = [c["source"] for c in report.code_cells if c["count"] is None]
    assert not not_run, f"cells that never ran: {not_run}"


def _check_task_cells(page, report: RunReport, *, watched: bool) -> None:
    """No live task table is left unfinished; a watched one was seen refreshing by itself."""
    final = page.eval_on_selector_all(
        f"{OUTPUTS} .dubkit-live table.dubkit-tasks",
        "ts => ts.map(t => [...t.querySelectorAll('tbody tr td[data-status]')]"
        ".map(td => td.dataset.status))",
    )
    stuck = [statuses for statuses in final if not set(statuses) <= TERMINAL]
    assert not stuck, f"task cells still not ended after the run: {stuck}"
    if not watched:
        return
    live = [s for s in report.task_states if s["live"]]
    assert live, "no live task cell (widget) was shown"
    for cell in sorted({s["cell"] for s in live}):
        states = [s for s in live if s["cell"] == cell]
        last = states[-1]
        assert set(last["statuses"]) == {"finished"}, states
        assert last["prompt"] != "[*]:", states
        # running after its cell had ended ([n] shown), then finished under the same [n]
        ran_on = [
            s
            for s in states
            if s["prompt"] == last["prompt"] and not set(s["statuses"]) <= TERMINAL
        ]
        assert ran_on, f"cell {cell} was never seen running after it ended: {states}"
        assert states.index(ran_on[0]) < states.index(last)
    # A screen reader hears the end: a polite live region (the same element all along, so its
    # change is read out) went from saying nothing of an end to saying "... finished".
    announced = [
        region
        for region, role, said in report.announced
        if role == "status"
        and "finished" in said
        and any(r == region and "finished" not in s for r, _, s in report.announced)
    ]
    assert announced, f"no live region announced a task's end: {report.announced}"


def _check_batch_table(page) -> None:
    """The batch's live table ended with every row dubbed, having refreshed itself: its summary,
    a polite live region (the same element all along), said each change once, from "0 of 8"
    to "6 of 6 dubbed"; a finished row's buttons are named by the row they open. Its saved
    picture is its last state: the notebook's last cell re-makes one row (revision 2), and the
    saved output shows it dubbed (the view writes it a few seconds after the end)."""
    live = f"{OUTPUTS} .dubkit-live .dubkit-batch-summary"
    page.wait_for_function(
        """() => window.jupyterapp.shell.currentWidget.content.widgets
            .flatMap(c => c.model.type === 'code' ? c.model.outputs.toJSON() : [])
            .map(o => [].concat((o.data || {})['text/html'] || []).join(''))
            .some(h => h.includes('6 of 6 dubbed') && h.includes(' r2<'))""",
        timeout=PATIENCE * 1000,
    )
    page.wait_for_function(
        f"() => [...document.querySelectorAll({live!r})].some(r => /6 of 6 dubbed/.test(r.textContent))",
        timeout=PATIENCE * 1000,
    )
    announced = page.evaluate("() => window.__dubkitAnnounced")  # the run's, and since
    # the region first shown (a settled picture draws the widget anew, with a region of its own)
    region = next(region for region, role, said in announced if "of 6 dubbed" in said)
    said = [s for r, role, s in announced if r == region and role == "status"]
    # it refreshed itself: from nothing done to all 8 (the last cell then re-makes one row)
    assert "0 of 6 dubbed" in said[0] and any(s.endswith("6 of 6 dubbed") for s in said), said
    assert all(a != b for a, b in zip(said, said[1:])), said  # each change once
    names = page.eval_on_selector_all(
        f"{OUTPUTS} .dubkit-live table.dubkit-batch button", "bs => bs.map(b => b.ariaLabel)"
    )
    assert len(names) == 12 and len(set(names)) == 12, names  # Compare, Edit script: 6 rows
    assert "Compare lesson01 → fr-FR" in names


def _check_saved_task_pictures(page, lab, path: str) -> None:
    """Saved from Lab, a task cell's picture is its last state: the file shows the tasks
    finished, not "running" as they were when the cell was first shown. (The monitor writes it
    a few seconds after the end, once its live region has been read out: waited for here.)"""
    page.wait_for_function(
        """() => window.jupyterapp.shell.currentWidget.content.widgets
            .flatMap(c => c.model.type === 'code' ? c.model.outputs.toJSON() : [])
            .map(o => [].concat((o.data || {})['text/html'] || []).join(''))
            .filter(h => h.includes('dubkit-tasks'))
            .every(h => !h.includes("data-status='running'"))"""
    )
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    saved = json.loads((lab.root / path).read_text())
    pictures = [
        "".join(output["data"]["text/html"])
        for cell in saved["cells"]
        for output in cell.get("outputs", [])
        if "dubkit-tasks" in "".join(output.get("data", {}).get("text/html", ""))
    ]
    assert pictures, f"{path}: no task picture saved"
    stale = [p for p in pictures if "data-status='running'" in p]
    assert not stale, f"{path}: {len(stale)} of {len(pictures)} task pictures say running"


CAPTIONS = """async (video) => {
    const tracks = [...video.textTracks];
    if (!tracks.length) return {tracks: 0};
    const track = tracks[0];
    track.mode = 'showing';  // what choosing it in the player's CC menu does
    const deadline = performance.now() + 30000;
    while ((!track.cues || !track.cues.length) && performance.now() < deadline)
        await new Promise(r => setTimeout(r, 50));
    const cue = track.cues[0];
    video.currentTime = (cue.startTime + cue.endTime) / 2;
    await new Promise(r => video.addEventListener('seeked', r, {once: true}));
    return {tracks: tracks.length, kind: track.kind, language: track.language,
            label: track.label, cues: track.cues.length, shown: [...track.activeCues].map(
                c => c.text), defaultOn: video.querySelector('track').default};
}"""


def _check_captions(page, shots) -> None:
    """Every video has a captions track in its language; turned on, it shows the line said
    at that moment (off until chosen)."""
    videos = page.locator(f"{OUTPUTS} video")
    for index in range(videos.count()):
        state = videos.nth(index).evaluate(CAPTIONS)
        assert state["tracks"] >= 1 and state["kind"] == "captions", state
        assert state["cues"] >= 1 and state["shown"] and not state["defaultOn"], state
    videos.nth(1).scroll_into_view_if_needed()
    screenshot(page, shots / "dub-with-captions.png", SCREENSHOTS / "dub-with-captions.png")


def _check_plays(page, selector: str, what: str, *, index: int = 0) -> dict:
    players = page.locator(selector)
    assert players.count() > index, f"no {what} player ({selector})"
    state = press_play(players.nth(index))
    assert state["error"] is None and state["currentTime"] > 0.2, f"{what} did not play: {state}"
    return state


def _in_outputs(selector: str) -> str:
    """``selector`` (a comma list too) within the outputs of the notebook under test."""
    return ", ".join(f"{OUTPUTS} {part.strip()}" for part in selector.split(","))


def _focus(page, selectors: list[str]) -> None:
    """Scroll the first thing worth showing to the top of the notebook, for the picture."""
    for selector in selectors:
        found = page.locator(_in_outputs(selector))
        if found.count():
            found.first.evaluate(
                "el => (el.closest('.jp-Cell') || el).scrollIntoView({block: 'start'})"
            )
            page.wait_for_timeout(300)  # let the scroll settle before the picture
            return
