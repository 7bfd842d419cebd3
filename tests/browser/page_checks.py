"""What a person would check on a page: players that load and play, no error shown, pictures.

Players are written with ``preload='none'`` (nothing is fetched until someone presses play), so
the checks ask each one to load its metadata, as pressing play would, and then read what the
browser found: ``readyState``, ``duration``, ``error``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from _waiting import PATIENCE
from playwright.sync_api import Locator, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

# querySelectorAll that also looks inside open shadow roots (marimo draws widgets in them).
DEEP = """(root, sel) => {
    const found = [];
    const walk = (node) => {
        found.push(...node.querySelectorAll(sel));
        node.querySelectorAll('*').forEach(el => { if (el.shadowRoot) walk(el.shadowRoot); });
    };
    walk(root);
    return [...new Set(found)];
}"""

MEDIA_STATE = """(el) => ({
    tag: el.tagName.toLowerCase(), resolved: el.dataset.dubkitResolved || null,
    src: (el.currentSrc || (el.querySelector('source') || {}).src || '').slice(0, 120),
    readyState: el.readyState, duration: el.duration, error: el.error ? el.error.code : null,
    paused: el.paused, currentTime: el.currentTime, autoplay: el.autoplay, loop: el.loop,
    videoWidth: el.videoWidth || 0})"""


def load_media(page: Page, selector: str, *, timeout: float = PATIENCE) -> list[dict]:
    """Load the metadata of every ``<audio>``/``<video>`` matching ``selector``; their states."""
    count = page.evaluate(
        f"""(sel) => {{
        const all = ({DEEP})(document, sel);
        for (const el of all) if (el.readyState < 1 && (el.currentSrc || el.src)) {{
            el.preload = 'metadata'; el.load(); }}
        return all.length; }}""",
        selector,
    )
    if count:
        try:
            # A keyed player gets its source from the live channel: wait for that, then for
            # its metadata (or its error, or the channel saying it cannot play here).
            page.wait_for_function(
                f"""(sel) => ({DEEP})(document, sel).every(el => {{
                    if (el.readyState < 1 && el.preload !== 'metadata' && (el.currentSrc || el.src)) {{
                        el.preload = 'metadata'; el.load(); }}
                    return el.readyState >= 1 || el.error
                        || el.dataset.dubkitResolved === 'failed'; }})""",
                arg=selector,
                timeout=timeout * 1000,
            )
        except PlaywrightTimeout:
            pass  # the states returned say which ones never loaded
    return page.evaluate(f"(sel) => ({DEEP})(document, sel).map({MEDIA_STATE})", selector)


def media_problems(states: list[dict]) -> list[str]:
    """What is wrong with each player: did not load, no duration, autoplays, loops."""
    problems = []
    for state in states:
        what = f"{state['tag']} {state['src']!r}"
        if state["error"] is not None:
            problems.append(f"{what}: media error {state['error']}")
        elif state["readyState"] < 1:
            problems.append(f"{what}: metadata never loaded")
        elif not (
            isinstance(state["duration"], (int, float))
            and math.isfinite(state["duration"])
            and state["duration"] > 0
        ):
            problems.append(f"{what}: duration {state['duration']!r}")
        if state["autoplay"] or state["loop"]:
            problems.append(f"{what}: autoplay or loop is on")
        if state["tag"] == "video" and state["readyState"] >= 1 and not state["videoWidth"]:
            problems.append(f"{what}: no picture (videoWidth 0)")
    return problems


def press_play(player: Locator, *, timeout: float = PATIENCE) -> dict:
    """Click the player's own play button, as a person would; its state once time moves on.

    Chromium draws an ``<audio>``'s controls as one bar, play button at its left end; a
    ``<video>``'s button row sits above the timeline along the bottom edge.
    """
    player.scroll_into_view_if_needed()
    box = player.bounding_box()
    assert box, "the player is not visible"
    video = player.evaluate("el => el.tagName") == "VIDEO"
    player.click(
        position={"x": 24, "y": box["height"] - 48} if video else {"x": 16, "y": box["height"] / 2}
    )
    player.page.wait_for_function(
        "el => !el.paused && el.currentTime > 0.2 || el.error",
        arg=player.element_handle(),
        timeout=timeout * 1000,
    )
    state = player.evaluate(MEDIA_STATE)
    player.evaluate("el => el.pause()")
    return state


def shown_errors(page: Page, scope: str) -> list[str]:
    """Error texts a person would see in ``scope``: tracebacks and widgets that failed."""
    return page.eval_on_selector_all(
        scope,
        """els => els.flatMap(el => {
        const text = el.innerText || '';
        const found = [];
        for (const mark of ['Error displaying widget', 'Traceback (most recent call last)',
                            'Model not found', 'Failed to load model class'])
            if (text.includes(mark)) found.push(mark + ': ' + text.slice(text.indexOf(mark),
                                                                     text.indexOf(mark) + 200));
        return found; })""",
    )


def screenshot(page: Page, first: Path, *copies: Path) -> None:
    """The viewport as a person sees it, written to ``first`` (a test artifact).

    ``copies`` are the README's pictures under docs/: refreshed only when
    DUBKIT_UPDATE_SCREENSHOTS=1, so a test run leaves the checkout clean.
    """
    first.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(first))
    if os.environ.get("DUBKIT_UPDATE_SCREENSHOTS") != "1":
        return
    for path in copies:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(first.read_bytes())


LOOPBACK = r"^https?://(?:127\.0\.0\.1|localhost|\[::1\])"


def loopback_except(ports: set[int]) -> str:
    """A regex for URLs on a loopback host at a port not in ``ports`` (no port is port 80)."""
    allowed = "|".join(str(port) for port in sorted(ports))
    return LOOPBACK + rf"(?::(?!(?:{allowed})(?:[/?#]|$))\d+)?(?:[/?#]|$)"


def refuse(page, pattern: str, refused_url: Callable[[str], bool]) -> list[str]:
    """Abort the page's requests whose URL ``refused_url`` says; returns the URLs refused.

    Only URLs matching ``pattern`` are intercepted at all (the browser's side matches it): a
    route on every URL sends each of Lab's hundreds of requests through the driver, which
    made each Lab page take ~2.5 s longer to open.
    """
    refused: list[str] = []

    def route(routing) -> None:
        if refused_url(routing.request.url):
            refused.append(routing.request.url[:120])
            routing.abort()
        else:
            routing.continue_()

    page.route(re.compile(pattern), route)
    return refused


def block_other_loopback_ports(page, allowed_port: int) -> list[str]:
    """Make the page's browser a remote one: every request to a loopback port other than the
    Jupyter server's (the sandbox's, above all) is aborted, as it would never arrive from a
    browser on another machine. Returns the URLs refused, for the test to report."""

    def elsewhere(url: str) -> bool:
        parts = urlsplit(url)
        return parts.hostname in ("127.0.0.1", "localhost", "::1") and parts.port != allowed_port

    return refuse(page, loopback_except({allowed_port}), elsewhere)
