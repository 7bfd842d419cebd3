"""Recorded lessons replayed in JupyterLab, in headless Chromium, with no key and no service.

Lessons are recorded once for the test session (``_cassettes.recorded_once``: a standalone
sandbox used with its key, then stopped; tests/test_cassette.py reads the same recording). Each replayed lesson gets a JupyterLab of its own whose environment
(and so its kernels') says ``DUBKIT_REPLAY=<that lesson's cassette>`` and holds no
``DUBKIT_API_KEY``/``DUBKIT_BASE_URL``; the notebook is the repo's, unchanged. The browser is
a remote one: every loopback port but Lab's is refused, so the replayed media (served by the
kernel's embedded sandbox) can only play through Lab's ``/proxy/PORT/files/...`` or as data:
URIs.

A person running the lesson sees what the recording showed: every cell runs, no error, every
player loads, a speech line plays (02), the dubbed video plays with a picture (06), and no
"is not in ... the local sandbox answered" note: the cassette gave every answer, which the
kernel's own replay tally confirms.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import _cassettes
import pytest
from jupyter_servers import NOTEBOOKS, Server, start_lab
from lab_page import OUTPUTS, RUN_IN_KERNEL, LabNotebook, RunReport
from page_checks import (
    block_other_loopback_ports,
    load_media,
    media_problems,
    press_play,
    screenshot,
    shown_errors,
)

pytestmark = pytest.mark.browser

REPLAYED = ("02_text_to_speech", "06_translate_and_dub")
PLAYERS = f"{OUTPUTS} audio, {OUTPUTS} video"
SPEECH = f"{OUTPUTS} .dubkit-speech audio, {OUTPUTS} .dubkit-audition audio"
STRAY_NOTE = "the local sandbox answered"
TERMINAL = {"finished", "failed"}
# Asked of the kernel once the lesson has run, outside any cell (the notebook stays unchanged):
# who answered its client, by the replay's own count.
TALLY = """
import json as _json, os as _os
_replay = getattr(client, "replaying", None)
print(_json.dumps({
    "replaying": _replay is not None,
    "cassette": _replay.cassette.path.name if _replay else None,
    "answered": dict(_replay.answered) if _replay else {},
    "strayed": list(_replay.strayed) if _replay else [],
    "env": sorted(k for k in _os.environ if k.startswith("DUBKIT_")),
}))
"""


@pytest.fixture(scope="module")
def recording(browser, tmp_path_factory) -> _cassettes.Recording:
    """The lessons recorded once (after ``browser``, so a machine without Chromium skips
    before the recording's minute is spent)."""
    return _cassettes.recorded_once(tmp_path_factory)


@pytest.fixture(params=REPLAYED)
def lesson(request) -> str:
    return request.param


@pytest.fixture
def replay_lab(
    lesson: str, recording: _cassettes.Recording, tmp_path_factory, shots: Path
) -> Iterator[Server]:
    """A JupyterLab whose kernels replay ``lesson``'s cassette, with no key and no service URL.

    ``start_lab`` builds the server's environment from ``os.environ`` when it is called
    (``private_jupyter_env`` copies it before spawning), so the replay is set there for that
    call only; its kernels inherit the server's environment."""
    base = tmp_path_factory.mktemp(f"replay-lab-{lesson}")
    root = base / "root"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    with pytest.MonkeyPatch.context() as env:
        for name in ("DUBKIT_API_KEY", "DUBKIT_BASE_URL", "DUBKIT_RECORD", "DUBKIT_REPLAY_STRAYS"):
            env.delenv(name, raising=False)
        env.setenv("DUBKIT_REPLAY", str(recording.cassette(lesson)))
        server = start_lab(root, base / "home", shots / f"jupyterlab-replay-{lesson}.log")
    yield server
    server.stop()


def test_a_recorded_lesson_replays_in_lab_as_a_person_sees_it(lesson, replay_lab, page, shots):
    path = f"{lesson}.ipynb"
    refused = block_other_loopback_ports(page, replay_lab.port)
    notebook = LabNotebook(page, replay_lab, path)
    notebook.open()
    try:
        report = notebook.run_all()
        print(f"{path} replayed: all cells ran in {report.seconds:.1f} s")
        _check_cells(report)
        assert not shown_errors(page, OUTPUTS)

        shown = page.eval_on_selector_all(OUTPUTS, "els => els.map(el => el.innerText)")
        strays = [t for t in shown if STRAY_NOTE in t or " is not in " in t]
        assert not strays, f"calls the cassette lacked: {strays}"

        tally = json.loads(page.evaluate(RUN_IN_KERNEL, TALLY).strip().splitlines()[-1])
        print(f"{path}: the kernel's replay: {tally}")
        assert tally["replaying"], f"the kernel did not replay: {tally}"
        assert tally["cassette"] == f"{lesson}.dubkit", tally
        assert "DUBKIT_API_KEY" not in tally["env"] and "DUBKIT_BASE_URL" not in tally["env"]
        assert tally["answered"].get("cassette", 0) > 0, tally
        assert not tally["strayed"] and not tally["answered"].get("sandbox"), tally

        players = load_media(page, PLAYERS)
        assert players, "the lesson shows no player"
        assert not media_problems(players), (media_problems(players), refused[:5])
        direct = [
            p["src"]
            for p in players
            if not (p["src"].startswith("data:") or p["src"].startswith(f"{replay_lab.url}/proxy/"))
        ]
        assert not direct, f"players not through Lab's proxy nor embedded: {direct}"
        _check_no_task_left_running(page)

        if lesson == "02_text_to_speech":
            _check_plays(page, SPEECH, "a speech line")
            _focus(page, ".dubkit-speech")
        if lesson == "06_translate_and_dub":
            assert page.locator(f"{OUTPUTS} video").count() >= 2, "original and dub expected"
            state = _check_plays(page, f"{OUTPUTS} video", "the dubbed video", index=1)
            assert state["videoWidth"] > 0, state
            _focus(page, "video")
        screenshot(page, shots / f"replay-{lesson}.png")
    finally:
        notebook.shutdown_kernel()


def _check_cells(report: RunReport) -> None:
    errors = [f"cell {c['index']}: {e}" for c in report.code_cells for e in c["errors"]]
    assert not errors, errors
    not_run = [c["source"] for c in report.code_cells if c["count"] is None]
    assert not not_run, f"cells that never ran: {not_run}"


def _check_no_task_left_running(page) -> None:
    final = page.eval_on_selector_all(
        f"{OUTPUTS} .dubkit-live table.dubkit-tasks",
        "ts => ts.map(t => [...t.querySelectorAll('tbody tr td[data-status]')]"
        ".map(td => td.dataset.status))",
    )
    stuck = [statuses for statuses in final if not set(statuses) <= TERMINAL]
    assert not stuck, f"task cells still not ended after the replay: {stuck}"


def _check_plays(page, selector: str, what: str, *, index: int = 0) -> dict:
    players = page.locator(selector)
    assert players.count() > index, f"no {what} player ({selector})"
    state = press_play(players.nth(index))
    assert state["error"] is None and state["currentTime"] > 0.2, f"{what} did not play: {state}"
    return state


def _focus(page, selector: str) -> None:
    """Scroll the cell showing ``selector`` to the top of the notebook, for the picture."""
    found = page.locator(f"{OUTPUTS} {selector}")
    if found.count():
        found.first.evaluate("el => el.closest('.jp-Cell').scrollIntoView({block: 'start'})")
        page.wait_for_timeout(300)  # let the scroll settle before the picture
