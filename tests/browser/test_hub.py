"""A class on a real JupyterHub, in headless Chromium: students run lessons, the teacher
watches and pulls the levers.

One class sandbox (``dubkit sandbox``) and a class made on it by ``dubkit class create`` from a
roster of three students; JupyterHub with the dummy authenticator, the local-process spawner
and dubkit's ``class_environment`` hook (see hub_server.py). The browser is a remote one: it
reaches the hub's public port and nothing else on loopback, the sandbox above all, so every
player must come through the user's server (``/user/<name>/proxy/<port>/files/...``) or be
embedded.

* Each student logs in (a browser context of their own), runs a lesson in Lab under
  ``/user/<name>/``: every cell runs, every player loads, one plays; their kernel holds their
  own key and the class sandbox's URL, never the admin token nor the class file.
* The teacher logs in and runs the teacher's view (``ClassView(Classroom.open())``): the table
  shows the three students with the credits ``dubkit class show`` gives; the first student's
  latest speech plays (embedded); picking the student who dubbed shows both dubs, and one plays
  through the teacher's server; Top up adds 100, Reset forgets their work and gives back their
  grant, Disable refuses their key (the table and ``dubkit class show --csv`` say so) until
  Enable; Export CSV holds the class.

Screenshots (docs/screenshots/hub-*.png, refreshed with DUBKIT_UPDATE_SCREENSHOTS=1): a student's
lesson under the hub and the teacher's view.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _waiting import PATIENCE
from accessibility import assert_no_violations, assert_players_named, tab_to
from hub_server import (
    CREDITS,
    STUDENTS,
    TEACHER,
    ClassHub,
    cannot_run,
    processes_under,
    start_class_hub,
)
from jupyter_servers import SCREENSHOTS
from lab_page import OUTPUTS, RUN_IN_KERNEL, LabNotebook, RunReport
from page_checks import (
    block_other_loopback_ports,
    load_media,
    media_problems,
    press_play,
    screenshot,
    shown_errors,
)

import dubkit

pytestmark = pytest.mark.browser

# Which lesson each student finds in their home; one of them dubs, for the teacher to play.
LESSONS = {"ada": "02_text_to_speech", "bob": "06_translate_and_dub", "cy": "02_text_to_speech"}
DUBBER = "bob"
PICTURED = "bob"  # whose lesson goes to docs/screenshots
PLAYERS = f"{OUTPUTS} audio, {OUTPUTS} video"
VIEW = ".dubkit-class-view"
TOP_UP = 100
# Asked of a kernel outside any cell (the notebook stays a repo lesson): what the hub gave its
# server. Keys and tokens are compared by hash, so none is ever printed.
ENV_CHECK = """
import hashlib as _hashlib, json as _json, os as _os
_sha = lambda value: _hashlib.sha256(value.encode()).hexdigest()
_client = globals().get("client")
print(_json.dumps({
    "user": _os.environ.get("JUPYTERHUB_USER"),
    "prefix": _os.environ.get("JUPYTERHUB_SERVICE_PREFIX"),
    "base_url": _os.environ.get("DUBKIT_BASE_URL"),
    "key": _sha(_os.environ["DUBKIT_API_KEY"]) if "DUBKIT_API_KEY" in _os.environ else None,
    "admin_token_named": "DUBKIT_SANDBOX_ADMIN_TOKEN" in _os.environ,
    "admin_token_anywhere": any(_sha(v) == "TOKEN_SHA" for v in _os.environ.values()),
    "class_file": _os.environ.get("DUBKIT_CLASS_FILE"),
    "client_url": getattr(_client, "base_url", None),
    "client_embedded_sandbox": getattr(_client, "sandbox", None) is not None,
}))
"""
# The teacher's table as the browser shows it: student -> cells' text.
TABLE = f"""() => Object.fromEntries([...document.querySelectorAll(
    '{VIEW} table.dubkit-class tr.dubkit-student')].map(tr => [tr.dataset.student, {{
        name: tr.cells[0].innerText.trim(), credits: tr.cells[1].innerText.trim(),
        spent: tr.cells[2].innerText.trim(), tasks: tr.cells[3].innerText.trim(),
        disabled: tr.cells[0].innerText.includes('(disabled)')}}]))"""


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@pytest.fixture(scope="module")
def class_hub(browser, tmp_path_factory, shots: Path) -> Iterator[ClassHub]:
    """The class sandbox, the class, and the hub, for the module; all stopped at its end,
    with no process of theirs left (after ``browser``: no Chromium skips first)."""
    reason = cannot_run()
    if reason:
        if os.environ.get("DUBKIT_REQUIRE_BROWSER") == "1":  # CI: as conftest._cannot_run
            pytest.fail(f"the browser suite must run here: {reason}", pytrace=False)
        pytest.skip(reason)
    room = start_class_hub(tmp_path_factory.mktemp("class-hub"), shots, LESSONS)
    yield room
    running = [command for _, command in processes_under(room.base)]
    servers = [c for c in running if "jupyterhub-singleuser" in c]
    print(f"stopping the hub: {len(running)} processes under it, {len(servers)} user servers")
    strays = room.stop()
    assert servers, f"no user server seen under the hub's folder (is the check blind?): {running}"
    assert not strays, f"processes left running after the hub stopped (now killed): {strays}"


@pytest.fixture(scope="module")
def lessons_run() -> dict[str, RunReport]:
    """Each student's run, as their test left it (the teacher's test runs what is missing)."""
    return {}


@contextmanager
def logged_in(browser, room: ClassHub, name: str, shots: Path):
    """A browser of ``name``'s own, logged in to the hub with their server's Lab shown; the
    list it yields fills with the loopback requests refused (any port but the hub's)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(PATIENCE * 1000)
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    refused = block_other_loopback_ports(page, room.port)
    try:
        page.goto(f"{room.url}/hub/login")
        page.fill("#username_input", name)
        page.fill("#password_input", "any password will do")  # the dummy authenticator
        page.click("#login_submit")
        page.wait_for_url(f"**/user/{name}/lab**", timeout=PATIENCE * 1000)  # spawned
        yield page, refused
    except BaseException:
        try:
            page.screenshot(path=str(shots / f"FAILED-hub-{name}.png"))
        except Exception as exc:  # the failure matters more than its picture
            print(f"no failure screenshot: {exc}")
        raise
    finally:
        if problems:
            print(f"JavaScript errors on {name}'s page:\n" + "\n".join(problems))
        context.close()


def kernel_env(page, room: ClassHub) -> dict:
    code = ENV_CHECK.replace("TOKEN_SHA", _sha(room.admin_token))
    said = page.evaluate(RUN_IN_KERNEL, code).strip()
    assert "ERROR" not in said, said
    return json.loads(said.splitlines()[-1])


def run_lesson(browser, room: ClassHub, name: str, shots: Path) -> RunReport:
    """``name`` logs in, runs their lesson, and sees every player load and one play."""
    path = f"{LESSONS[name]}.ipynb"
    with logged_in(browser, room, name, shots) as (page, refused):
        notebook = LabNotebook(page, room.user(name), path)
        notebook.open()
        try:
            report = notebook.run_all()
            print(f"{name} ran {path} under /user/{name}/ in {report.seconds:.1f} s")
            errors = [f"cell {c['index']}: {e}" for c in report.code_cells for e in c["errors"]]
            assert not errors, errors
            assert all(c["count"] is not None for c in report.code_cells), report.code_cells
            assert not shown_errors(page, OUTPUTS)

            env = kernel_env(page, room)
            assert env["user"] == name and env["prefix"] == f"/user/{name}/", env
            assert env["base_url"] == room.sandbox_url, env
            assert env["key"] == _sha(room.keys()[name]), f"{name}'s kernel has not their key"
            assert env["client_url"] == room.sandbox_url, env
            assert not env["client_embedded_sandbox"], env
            assert not env["admin_token_named"] and not env["admin_token_anywhere"], (
                f"{name}'s kernel holds the sandbox's admin token"
            )
            assert env["class_file"] is None, env

            players = load_media(page, PLAYERS)
            assert players, f"{path} shows no player"
            assert not media_problems(players), (media_problems(players), refused[:5])
            through = f"{room.url}/user/{name}/proxy/{room.sandbox_port}/files/"
            direct = [
                p["src"]
                for p in players
                if not (p["src"].startswith("data:") or p["src"].startswith(through))
            ]
            assert not direct, f"players neither embedded nor through {through}: {direct}"
            if name == DUBBER:
                state = _play(page, f"{OUTPUTS} video", "dubbed")
                assert state["src"].startswith(through), state
                assert state["videoWidth"] > 0, state
                _focus(page, f"{OUTPUTS} video")
            else:
                _play(page, f"{OUTPUTS} .dubkit-speech audio", "")
                _focus(page, f"{OUTPUTS} .dubkit-speech")
            print(f"{name}: {len(players)} players loaded, none through another port")
            assert not refused, f"the browser asked for other loopback ports: {refused[:5]}"
            copies = [SCREENSHOTS / f"hub-student-{name}.png"] if name == PICTURED else []
            screenshot(page, shots / f"hub-student-{name}.png", *copies)
            return report
        finally:
            notebook.shutdown_kernel()


def _load_settled(page, selector: str) -> list[dict]:
    """Load every player of ``selector`` once the Output showing them has settled: an Output
    widget draws all its outputs again at each one appended, so players found early may be
    replaced by new ones that have not loaded; load again until every one found has."""
    deadline = time.monotonic() + PATIENCE
    while True:
        players = load_media(page, selector, timeout=10)
        if (players and not media_problems(players)) or time.monotonic() > deadline:
            return players


def _play(page, selector: str, src_part: str) -> dict:
    """Press play on the first player of ``selector`` whose source has ``src_part``."""
    sources = page.eval_on_selector_all(selector, "els => els.map(el => el.currentSrc)")
    index = next((i for i, src in enumerate(sources) if src_part in src), None)
    assert index is not None, f"no {selector} player with {src_part!r} in {sources}"
    state = press_play(page.locator(selector).nth(index))
    assert state["error"] is None and state["currentTime"] > 0.2, f"did not play: {state}"
    return state


def _focus(page, selector: str) -> None:
    """Scroll the cell showing ``selector`` to the top of the notebook, for the picture."""
    page.locator(selector).first.evaluate(
        "el => el.closest('.jp-Cell').scrollIntoView({block: 'start'})"
    )
    page.wait_for_timeout(300)  # let the scroll settle before the picture


@pytest.mark.parametrize("name", STUDENTS)
def test_a_student_runs_a_lesson_on_the_hub_with_their_own_key(
    name, class_hub, lessons_run, browser, shots
):
    lessons_run[name] = run_lesson(browser, class_hub, name, shots)
    row = class_hub.shown()[name]  # what the sandbox counted against their key
    assert int(row["tasks"]) > 0 and float(row["credits_left"]) < CREDITS, row


def test_the_teacher_watches_the_class_and_pulls_its_levers(class_hub, lessons_run, browser, shots):
    room = class_hub
    for name in STUDENTS:
        if name not in lessons_run:  # this test alone: the students' work first
            lessons_run[name] = run_lesson(browser, room, name, shots)
    shown = room.shown()  # `dubkit class show --csv`
    with logged_in(browser, room, TEACHER, shots) as (page, refused):
        page.set_viewport_size({"width": 1400, "height": 1000})
        notebook = LabNotebook(page, room.user(TEACHER), "class_view.ipynb")
        notebook.open()
        try:
            report = notebook.run_all()
            assert not [e for c in report.code_cells for e in c["errors"]], report.code_cells
            assert not shown_errors(page, OUTPUTS)
            env = kernel_env(page, room)
            assert env["user"] == TEACHER and env["key"] is None, env
            assert env["class_file"] == str(room.class_file) and env["admin_token_anywhere"], env

            # The three students, with the credits the sandbox gives them.
            page.wait_for_selector(f"{VIEW} table.dubkit-class tr.dubkit-student")
            table = page.evaluate(TABLE)
            assert sorted(table) == sorted(STUDENTS), table
            for name in STUDENTS:
                assert float(table[name]["credits"]) == float(shown[name]["credits_left"]), (
                    table[name],
                    shown[name],
                )
                assert float(table[name]["credits"]) < CREDITS and table[name]["tasks"] != "—"

            # The first student is picked: her latest speech plays, embedded. Then the one
            # who dubbed: the dub plays through the teacher's own server.
            results = f"{VIEW} .dubkit-class-results"
            first = STUDENTS[0]
            assert LESSONS[first] == "02_text_to_speech"
            latest = room.latest()
            assert latest[first] and latest[DUBBER] == 2, latest  # speech; the two dubs
            _wait_results(page, first, latest[first])
            players = _load_settled(page, f"{results} audio, {results} video")
            assert not media_problems(players), media_problems(players)
            assert all(p["src"].startswith("data:") for p in players), players
            _play(page, f"{results} audio", "data:")

            page.select_option(f"{VIEW} select[name='student']", DUBBER)
            _wait_results(page, DUBBER, latest[DUBBER])
            players = _load_settled(page, f"{results} audio, {results} video")
            assert not media_problems(players), (media_problems(players), refused[:5])
            through = f"{room.url}/user/{TEACHER}/proxy/{room.sandbox_port}/files/"
            direct = [p["src"] for p in players if not p["src"].startswith(("data:", through))]
            assert not direct, f"players neither embedded nor through {through}: {direct}"
            dubs = [p for p in players if p["tag"] == "video" and "/dubbed" in p["src"]]
            assert len(dubs) == 2, f"{DUBBER}'s two dubs expected: {players}"
            state = _play(page, f"{results} video", "dubbed")
            assert state["src"].startswith(through) and state["videoWidth"] > 0, state
            print(f"the teacher played {DUBBER}'s dub: {state}")

            assert_no_violations(page, "the teacher's view, a student picked")
            assert_players_named(page, "the teacher's view, a student picked")

            # Export CSV from the keyboard: Space takes the link as it would a button (on
            # 99838da only a.dubkit-download answered Space, and this link's class is its own).
            page.locator(f"{VIEW} a.dubkit-class-csv").focus()
            with page.expect_download(timeout=PATIENCE * 1000) as pending:
                page.keyboard.press("Space")
            exported = Path(pending.value.path()).read_text(encoding="utf-8")
            assert pending.value.suggested_filename == "class.csv" and DUBBER in exported

            # Top up: 100 more, in the table and in the note; from the keyboard alone.
            before = float(page.evaluate(TABLE)[DUBBER]["credits"])
            page.locator(f"{VIEW} select[name='student']").focus()
            tab_to(page, "el => el.classList.contains('dubkit-class-top-up')")
            page.keyboard.press("Enter")
            _wait_note(page, f"topped up {DUBBER}: {before + TOP_UP:g} credits left")
            _wait_row(page, DUBBER, "credits", f"{before + TOP_UP:g}")
            assert float(room.shown()[DUBBER]["credits_left"]) == before + TOP_UP
            page.locator(f"{VIEW}").evaluate(
                "el => el.closest('.jp-Cell').scrollIntoView({block: 'start'})"
            )
            page.wait_for_timeout(300)  # let the scroll settle before the picture
            screenshot(page, shots / "hub-teacher-view.png", SCREENSHOTS / "hub-teacher-view.png")

            # Reset: their work forgotten, their grant back, nothing left to play.
            page.click(f"{VIEW} button.dubkit-class-reset")
            _wait_note(page, f"reset {DUBBER}: work forgotten, {CREDITS:g} credits")
            _wait_row(page, DUBBER, "credits", f"{CREDITS:g}")
            _wait_row(page, DUBBER, "tasks", "—")
            _wait_results(page, DUBBER, 0)
            assert "No speech or dubs yet" in page.inner_text(results)
            assert not page.query_selector(f"{results} video, {results} audio")
            row = room.shown()[DUBBER]
            assert (float(row["credits_left"]), int(row["tasks"])) == (CREDITS, 0), row

            # Disable: marked in the table, said by the CLI, their key refused; then Enable.
            page.click(f"{VIEW} button.dubkit-class-disable")
            _wait_note(page, f"disabled {DUBBER}")
            page.wait_for_function(
                f"() => ({TABLE})()[{DUBBER!r}].disabled && document.querySelector("
                "'.dubkit-class-view button.dubkit-class-disable').innerText.includes('Enable')"
            )
            assert room.shown()[DUBBER]["disabled"] == "True"
            with dubkit.Client(room.keys()[DUBBER], room.sandbox_url) as student:
                with pytest.raises(dubkit.DubkitError) as refusal:
                    student.voices.presets(limit=1)
            assert "ask your teacher" in str(refusal.value), refusal.value
            page.click(f"{VIEW} button.dubkit-class-disable")  # now labelled Enable
            _wait_note(page, f"enabled {DUBBER}")
            page.wait_for_function(f"() => !({TABLE})()[{DUBBER!r}].disabled")
            assert room.shown()[DUBBER]["disabled"] == "False"
            with dubkit.Client(room.keys()[DUBBER], room.sandbox_url) as student:
                assert student.voices.presets(limit=1), "the key is not taken back"

            # Export CSV: the class in a data: URI.
            href = page.get_attribute(f"{VIEW} a.dubkit-class-csv", "href")
            assert href and href.startswith("data:text/csv;base64,"), href
            exported = base64.b64decode(href.split(",", 1)[1]).decode()
            assert exported.startswith("name,credits_left"), exported[:80]
            names = [line.split(",")[0] for line in exported.splitlines()[1:]]
            assert names == list(STUDENTS), exported
            assert not refused, f"the browser asked for other loopback ports: {refused[:5]}"
        finally:
            notebook.shutdown_kernel()

    servers = {u["name"]: u["servers"] for u in room.hub_api("GET", "/users").json()}
    assert all("" in servers[name] for name in (*STUDENTS, TEACHER)), servers


def _wait_results(page, name: str, results: int) -> None:
    """Wait until the part below the levers shows ``name``'s heading and ``results``
    results after it."""
    page.wait_for_function(
        """([name, results]) => {
        const output = document.querySelector('.dubkit-class-view .dubkit-class-results');
        const heading = output && output.querySelector('h4');
        return heading && heading.innerText.startsWith(name + "'s latest results")
            && output.querySelectorAll('.dubkit-class-result').length === results; }""",
        arg=[name, results],
    )


def _wait_note(page, text: str) -> None:
    page.wait_for_function(
        "(text) => { const n = document.querySelector('.dubkit-class-view .dubkit-class-note');"
        " return n && n.innerText.includes(text); }",
        arg=text,
    )


def _wait_row(page, name: str, column: str, value: str) -> None:
    """Wait until ``name``'s row shows ``value`` in ``column`` (the view redraws itself)."""
    page.wait_for_function(
        f"([name, column, value]) => {{ const t = ({TABLE})();"
        " return t[name] && t[name][column] === value; }",
        arg=[name, column, value],
    )
