"""A class on one sandbox (dubkit.classroom): the roster, the class file, `dubkit class` as a
teacher types it, the JupyterHub hook, and the teacher's view widget. Real HTTP to the
session's sandbox; the real hub is tests/browser/test_hub.py."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from _actions import use
from _waiting import wait_for

import dubkit
from dubkit.classroom import Classroom, ClassView, read_roster
from dubkit.classroom.hub import class_environment
from dubkit.errors import AuthenticationError, InsufficientCreditsError, ValidationError


@pytest.fixture
def token(sandbox) -> str:
    return str(sandbox.server.admin_token)


@pytest.fixture
def make_class(sandbox, token, tmp_path):
    """A class of ``n`` made with the Python API on the session's sandbox."""

    def make(n: int, *, credits: str = "", name: str = "class.json") -> Classroom:
        return Classroom.create(
            roster(tmp_path, n, credits=credits),
            tmp_path / name,
            base_url=sandbox.url,
            admin_token=token,
        )

    return make


def roster(tmp_path: Path, n: int, *, credits: str = "") -> Path:
    path = tmp_path / "roster.csv"
    rows = ["name,email,credits"] + [
        f"s{i:02d},s{i:02d}@school.example,{credits}" for i in range(n)
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def teacher(env_token: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dubkit", "class", *args],
        env={**os.environ, "DUBKIT_SANDBOX_ADMIN_TOKEN": env_token},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


# -- the roster


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("email\nada@x\n", "line 1: the first line must name the columns, with 'name'"),
        ("name,age\nada,9\n", "line 1: unknown column 'age'"),
        ("name\nada\nAda\n", "line 3, name: 'ada' is listed twice"),
        ("name\n\n\nada lovelace\n", "line 4, name: 'ada lovelace' is not a user name"),
        ("name,email\nSmith, Jo,jo@x\n", "line 2: more values than the 2 columns"),
        ("name\nada lovelace\n", "line 2, name: 'ada lovelace' is not a user name"),
        ("name,credits\nada,lots\n", "line 2, credits: 'lots' is not a number of credits"),
        ("name,credits\nada,-5\n", "line 2, credits: '-5' must be a number of credits, 0 or more"),
        ("name\n\n", "no students listed"),
    ],
)
def test_a_bad_roster_names_its_line_and_column_before_anything_is_made(tmp_path, text, said):
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValidationError, match=said):
        read_roster(path)


def test_a_roster_reads_optional_columns_and_skips_blank_lines(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("\ufeffName,Email,Credits\nada,ada@x.org,250\n\nbob,,\n", encoding="utf-8")
    ada, bob = read_roster(path)
    assert (ada.name, ada.email, ada.credits) == ("ada", "ada@x.org", 250.0)
    assert (bob.name, bob.email, bob.credits) == ("bob", None, None)


# -- the class file and its levers


def test_a_class_of_30_round_trips_through_the_cli(sandbox, token, tmp_path):
    """create, show, topup, limits, disable, enable, reset, add, remove: as a teacher types."""
    done = teacher(
        token,
        "create",
        str(roster(tmp_path, 30)),
        "--url",
        sandbox.url,
        "--credits",
        "200",
        "--max-tasks",
        "2",
        "--max-storage",
        "5MB",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "class.json: 30 students" in done.stdout
    class_file = tmp_path / "class.json"
    assert stat.S_IMODE(class_file.stat().st_mode) == 0o600
    room = Classroom.open(class_file)
    keys = {name: s.api_key for name, s in room.students.items()}
    assert len(set(keys.values())) == 30 and all(k.startswith("sk_") for k in keys.values())

    # Each key works as its student's own account, with the class's quotas.
    listed = {k["apiKey"][-4:]: k for k in sandbox.admin("GET", "/keys")}
    for key in keys.values():
        info = listed[key[-4:]]
        assert (info["credits"], info["maxTasks"], info["maxStorage"]) == (200, 2, 5_000_000)
        assert info["student"] is True

    steps = [
        (("topup", "s03", "50"), "s03: 250 credits, enabled"),
        (
            ("limits", "s04", "--tasks", "5", "--storage", "1GiB"),
            "tasks at once: 5, storage: 1073741824",
        ),
        (("disable", "s05"), "s05: 200 credits, disabled"),
        (("enable", "s05"), "s05: 200 credits, enabled"),
        (("reset", "s03"), "s03: 200 credits, enabled"),
        (("add", "late", "--credits", "10"), "added late"),
        (("remove", "s29"), "removed s29"),
    ]
    for args, said in steps:
        done = teacher(token, *args, cwd=tmp_path)
        assert done.returncode == 0 and said in done.stdout, (args, done.stdout, done.stderr)
    with pytest.raises(AuthenticationError):
        dubkit.Client(keys["s29"], sandbox.url).voices.presets()

    shown = teacher(token, "show", "--csv", cwd=tmp_path)
    rows = list(csv.DictReader(io.StringIO(shown.stdout)))
    assert [r["name"] for r in rows] == [f"s{i:02d}" for i in range(29)] + ["late"]
    assert {r["name"]: float(r["credits_left"]) for r in rows}["late"] == 10
    everything = teacher(token, "show", cwd=tmp_path).stdout + shown.stdout
    assert not any(key in everything for key in keys.values())  # no command prints a key


def test_the_cli_says_what_is_wrong_in_one_line(sandbox, token, tmp_path):
    made = teacher(token, "create", str(roster(tmp_path, 2)), "--url", sandbox.url, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    again = teacher(token, "create", str(roster(tmp_path, 2)), "--url", sandbox.url, cwd=tmp_path)
    assert again.returncode == 1
    assert "class.json exists: it holds a class's keys (--force" in again.stderr
    unknown = teacher(token, "topup", "zed", "5", cwd=tmp_path)
    assert unknown.returncode == 1 and "'zed' is not in this class" in unknown.stderr
    (tmp_path / "elsewhere").mkdir()
    elsewhere = teacher(token, "show", cwd=tmp_path / "elsewhere")
    assert elsewhere.returncode == 2 and "no class file" in elsewhere.stderr
    wrong_token = teacher("not-the-token", "topup", "s00", "5", cwd=tmp_path)
    assert wrong_token.returncode == 1 and "Traceback" not in wrong_token.stderr
    for done in (again, unknown, elsewhere, wrong_token):
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_class_on_the_service_takes_keys_from_the_roster(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("name,api_key\nada,sk_live_aaaaaaaaaaaaaaaa\nbob,\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="missing for bob"):
        Classroom.create(path, tmp_path / "c.json", service=True, base_url="https://api.x")
    path.write_text("name,api_key\nada,sk_live_aaaaaaaaaaaaaaaa\n", encoding="utf-8")
    room = Classroom.create(path, tmp_path / "c.json", service=True, base_url="https://api.x")
    assert room.environment("ada") == {
        "DUBKIT_API_KEY": "sk_live_aaaaaaaaaaaaaaaa",
        "DUBKIT_BASE_URL": "https://api.x",
    }
    assert "sk_live" not in repr(room) and "sk_live" not in repr(room.students["ada"])
    with pytest.raises(ValidationError, match="managed on the service's account page"):
        room.topup("ada", 5)


# -- the JupyterHub hook


def _spawn(hook, user: str) -> dict[str, str]:
    """What the hub does: a spawner with the user's name and its configured environment."""
    spawner = SimpleNamespace(user=SimpleNamespace(name=user), environment={"LANG": "C.UTF-8"})
    hook(spawner)
    return spawner.environment


def test_the_hub_hook_gives_students_their_key_and_the_teacher_the_class(sandbox, token, tmp_path):
    room = Classroom.create(
        roster(tmp_path, 2), tmp_path / "class.json", base_url=sandbox.url, admin_token=token
    )
    hook = class_environment(tmp_path / "class.json", teachers={"prof"}, admin_token=token)
    student = _spawn(hook, "s01")
    assert student == {
        "LANG": "C.UTF-8",
        "DUBKIT_API_KEY": room.students["s01"].api_key,
        "DUBKIT_BASE_URL": sandbox.url,
    }
    assert _spawn(hook, "prof") == {
        "LANG": "C.UTF-8",
        "DUBKIT_CLASS_FILE": str((tmp_path / "class.json").resolve()),
        "DUBKIT_SANDBOX_ADMIN_TOKEN": token,
    }
    assert _spawn(hook, "stranger") == {"LANG": "C.UTF-8"}  # runs on their own sandbox
    room.add("late")  # read at each spawn: a student added later gets a key
    assert "DUBKIT_API_KEY" in _spawn(hook, "late")


# -- the teacher's view


def test_the_teacher_view_shows_the_class_and_its_levers_work(sandbox, make_class):
    room = make_class(3, credits="100")
    ada = room.client("s00")
    voice = ada.voices.presets()[0]
    speech = ada.tts.create(["Hello from s00"], voice=voice)
    view = ClassView(room, refresh=0)
    try:
        assert [s.name for s in view.table] == ["s00", "s01", "s02"]
        for name in ("s00", "s01", "s02"):
            assert f"data-student='{name}'" in view.value
        assert (
            "tts <span role='img' title='1 finished' aria-label='1 finished'>1✓</span>"
            in view.value
        )
        assert not any(s.api_key in view.value for s in room.students.values())
        assert "dubkit-class-csv" in view.value and "download='class.csv'" in view.value

        # s00's latest speech is shown with its player, from the report (not with her key).
        seen_before = view.student().last_seen  # type: ignore[union-attr]
        assert "<audio" in view.results_html
        # the speech's row says what was said and by whom (the report keeps the request)
        assert "Hello from s00" in view.results_html and voice.voice_id in view.results_html
        assert speech.task_id in {t.task_id for t in view.student().latest}  # type: ignore[union-attr]
        view.update()
        assert view.student().last_seen == seen_before  # type: ignore[union-attr]

        use(view, "topup", student="s00", amount="40")  # the levers as the page sends them
        assert "topped up s00: " in view.note and "role='status'" in view.value
        assert view.student().credits == pytest.approx(140 - speech_cost(view))  # type: ignore[union-attr]
        use(view, "disable", student="s00", amount="40")
        assert view.student().disabled and ">Enable</button>" in view.value  # type: ignore[union-attr]
        with pytest.raises(AuthenticationError):
            dubkit.Client(room.students["s00"].api_key, sandbox.url).voices.presets()
        use(view, "disable", student="s00", amount="40")
        assert not view.student().disabled  # type: ignore[union-attr]
        use(view, "reset", student="s00", amount="40")
        student = view.student()
        assert student is not None and student.tasks == {} and student.credits == 100
        assert "No speech or dubs yet." in view.results_html
        assert "<audio" not in view.results_html  # the old players went
    finally:
        view.close()


def speech_cost(view: ClassView) -> float:
    student = view.student()
    assert student is not None
    return student.spent


def test_a_students_quota_refusal_names_the_teachers_command(make_class):
    room = make_class(1, credits="0")
    with pytest.raises(
        InsufficientCreditsError,
        match=r"ask your teacher to raise it \(dubkit class topup s00 CREDITS\)",
    ):
        room.client("s00").translate.create(["Hello"], source="en-US", target="fr-FR")


def test_the_class_file_is_owner_only_and_written_whole(make_class, tmp_path):
    room = make_class(2, name="c.json")
    room.add("third")
    assert stat.S_IMODE((tmp_path / "c.json").stat().st_mode) == 0o600
    # No half-written copies left; the lock file is owner-only and empty.
    assert sorted(p.name for p in tmp_path.iterdir()) == [".c.json.lock", "c.json", "roster.csv"]
    assert stat.S_IMODE((tmp_path / ".c.json.lock").stat().st_mode) == 0o600
    data = json.loads((tmp_path / "c.json").read_text())
    assert [s["name"] for s in data["students"]] == ["s00", "s01", "third"]


def test_the_app_notebook_is_the_view_the_command_serves():
    """`dubkit class view` serves notebooks/apps/class_view.ipynb: the same two cells."""
    import nbformat

    from dubkit._util import voila_app
    from dubkit.cli.classes import APP_INTRO, APP_SOURCE

    notebook = nbformat.read(voila_app.app_notebook("class_view", APP_INTRO, APP_SOURCE), 4)
    assert [c.source for c in notebook.cells] == [APP_INTRO, APP_SOURCE]


def test_the_served_view_lets_in_only_a_browser_with_its_token(
    sandbox, token, make_class, tmp_path
):
    """On a hub every user reaches loopback ports: the view with the levers needs a token."""
    import re
    import socket

    import requests

    make_class(2)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    served = subprocess.Popen(
        [sys.executable, "-m", "dubkit", "class", "view", "--no-browser", "--port", str(port)],
        env={**os.environ, "DUBKIT_SANDBOX_ADMIN_TOKEN": token},
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert served.stderr is not None
        said = served.stderr.readline()
        found = re.match(r"open (http://127\.0\.0\.1:\d+/)\?token=(\S+)", said)
        assert found, said
        address, secret = found.groups()
        wait_for(lambda: _answers(address))
        assert requests.get(address, timeout=60, allow_redirects=False).status_code in (302, 403)
        with_token = requests.get(address, params={"token": secret}, timeout=300)
        assert with_token.status_code == 200 and "Every student of the class sandbox" in (
            with_token.text
        )
    finally:
        served.terminate()
        served.wait(60)


def _answers(address: str) -> bool:
    import requests

    try:
        requests.get(address, timeout=5, allow_redirects=False)
        return True
    except requests.ConnectionError:
        return False


def test_commands_at_once_all_count(sandbox, token, make_class, tmp_path):
    """Six `dubkit class add` at once: each reads and writes the file under its lock."""
    make_class(1)
    adds = [
        subprocess.Popen(
            [sys.executable, "-m", "dubkit", "class", "add", f"p{i}"],
            env={**os.environ, "DUBKIT_SANDBOX_ADMIN_TOKEN": token},
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(6)
    ]
    assert all(a.wait(300) == 0 for a in adds), [a.stderr.read() for a in adds if a.stderr]
    room = Classroom.open(tmp_path / "class.json", admin_token=token)
    assert sorted(room.students) == ["p0", "p1", "p2", "p3", "p4", "p5", "s00"]
    assert {s.name for s in room.report()} == set(room.students)


def test_a_sandbox_class_makes_its_own_keys_and_hides_them(sandbox, token, make_class, tmp_path):
    path = tmp_path / "keys.csv"
    path.write_text("name,api_key\nkay,sk_myownkey_aaaaaaaaaaaaaaaa\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="the api_key column is for a class on the service"):
        Classroom.create(path, tmp_path / "k.json", base_url=sandbox.url, admin_token=token)
    room = make_class(1)
    key = room.students["s00"].api_key
    assert key and key not in repr(room.environment("s00"))
    assert room.environment("s00")["DUBKIT_API_KEY"] == key  # the value itself is whole


def test_the_hub_hook_matches_the_hubs_lowercase_names_and_survives_a_broken_file(
    sandbox, token, tmp_path
):
    path = tmp_path / "r.csv"
    path.write_text("name\nAda\n", encoding="utf-8")
    room = Classroom.create(path, tmp_path / "class.json", base_url=sandbox.url, admin_token=token)
    assert list(room.students) == ["ada"]  # JupyterHub lowercases user names: so does a roster
    hook = class_environment(tmp_path / "class.json", teachers={"Prof"})
    assert "DUBKIT_API_KEY" in _spawn(hook, "ada")
    assert "DUBKIT_CLASS_FILE" in _spawn(hook, "prof")
    with pytest.raises(ValidationError, match="already in this class"):
        room.add("ADA")
    (tmp_path / "class.json").write_text("{not json", encoding="utf-8")
    assert _spawn(hook, "ada") == {"LANG": "C.UTF-8"}  # logged; the spawn goes on


def test_the_view_follows_students_added_and_removed_meanwhile(sandbox, make_class):
    room = make_class(2)
    view = ClassView(room, refresh=0)
    try:
        other = Classroom.open(room.path, admin_token=room._admin_token)
        other.add("late")
        other.remove("s01")
        view.update()
        assert "<option value='late'>" in view.value and "value='s01'" not in view.value
        assert [s.name for s in view.table] == ["s00", "late"]
    finally:
        view.close()


def test_a_status_mark_is_named_in_a_way_assistive_technology_reads():
    """A name on a bare ``<span>`` is ignored by screen readers (axe: aria-prohibited-attr,
    found on 99838da): each mark of the teacher's table is an image with its words."""
    from dubkit.views.classroom import class_table_html

    student = SimpleNamespace(
        name="s00", api_key="sk_…abcd", credits=90.0, spent=10.0, disabled=False,
        max_tasks=None, max_storage=None, stored=0, last_seen=None, errors=[], latest=[],
        tasks={"tts": {"finished": 2, "failed": 1}},
    )  # fmt: skip
    table = class_table_html([student])
    named = re.findall(r"<span([^>]*)aria-label='([^']+)'", table)
    assert [said for _, said in named] == ["2 finished", "1 failed"]
    assert all("role='img'" in attributes for attributes, _ in named)
