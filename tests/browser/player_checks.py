"""A person's checks of a page's players: each loads, plays, seeks, holds sound or a picture
(probed with ffmpeg), and under VS Code never AAC or Opus; a task cell finishes by itself."""

from __future__ import annotations

import time

from _waiting import PATIENCE
from front_ends import played_bytes
from page_checks import DEEP, load_media, media_problems

from dubkit.media.renditions import codecs_of


def check_players(page, selector: str, refused: list[str], *, vscode: bool) -> list[dict]:
    states = load_media(page, selector)
    assert states, "no player shown"
    assert not media_problems(states), (media_problems(states), refused[:5])
    play_each(page, selector, len(states))
    probed = [(src, codecs_of(data)) for src, data in played_bytes(page, selector)]
    silent = [src for src, info in probed if not (info.has_audio or info.has_video)]
    assert not silent, f"players whose bytes hold no sound or picture: {silent}"
    if vscode:
        undecodable = [
            (src, info.audio_codec, states[i]["resolved"])
            for i, (src, info) in enumerate(probed)
            if (info.audio_codec or "").lower() in ("aac", "opus")
        ]
        assert not undecodable, f"VS Code's webview cannot decode these: {undecodable}"
    videos = [i for i, s in enumerate(states) if s["tag"] == "video"]
    if videos:
        check_seeks(page, selector, videos[-1])
    return states


PLAY = f"""async ([sel, index]) => {{
    const el = ({DEEP})(document, sel)[index];
    el.muted = true;
    await el.play();
    const start = performance.now();
    while (el.currentTime < 0.2 && !el.error && performance.now() - start < 120000)
        await new Promise(r => setTimeout(r, 50));
    el.pause();
    return {{time: el.currentTime, error: el.error ? el.error.code : null}};
}}"""

SEEK = f"""async ([sel, index]) => {{
    const el = ({DEEP})(document, sel)[index];
    const target = el.duration * 0.8;
    const seeked = new Promise(r => el.addEventListener('seeked', r, {{once: true}}));
    el.currentTime = target;
    await seeked;
    return {{target, at: el.currentTime}};
}}"""


def play_each(page, selector: str, count: int) -> None:
    """Each player plays (muted, as a test may not make sound): its time moves on."""
    for index in range(count):
        state = page.evaluate(PLAY, [selector, index])
        assert state["error"] is None and state["time"] >= 0.2, f"player {index}: {state}"


def check_seeks(page, selector: str, index: int) -> None:
    """Seeking in a long dub: the player jumps to 80 % and says it is there."""
    state = page.evaluate(SEEK, [selector, index])
    assert abs(state["at"] - state["target"]) < 0.5, state


def check_task_cell_finished(page, selector: str) -> None:
    """The task cell reaches "finished" by itself (the notebook's own cells never re-run)."""
    deadline = time.monotonic() + PATIENCE
    statuses: list[str] = []
    while time.monotonic() < deadline:
        statuses = page.evaluate(
            f"""(sel) => ({DEEP})(document, sel).flatMap(t =>
                [...t.querySelectorAll('tbody tr td[data-status]')].map(td => td.dataset.status))""",
            selector,
        )
        if statuses and set(statuses) <= {"finished"}:
            return
        time.sleep(0.25)
    raise AssertionError(f"task cell statuses stayed {statuses}")
