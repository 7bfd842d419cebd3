"""The accessibility referee: Deque's axe-core (from npm, pinned by .ci/run) run over dubkit's
own markup on a page, and the keyboard and screen-reader checks a person would make.

axe checks WCAG 2.0, 2.1 and 2.2 A and AA rules (the tags below); it looks only at dubkit's
outputs (the outermost elements whose class starts ``dubkit-``), since the page around them is
JupyterLab's, Voila's or marimo's own. Every violation fails: a rule's id, its impact, what it
asks, and where. axe's "needs review" results (incomplete) are read too: the rules it files
there that are defects whenever they fire on dubkit's own markup (:data:`REVIEW_FAILS`: two
elements with one id, a field with two labels, a name where ARIA forbids one) fail as
violations do; the rest are printed for a person to read.
"""

from __future__ import annotations

import os

import pytest
from jupyter_servers import REPO
from page_checks import DEEP

AXE = REPO / ".ci" / "node" / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
# "needs review" rules that are defects in our own markup whenever axe files them
REVIEW_FAILS = ("duplicate-id", "form-field-multiple-labels", "aria-prohibited-attr")

# dubkit's outermost elements on the page (also inside marimo's shadow roots)
OURS = f"""() => ({DEEP})(document, '[class*="dubkit-"]').filter(el =>
    !(el.parentElement && el.parentElement.closest('[class*="dubkit-"]')))"""

RUN = f"""async (tags) => {{
    const options = {{runOnly: {{type: 'tag', values: tags}},
                     resultTypes: ['violations', 'incomplete']}};
    const found = [], review = [];
    let checked = 0;
    const keep = (r) => {{ found.push(...r.violations); review.push(...r.incomplete); }};
    // axe is given a selector for what is in the page, and each element inside a shadow
    // root (marimo's widgets) on its own. A live view may draw itself anew while axe runs (a
    // batch table writing its settled picture into the saved output): an element it replaced
    // is detached (its root is then neither the document nor a shadow root), so what is there
    // is looked up again and audited again.
    for (let attempt = 0; ; attempt++) {{
        const now = ({OURS})().filter(el => el.isConnected);
        const here = now.filter(el => el.getRootNode() === document);
        here.forEach(el => el.setAttribute('data-dubkit-axe', ''));
        const start = [found.length, review.length];
        try {{
            if (here.length) keep(await axe.run({{include: [['[data-dubkit-axe]']]}}, options));
            for (const el of now.filter(el => el.getRootNode() instanceof ShadowRoot))
                keep(await axe.run(el, options));
            checked = now.length;
            break;
        }} catch (error) {{
            if (attempt >= 4 || !String(error).includes('No elements found')) throw error;
            found.length = start[0]; review.length = start[1];  // this attempt's, dropped
        }}
    }}
    const shown = (v) => ({{
        id: v.id, impact: v.impact, help: v.help,
        where: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + n.html.slice(0, 160))
    }});
    return {{checked, violations: found.map(shown), review: review.map(shown)}};
}}"""


def axe_violations(page) -> tuple[int, list[str]]:
    """(how many dubkit outputs were checked, each violation in a line)."""
    if not AXE.exists():
        message = f"axe-core is not installed at {AXE}: .ci/run installs it from npm"
        if os.environ.get("DUBKIT_REQUIRE_BROWSER") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate(RUN, TAGS)

    def said(v: dict) -> str:
        return f"{v['id']} ({v['impact']}): {v['help']} at {' | '.join(v['where'])}"

    failing = [v for v in found["review"] if v["id"].startswith(REVIEW_FAILS)]
    for v in found["review"]:
        if v not in failing:
            print(f"axe asks a person to review: {said(v)}")
    return found["checked"], [said(v) for v in found["violations"]] + [
        f"(needs review, a defect here) {said(v)}" for v in failing
    ]


def assert_no_violations(page, where: str) -> int:
    """axe finds nothing in dubkit's markup on ``page``; how many outputs it checked."""
    checked, violations = axe_violations(page)
    assert not violations, f"{where}: axe found {len(violations)}:\n" + "\n".join(violations)
    return checked


def set_lab_theme(page, dark: bool) -> None:
    """JupyterLab's light or dark theme, as the Settings menu sets it."""
    theme = "JupyterLab Dark" if dark else "JupyterLab Light"
    page.evaluate(
        "(theme) => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme
    )
    page.wait_for_function(
        "(dark) => document.body.dataset.jpThemeLight === (dark ? 'false' : 'true')", arg=dark
    )


def tab_to(page, test: str, *, limit: int = 400, back: bool = False) -> str:
    """Press Tab (Shift+Tab with ``back``) until the focused element passes ``test`` (a JS
    predicate of the element); its id. A keyboard user's way there, and proof there is one."""
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        hit = page.evaluate(
            f"""() => {{ let el = document.activeElement;
                while (el && el.shadowRoot && el.shadowRoot.activeElement)
                    el = el.shadowRoot.activeElement;
                return el && ({test})(el) ? (el.id || el.tagName) : null; }}"""
        )
        if hit:
            return str(hit)
    raise AssertionError(f"no focusable element passing {test} within {limit} Tab presses")


# Each player's name, per dubkit output: axe has no rule that a player be named.
PLAYER_NAMES = f"""() => ({OURS})().map(root => ({DEEP})(root, 'audio, video').map(el =>
    (el.getAttribute('aria-label') || '').trim()))"""


def assert_players_named(page, where: str) -> int:
    """Every player in dubkit's outputs has a name (what a screen reader says for it), unique
    within its output; how many players there were."""
    outputs = page.evaluate(PLAYER_NAMES)
    unnamed = sum(1 for names in outputs for name in names if not name)
    repeated = [name for names in outputs for name in set(names) if name and names.count(name) > 1]
    assert not unnamed, f"{where}: {unnamed} players without a name"
    assert not repeated, f"{where}: players sharing a name in one output: {repeated[:5]}"
    return sum(len(names) for names in outputs)
