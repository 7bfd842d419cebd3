"""Drive a notebook in JupyterLab as a person does: open it, wait for the kernel, run all.

Lab is started with ``expose_app_in_browser``, so ``window.jupyterapp`` gives the commands a
person triggers from the menus (run all, clear outputs) and the state they watch (the kernel
indicator, the ``[*]``/``[n]`` prompts, the outputs).

Known start-up flakiness is waited out on the right signals, never slept through: a kernel
selection dialog is answered with the default kernel, and opening is retried once (fresh
session) when the kernel never becomes idle. A second failure is reported with the page's state.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from _waiting import PATIENCE
from jupyter_servers import Server
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page

UNDER_TEST = "notebook-under-test"  # class put on the notebook panel being tested
OUTPUTS = f".{UNDER_TEST} .jp-OutputArea"
OPEN_TIMEOUT = PATIENCE  # seconds for Lab to show the notebook with an idle kernel (a hang)
RUN_TIMEOUT = 240  # seconds for "run all" (notebooks are written to run in ~60 s)

KERNEL_STATE = """() => {
    const app = window.jupyterapp;
    const panel = app && app.shell.currentWidget;
    const context = panel && panel.sessionContext;
    const kernel = context && context.session && context.session.kernel;
    const dialog = document.querySelector('.jp-Dialog');
    return {title: panel ? panel.title.label : null, kernel: kernel ? kernel.status : null,
            dialog: dialog ? dialog.innerText.slice(0, 200) : null};
}"""

CELLS = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
    return {kernel: kernel ? kernel.status : null, cells: panel.content.widgets.map((cell, i) => {
        const code = cell.model.type === 'code';
        const prompt = cell.node.querySelector('.jp-InputPrompt');
        return {index: i, type: cell.model.type, count: code ? cell.model.executionCount : null,
                prompt: prompt ? prompt.innerText.trim() : '',
                source: cell.model.sharedModel.getSource().slice(0, 80),
                errors: code ? cell.model.outputs.toJSON().filter(o => o.output_type === 'error')
                                .map(o => o.ename + ': ' + o.evalue) : [],
                outputs: code ? cell.model.outputs.length : 0};
    })};
}"""

# Records every state a live task table shows, with the cell's prompt at that moment, so a test
# can tell "refreshed by itself" from "re-run": the prompt number stays the same. And what each
# task cell's live region said, by region (the same element, or one put in anew).
WATCH_TASK_TABLES = """(scope) => {
    window.__dubkitTaskStates = [];
    window.__dubkitAnnounced = [];
    const seen = new Set();
    const ids = new WeakMap();  // a region's identity (an attribute would be redrawn away)
    let regions = 0;
    const record = () => document.querySelectorAll(`.${scope} .jp-Cell`).forEach((cell, i) => {
        cell.querySelectorAll('.dubkit-announce').forEach(region => {
            if (!ids.has(region)) ids.set(region, String(++regions));
            const said = [ids.get(region), region.getAttribute('role'),
                          region.textContent.trim()];
            const last = window.__dubkitAnnounced.filter(a => a[0] === said[0]).pop();
            if (!last || last[2] !== said[2]) window.__dubkitAnnounced.push(said);
        });
        const prompt = (cell.querySelector('.jp-InputPrompt') || {}).innerText || '';
        cell.querySelectorAll('table.dubkit-tasks').forEach(table => {
            const statuses = [...table.querySelectorAll('tbody tr td[data-status]')]
                .map(td => td.dataset.status);
            const live = !!table.closest('.jupyter-widgets, .dubkit-live');
            const key = [i, statuses.join(','), prompt.trim(), live].join('|');
            if (!seen.has(key)) {
                seen.add(key);
                window.__dubkitTaskStates.push({cell: i, statuses, prompt: prompt.trim(), live});
            }
        });
    });
    new MutationObserver(record).observe(document.body,
                                         {subtree: true, childList: true, characterData: true});
}"""


# Run code in the notebook's kernel from the page; its printed text (errors as ERROR ...).
RUN_IN_KERNEL = """async (code) => {
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    const future = kernel.requestExecute({code, silent: false, store_history: false});
    let out = '';
    future.onIOPub = (msg) => {
        const kind = msg.header.msg_type;
        if (kind === 'stream') out += msg.content.text;
        if (kind === 'error') out += 'ERROR ' + msg.content.ename + ': ' + msg.content.evalue;
    };
    await future.done;
    return out;
}"""


@dataclass
class RunReport:
    seconds: float
    cells: list[dict]
    task_states: list[dict]
    announced: list[list[str]]  # [region id, its role, what it said], each change once

    @property
    def code_cells(self) -> list[dict]:
        return [c for c in self.cells if c["type"] == "code"]


class LabNotebook:
    """One notebook open in a Lab tab."""

    def __init__(self, page: Page, lab: Server, path: str) -> None:
        self.page, self.lab, self.path = page, lab, path

    def open(self) -> None:
        """Show the notebook with an idle kernel; one retry with a fresh session."""
        try:
            self._open_once()
        except (TimeoutError, PlaywrightError) as first:
            print(f"[lab] {self.path}: {first}; retrying once with a fresh session")
            self.shutdown_kernel()
            try:
                self._open_once()
            except (TimeoutError, PlaywrightError) as second:
                raise AssertionError(
                    f"{self.path}: Lab did not give an idle kernel twice; "
                    f"first: {first}; then: {second}"
                ) from second

    def address(self) -> str:
        # A workspace of its own, reset: Lab must not reopen the tabs of earlier tests.
        workspace = "".join(c if c.isalnum() else "-" for c in self.path)
        return (
            f"{self.lab.url}/lab/workspaces/{workspace}/tree/{self.path}"
            f"?reset&token={self.lab.token}"
        )

    def _open_once(self) -> None:
        self.page.goto(self.address())
        deadline = time.monotonic() + OPEN_TIMEOUT
        state: dict = {}
        while time.monotonic() < deadline:
            state = self.page.evaluate(KERNEL_STATE)
            if state["dialog"] and "kernel" in state["dialog"].lower():
                # "Select Kernel": take the default (this venv's python3), as a person would
                self.page.click(".jp-Dialog .jp-mod-accept")
            elif state["title"] == self.path.rsplit("/", 1)[-1] and state["kernel"] == "idle":
                self.page.evaluate(
                    """(name) => {
                    const shell = window.jupyterapp.shell;
                    if (shell.collapseLeft) shell.collapseLeft();  // Lab; Notebook 7 has none
                    shell.currentWidget.node.classList.add(name); }""",
                    UNDER_TEST,
                )
                return
            time.sleep(0.25)
        raise TimeoutError(f"no idle kernel after {OPEN_TIMEOUT} s (last seen: {state})")

    def run_all(self) -> RunReport:
        """Clear the saved outputs, run every cell, wait until nothing is running."""
        self.page.evaluate(
            "() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')"
        )
        cleared = self.page.evaluate(CELLS)["cells"]
        left = [
            c["index"]
            for c in cleared
            if c["type"] == "code" and (c["count"] is not None or c["outputs"])
        ]
        assert not left, f"{self.path}: saved outputs still shown in cells {left} after clearing"
        self.page.evaluate(WATCH_TASK_TABLES, UNDER_TEST)
        started = time.monotonic()
        self.page.evaluate(
            "() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }"
        )
        deadline = started + RUN_TIMEOUT
        state = self.page.evaluate(CELLS)
        while time.monotonic() < deadline:
            state = self.page.evaluate(CELLS)
            codes = [c for c in state["cells"] if c["type"] == "code"]
            busy = [c for c in codes if "*" in c["prompt"]]
            finished = all(c["count"] is not None for c in codes)
            stopped = any(c["errors"] for c in codes)  # run-all stops at an error
            if state["kernel"] == "idle" and not busy and (finished or stopped):
                break
            time.sleep(0.25)
        else:
            running = [c["source"] for c in state["cells"] if "*" in c["prompt"]]
            raise AssertionError(f"{self.path}: still running after {RUN_TIMEOUT} s: {running}")
        return RunReport(
            time.monotonic() - started,
            state["cells"],
            self.page.evaluate("() => window.__dubkitTaskStates"),
            self.page.evaluate("() => window.__dubkitAnnounced"),
        )

    def cell(self, index: int):
        return self.page.locator(f".{UNDER_TEST} .jp-Cell").nth(index)

    def shutdown_kernel(self) -> None:
        """End the notebook's kernel (and the sandbox it embeds) through Lab's REST API."""
        for session in self.lab.api("GET", "/api/sessions").json():
            if session.get("path") == self.path:
                self.lab.api("DELETE", f"/api/sessions/{session['id']}")


class NotebookSevenPage(LabNotebook):
    """One notebook open in Notebook 7 (its own page, ``/notebooks/<path>``); the same app
    object (``window.jupyterapp``), so running and watching are Lab's."""

    def address(self) -> str:
        return f"{self.lab.url}/notebooks/{self.path}?token={self.lab.token}"
