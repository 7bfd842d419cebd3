"""The command line as a user types it: each command in a subprocess against the session's
sandbox, data on stdout, notes on stderr, exit codes, one-line errors, Ctrl-C during a dub."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import dubkit
from dubkit import samples
from dubkit.media import audio, av


def run(*args: str, module: str = "dubkit") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=60
    )


FR_VOICE_COUNT = 3


def run_cli(env: dict[str, str], *args: str, cwd: Path | None = None, timeout: float = 300):
    return subprocess.run(
        [sys.executable, "-m", "dubkit", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def env(sandbox, new_key) -> dict[str, str]:
    """A terminal's environment pointed at the sandbox as if it were the service."""
    return {**os.environ, "DUBKIT_API_KEY": new_key, "DUBKIT_BASE_URL": sandbox.url}


def french_voice(env: dict[str, str]) -> str:
    listed = run_cli(env, "voices", "--locale", "fr-FR", "--limit", "1", "--json")
    return str(json.loads(listed.stdout)[0]["voiceId"])


def assert_clean(done: subprocess.CompletedProcess[str], key: str) -> None:
    """No traceback and no API key in anything the command printed."""
    printed = done.stdout + done.stderr
    assert "Traceback" not in printed and key not in printed, printed


@pytest.mark.parametrize("module", ["dubkit", "dubkit.cli"])
def test_sandbox_on_a_busy_port_is_one_line_and_exit_1(module, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = run("sandbox", "--port", str(port), "--data-dir", str(tmp_path), module=module)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr + out.stdout
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert f"port {port} is already in use" in lines[0] and "--port" in lines[0]


def test_python_m_dubkit_help_and_version():
    assert run("--version").stdout.strip() == f"dubkit {dubkit.__version__}"
    bare = run()
    assert bare.returncode == 0 and "sandbox" in bare.stdout and "studio" in bare.stdout
    for args in (["--help"], ["sandbox", "--help"], ["studio", "--help"]):
        shown = run(*args)
        assert shown.returncode == 0, shown.stderr
        assert "``" not in shown.stdout and "usage: dubkit" in shown.stdout
    assert "port to listen on" in run("sandbox", "--help").stdout


def test_voices_as_a_table_and_as_json(env, new_key):
    table = run_cli(env, "voices", "--locale", "fr-FR", "--limit", str(FR_VOICE_COUNT))
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split()[:3] == ["voice_id", "display_name", "locale"]
    assert len(rows) == FR_VOICE_COUNT and all(" fr-FR " in row for row in rows)
    listed = run_cli(env, "voices", "--locale", "fr-FR", "--limit", "2", "--json")
    records = json.loads(listed.stdout)  # stdout is data only: the notes went to stderr
    assert [r["locale"] for r in records] == ["fr-FR", "fr-FR"]
    assert [r["voiceId"] for r in records] == [row.split()[0] for row in rows[:2]]
    assert_clean(table, new_key)
    assert_clean(listed, new_key)


def test_tts_one_text_to_a_file_and_a_file_of_lines_to_a_folder(env, new_key, tmp_path):
    voice = french_voice(env)
    one = run_cli(
        env, "tts", "Bonjour tout le monde.", "--voice", voice, "-o", "bonjour.wav", cwd=tmp_path
    )
    assert one.returncode == 0, one.stderr
    samples_, rate = audio.decode((tmp_path / "bonjour.wav").read_bytes())
    assert len(samples_) / rate > 0.5  # real speech, as a wav (the -o suffix chose it)

    script = tmp_path / "script.txt"
    script.write_text("Première ligne.\n\nDeuxième ligne.\nTroisième.\n", encoding="utf-8")
    many = run_cli(
        env,
        "tts",
        "--file",
        str(script),
        "--voice",
        voice,
        "--out-dir",
        "lines",
        "--json",
        cwd=tmp_path,
    )
    assert many.returncode == 0, many.stderr
    written = json.loads(many.stdout)
    assert [row["text"] for row in written] == ["Première ligne.", "Deuxième ligne.", "Troisième."]
    assert [Path(row["file"]).name for row in written] == ["000.m4a", "001.m4a", "002.m4a"]
    assert all(av.probe(tmp_path / row["file"]).duration > 0.3 for row in written)
    assert_clean(many, new_key)


def test_translate_a_text_and_a_file(env, tmp_path):
    one = run_cli(env, "translate", "Good morning", "--from", "en-US", "--to", "fr-FR")
    assert one.returncode == 0, one.stderr
    assert one.stdout.strip() and one.stdout.strip() != "Good morning"
    lines = tmp_path / "lines.txt"
    lines.write_text("One.\nTwo.\n", encoding="utf-8")
    many = run_cli(
        env, "translate", "--file", str(lines), "--from", "en-US", "--to", "de-DE", "--json"
    )
    rows = json.loads(many.stdout)
    assert [r["source"] for r in rows] == ["One.", "Two."]
    assert all(r["translation"] and r["error"] is None for r in rows)


def test_clone_a_recording_then_list_it(env, tmp_path):
    recording = samples.speech_recording(
        tmp_path / "me.wav",
        "The morning train was late again, so we walked along the river.",
        variant="m3",
        rate_wpm=120,
        pitch=20,
    )
    made = run_cli(env, "clone", str(recording), "--name", "Me", "--locale", "en-US", "--json")
    assert made.returncode == 0, made.stderr
    voice = json.loads(made.stdout)
    assert voice["voiceId"].startswith("cv_") and voice["name"] == "Me"
    assert voice["language"] == "en-US"
    listed = run_cli(env, "voices", "--clones")
    assert voice["voiceId"] in listed.stdout and "Me" in listed.stdout
    # --locale's old name still works, and says so
    again = run_cli(env, "clone", str(recording), "--name", "Me2", "--language", "en-GB", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["language"] == "en-GB"
    assert "--language is now --locale" in again.stderr


def test_dub_into_two_languages_downloads_media_and_subtitles(env, sandbox, new_key, tmp_path):
    clip = samples.narrated_clip(
        tmp_path / "talk.mp4", ["Hello and welcome.", "Today we talk about trains."], locale="en-US"
    )
    before = sandbox.credits(new_key)
    done = run_cli(
        env, "dub", str(clip), "--to", "fr-FR,de-DE", "--out", "dubs", "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    rows = {row["locale"]: row for row in json.loads(done.stdout)}
    assert sorted(rows) == ["de-DE", "fr-FR"]
    for target, row in rows.items():
        files = {Path(p).suffix: tmp_path / p for p in row["outputs"].split()}
        assert files[".mp4"] == tmp_path / "dubs" / target / "talk.mp4"
        assert av.probe(files[".mp4"]).has_video and av.probe(files[".mp4"]).duration > 1
        assert "-->" in files[".srt"].read_text(encoding="utf-8")
        assert files[".vtt"].read_text(encoding="utf-8").startswith("WEBVTT")
        assert f"talk → {target}: task {row['task_id']}" in done.stderr  # said as tasks start
        assert row["status"] == "dubbed" and row["charged"] == row["quote"] == 60
    assert before - sandbox.credits(new_key) == 120
    assert_clean(done, new_key)
    again = run_cli(env, "dub", str(clip), "--to", "fr-FR,de-DE", "--out", "dubs", cwd=tmp_path)
    assert again.returncode == 0 and "2 rows (0 to dub)" in again.stderr  # resumed: nothing sent
    assert before - sandbox.credits(new_key) == 120
    status = run_cli(env, "dub", "--status", "dubs", "--json", cwd=tmp_path)
    assert status.returncode == 0 and len(json.loads(status.stdout)) == 2


def test_dub_status_of_a_folder_without_a_batch_is_one_line_and_exit_2(env, tmp_path):
    done = run_cli(env, "dub", "--status", str(tmp_path))
    assert done.returncode == 2 and "no dubbing batch here" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_tasks_list_show_wait_and_delete(env, sandbox, new_key):
    with dubkit.Client(new_key, sandbox.url) as api:
        task = api.translate.create_async(["Hello"], source="en-US", target="fr-FR")
    listed = run_cli(env, "tasks")
    assert listed.returncode == 0 and task.task_id in listed.stdout
    waited = run_cli(env, "tasks", "wait", task.task_id, "--json")
    record = json.loads(waited.stdout)
    assert record["status"] == "finished" and record["taskId"] == task.task_id
    assert record["result"] is not None
    shown = run_cli(env, "tasks", "show", task.task_id)
    assert shown.returncode == 0 and "finished" in shown.stdout
    deleted = run_cli(env, "tasks", "delete", task.task_id)
    assert deleted.returncode == 0 and deleted.stdout.strip() == f"deleted {task.task_id}"
    gone = run_cli(env, "tasks", "show", task.task_id)
    assert gone.returncode == 1 and len(gone.stderr.strip().splitlines()) == 1
    assert_clean(gone, new_key)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["voices", "--bogus"], "unrecognized arguments: --bogus"),
        (["tts", "--voice", "x"], "give one text, or --file"),
        (["tts", "--file", "no-such.txt", "--voice", "x"], "--file: no such file: no-such.txt"),
        (["dub", "no-such.mp4", "--to", "fr-FR"], "files: no such file: 'no-such.mp4'"),
        (["dub", "a.mp4", "b.mp4"], "--to: at least one locale"),
        (["tts", "hi", "--voice", "x", "-o", "a.ogg"], "-o: a.ogg is not one of wav, mp3, m4a"),
        (["voices", "--clones", "--locale", "fr-FR"], "--locale and --gender filter presets"),
    ],
)
def test_bad_flags_and_missing_files_are_one_line_and_exit_2(env, new_key, args, says):
    done = run_cli(env, *args)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stdout == ""
    assert_clean(done, new_key)


def test_the_service_saying_no_is_one_line_and_exit_1_with_the_traceback_under_debug(env):
    refused = run_cli(env, "tts", "hi", "--voice", "nope", "-o", "a.m4a")
    assert refused.returncode == 1
    assert "no voice 'nope'" in refused.stderr and "Traceback" not in refused.stderr
    debugged = run_cli(env, "--debug", "tts", "hi", "--voice", "nope", "-o", "a.m4a")
    assert debugged.returncode == 1 and "Traceback" in debugged.stderr


# `dubkit ...` as a terminal starts it: Ctrl-C interrupts. A process started in the background
# of a shell without job control (as CI harnesses start their runs) inherits SIGINT ignored, and
# Python keeps it ignored, so the test gives the command the terminal's SIGINT back first.
AS_AT_A_TERMINAL = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'dubkit'; runpy.run_module('dubkit', run_name='__main__')"
)


def test_ctrl_c_while_waiting_leaves_the_dub_running_and_says_its_id(
    env, sandbox, new_key, tmp_path
):
    clip = samples.narrated_clip(tmp_path / "talk.mp4", ["Hello and welcome."], locale="en-US")
    sandbox.set_timing("polls", 10_000)  # running until polled 10,000 times: no clock involved
    try:
        dubbing = subprocess.Popen(
            [sys.executable, "-c", AS_AT_A_TERMINAL, "dub", str(clip), "--to", "fr-FR"],
            env=env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        said = ""
        while "task " not in said:  # the task exists once its id is said
            line = dubbing.stderr.readline()
            assert line, f"dub ended before starting a task: {said}"
            said += line
        dubbing.send_signal(signal.SIGINT)
        _, rest = dubbing.communicate()  # it ends on the signal; a hang meets pytest's timeout
        said += rest
        assert dubbing.returncode == 130, said
        task_id = said.split("task ", 1)[1].split()[0]
        assert f"the tasks keep running: {task_id}" in said
        assert "the same command picks them up" in said
        with dubkit.Client(new_key, sandbox.url) as api:
            assert api.tasks.get(task_id).status == "running"
    finally:
        sandbox.set_timing("immediate")


def test_without_a_key_it_says_on_stderr_that_it_uses_the_sandbox(sandbox):
    env = {k: v for k, v in os.environ.items() if k != "DUBKIT_API_KEY"}
    env["DUBKIT_BASE_URL"] = sandbox.url
    env["DUBKIT_SANDBOX_ADMIN_TOKEN"] = token = sandbox.server.admin_token  # a class's handout
    done = run_cli(env, "voices", "--locale", "it-IT", "--limit", "1", "--json")
    assert done.returncode == 0, done.stderr
    assert_clean(done, token)
    assert_clean(done, sandbox.api_key)
    assert "using the dubkit sandbox at http://127.0.0.1:" in done.stderr
    assert json.loads(done.stdout)[0]["locale"] == "it-IT"
