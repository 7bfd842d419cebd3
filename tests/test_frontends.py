"""Front ends: which one a kernel is in, how each player then reaches its browser, and the
listening copies a browser without AAC or Opus gets. (The browser suite plays them for real:
tests/browser/test_front_ends.py.)"""

from __future__ import annotations

import json
import sys
import types

import pytest
import requests

import dubkit
from dubkit import frontends
from dubkit.frontends import media, routes
from dubkit.frontends.pages import bundle
from dubkit.media.renditions import codecs_of, listenable

MARKS = (
    "DUBKIT_FRONTEND",
    "DUBKIT_MEDIA",
    "DUBKIT_JUPYTER_PROXY",
    "DUBKIT_JUPYTER_BASE_URL",
    "COLAB_RELEASE_TAG",
    "VSCODE_PID",
    "VSCODE_CWD",
    "SERVER_SOFTWARE",
    "VOILA_KERNEL_ID",
    "JPY_SESSION_NAME",
    "JPY_PARENT_PID",
    "JUPYTERHUB_SERVICE_PREFIX",
)


@pytest.fixture
def marks(monkeypatch, tmp_path):
    """A process with no front end's marks; set the ones a test needs."""
    for name in MARKS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    frontends.configure()
    yield monkeypatch
    monkeypatch.undo()
    frontends.configure()


def test_with_no_marks_players_use_the_sandboxs_own_address(marks):
    found = frontends.current()
    assert (found.name, found.media, found.aac) == ("plain", "direct", True)


@pytest.mark.parametrize(
    ("env", "name", "path", "aac"),
    [
        ({"COLAB_RELEASE_TAG": "release-colab_20261120"}, "colab", "colab", True),
        ({"VSCODE_PID": "4242"}, "vscode", "comm", False),
        ({"JPY_SESSION_NAME": "/home/ada/nb.ipynb"}, "jupyter", "proxy", True),
        ({"JUPYTERHUB_SERVICE_PREFIX": "/user/ada/"}, "jupyter", "proxy", True),
        ({"SERVER_SOFTWARE": "voila/0.5.13"}, "voila", "comm", True),
    ],
)
def test_each_front_end_is_known_by_its_marks(marks, env, name, path, aac):
    for key, value in env.items():
        marks.setenv(key, value)
    found = frontends.current()
    assert (found.name, found.media, found.aac) == (name, path, aac)


def test_colab_is_known_by_its_module_and_vscode_by_its_notebook_variable(marks):
    marks.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    assert frontends.current().name == "colab"
    marks.delitem(sys.modules, "google.colab")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    marks.setitem(shell.user_ns, "__vsc_ipynb_file__", "/home/ada/nb.ipynb")
    assert frontends.current().name == "vscode"


def test_the_proxy_sits_below_the_servers_own_base_url(marks, tmp_path):
    """A kernel finds its server's base URL in the server's runtime file (by its parent pid),
    so Lab served below ``/jl/`` gets ``/jl/proxy/...``; a hub's prefix otherwise."""
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "jpserver-97531.json").write_text(json.dumps({"base_url": "/jl/", "pid": 97531}))
    marks.setenv("JPY_SESSION_NAME", "nb.ipynb")
    marks.setenv("JPY_PARENT_PID", "97531")
    assert frontends.current().base_url == "/jl/"
    marks.setenv("JPY_PARENT_PID", "97532")  # no such server: the hub's prefix, else the root
    marks.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/ada/")
    assert frontends.current().base_url == "/user/ada/"


def test_voila_inside_a_server_uses_its_proxy_and_standalone_voila_the_comm(marks, tmp_path):
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "jpserver-86420.json").write_text(json.dumps({"base_url": "/app/"}))
    marks.setenv("SERVER_SOFTWARE", "voila/0.5.13")
    assert frontends.current().media == "comm"  # standalone: no /proxy/ to go through
    marks.setenv("JPY_PARENT_PID", "86420")
    found = frontends.current()
    assert (found.media, found.base_url) == ("proxy", "/app/")


def test_a_user_forces_the_front_end_or_the_path_and_the_repr_says_so(marks, client):
    marks.setenv("DUBKIT_FRONTEND", "vscode")
    assert "VS Code, over the widget channel, AAC and Opus as MP3 (set by DUBKIT_FRONTEND)" in (
        repr(client)
    )
    dubkit.configure(frontend="Colab")
    assert frontends.current().name == "colab" and "set by configure" in repr(client)
    dubkit.configure(media="comm")
    found = frontends.current()
    assert (found.name, found.media) == ("vscode", "comm")  # the env's front end, forced path


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: dubkit.configure(frontend="jupyterlab"), "frontend='jupyterlab'"),
        (lambda: dubkit.configure(media="cdn"), "media='cdn'"),
    ],
)
def test_an_unknown_front_end_or_path_is_refused_naming_it(marks, call, words):
    with pytest.raises(ValueError, match=words) as refused:
        call()
    assert "use one of" in str(refused.value)


def test_a_misspelt_environment_setting_is_refused_naming_the_variable(marks):
    marks.setenv("DUBKIT_FRONTEND", "vs-code")
    with pytest.raises(ValueError, match="DUBKIT_FRONTEND: frontend='vs-code'"):
        frontends.current()


# --------------------------------------------------------------------- what a view writes


def test_held_bytes_are_embedded_and_the_sandboxs_files_only_keyed(marks):
    held = media.element_source("http://127.0.0.1:8765/files/tts/a.m4a", "audio/mp4", data=b"x")
    assert held.src == "data:audio/mp4;base64,eA==" and not held.live
    service = media.element_source("https://cdn.example/a.m4a?sig=1", "audio/mp4")
    assert service.src == "https://cdn.example/a.m4a?sig=1"
    local = media.element_source("http://127.0.0.1:8765/files/dub/v.mp4", "video/mp4", kind="video")
    assert local.live and "127.0.0.1" not in local.attributes()
    assert media.lookup(local.media.key).url == "http://127.0.0.1:8765/files/dub/v.mp4"
    big = media.element_source(None, "video/mp4", data=b"x" * (media.EMBED_LIMIT + 1))
    assert big.live  # too big to embed: only the channel sends it


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"JPY_SESSION_NAME": "nb", "JUPYTERHUB_SERVICE_PREFIX": "/user/ada/"},
            {"how": "src", "src": "/user/ada/proxy/8765/files/dub/v.mp4?t=1"},
        ),
        (
            {"COLAB_RELEASE_TAG": "x"},
            {"how": "colab", "port": 8765, "path": "/files/dub/v.mp4?t=1"},
        ),
        ({"VSCODE_PID": "1"}, {"how": "comm", "rendition": True}),
        ({}, {"how": "src", "src": "http://127.0.0.1:8765/files/dub/v.mp4?t=1"}),
    ],
)
def test_each_path_routes_a_sandbox_file_its_own_way(marks, env, expected):
    for key, value in env.items():
        marks.setenv(key, value)
    found = media.element_source(
        "http://127.0.0.1:8765/files/dub/v.mp4?t=1", "video/mp4", kind="video"
    )
    entry = routes.route(found.media, frontends.current())
    assert {k: entry[k] for k in expected} == expected


def test_a_page_needs_the_channel_only_where_it_cannot_play_as_it_is(marks):
    embedded = media.element_source(None, "audio/mp4", data=b"aac bytes")
    page = f"<audio {embedded.attributes()}></audio>"
    data, _ = bundle(page, text="x")
    assert set(data) == {"text/plain", "text/html"}  # plays anywhere as it is
    marks.setenv("VSCODE_PID", "1")  # no AAC in VS Code's webview: the channel sends MP3
    data, _ = bundle(page, text="x")
    assert data["text/html"] == page and "application/vnd.jupyter.widget-view+json" in data


# --------------------------------------------------------------------- listening copies


def test_aac_speech_gets_an_mp3_copy_made_once_and_mp3_stays_as_it_is(client, tmp_path, marks):
    marks.setenv("DUBKIT_RENDITION_DIR", str(tmp_path / "renditions"))
    line = client.tts.speak("A line for a browser with no AAC.", "sv_s1_en_us_clear_f")
    original = line.data
    copy = listenable(original, "audio/mp4")
    assert copy.made and copy.mime == "audio/mpeg"
    assert codecs_of(copy.data).audio_codec == "mp3" and line.data == original
    kept = list((tmp_path / "renditions").iterdir())
    assert len(kept) == 1
    before = kept[0].stat().st_mtime_ns
    assert listenable(original, "audio/mp4").data == copy.data  # from the cache
    assert kept[0].stat().st_mtime_ns == before
    assert listenable(copy.data, "audio/mpeg").data is copy.data  # nothing to do


def test_a_dubbed_video_keeps_its_picture_and_gets_mp3_sound(tmp_path, marks):
    from dubkit.media import av

    marks.setenv("DUBKIT_RENDITION_DIR", str(tmp_path / "renditions"))
    from dubkit import samples

    clip = samples.narrated_clip(tmp_path / "clip.mp4", ["A first line.", "And a second."])
    data = clip.read_bytes()
    assert codecs_of(data).audio_codec == "aac"
    copy = listenable(data, "video/mp4")
    info = codecs_of(copy.data)
    assert (info.video_codec, info.audio_codec, copy.mime) == ("h264", "mp3", "video/mp4")
    assert info.duration == pytest.approx(av.probe(clip).duration, abs=0.1)


# --------------------------------------------------------------------- the channel itself


class Recorded:
    """What a channel widget sent (its comm is the kernel's edge; nothing of dubkit's is
    replaced)."""

    def __init__(self) -> None:
        self.sent: list[tuple[dict, list]] = []


def _channel(page: str) -> tuple[object, Recorded]:
    from dubkit.frontends.channel import LiveHTML

    widget = LiveHTML(page)
    seen = Recorded()
    widget.send = lambda content, buffers=None: seen.sent.append((content, buffers or []))
    return widget, seen


def test_the_channel_sends_a_file_in_chunks_that_add_up_to_it(marks, sandbox):
    from dubkit.frontends.channel import CHUNK

    url = f"{sandbox.url}/_sandbox/openapi.json"  # any file on the sandbox's loopback
    whole = requests.get(url, timeout=30).content
    source = media.element_source(url, "application/json", kind="file")
    widget, seen = _channel(f"<a {source.attributes('href')}>x</a>")
    assert widget.media[source.media.key]["how"] == "src"
    count = -(-len(whole) // CHUNK)
    for index in range(count):
        widget.answer({"type": "chunk", "key": source.media.key, "index": index})
    assert [c["index"] for c, _ in seen.sent] == list(range(count))
    assert {c["count"] for c, _ in seen.sent} == {count}
    assert b"".join(bytes(b[0]) for _, b in seen.sent) == whole


def test_the_channel_answers_an_unknown_key_with_an_error_not_a_file(marks):
    widget, seen = _channel("<p>nothing</p>")
    widget.answer({"type": "chunk", "key": "0" * 20, "index": 0})
    [(content, buffers)] = seen.sent
    assert "no longer known" in content["error"] and not buffers
