"""The teacher's view: every student of a class sandbox in one table that refreshes itself;
pick a student to see their errors and play their latest speech and dubs; top up, reset,
disable or enable them; export the table as CSV.

>>> ClassView(Classroom.open("class.json"))   # in a notebook; `dubkit class view` serves it

It reads the sandbox's class report with the admin token; students' own notebooks hold only
their key, which opens nothing of another student's. A student's results are played from the
report's copy of their ``tasks/detail`` answer: the view never calls the service with a
student's key, so it does not count as their activity.
"""

from __future__ import annotations

import html
import threading

from ..errors import DubkitError
from ..frontends.channel import Action, LiveHTML
from ..schema.products import context_of
from ..schema.sandbox_admin import StudentReport
from ..views.buttons import download_button_html
from ..views.classroom import class_changes, class_table_html
from ..views.palette import error_html, muted
from ..widgets._threads import CellContext
from .classroom import Classroom
from .report import ClassTable

TOP_UP = 100.0
LEVERS = ("pick", "topup", "reset", "disable")


class ClassView(LiveHTML):
    """The class table, a student picker with the teacher's levers, and the student's results.

    One live-channel widget of plain HTML controls: the table refreshes itself quietly, and a
    polite status line says what changed (a lever's effect, a student's task that ended, an
    error) once, not every refresh.
    """

    def __init__(self, room: Classroom, *, refresh: float = 5.0) -> None:
        self.room = room
        self.interval = refresh
        self.table = ClassTable()
        self.picked: str | None = next(iter(room.students), None)
        self.amount = TOP_UP
        self.note = ""  # what the status line says (a lever's effect, a change in the class)
        self.results_html = ""  # the picked student's errors and latest results
        self._shown: tuple[str, tuple[str, ...]] | None = None  # whose results, which tasks
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._cell = CellContext()
        super().__init__()
        for lever in LEVERS:
            self.on_action(lever, self._use)
        self.update()
        if refresh > 0:
            threading.Thread(
                target=self._refresh_forever, name="dubkit-class-view", daemon=True
            ).start()

    def __repr__(self) -> str:
        return f"ClassView({self.room.path.name!r}, {len(self.room.students)} students)"

    # -- reading
    def update(self) -> None:
        """Read the class again and redraw (the refresh thread calls this every few seconds)."""
        with self._lock:
            try:
                self._reread_roster()
                before, self.table = self.table, self.room.report()
            except DubkitError as exc:
                self.note = error_html(str(exc))
                self._draw()
                return
            changed = class_changes(before, self.table) if len(before) else ""
            if changed:
                self.note = html.escape(changed)
            selected = self.student()
            if selected is not None:
                self._show_results(selected)
            self._draw()

    def _reread_roster(self) -> None:
        """Students added or removed since (dubkit class add/remove) join or leave the view."""
        if self.room.path.exists():
            self.room.students = Classroom.open(self.room.path).students
        names = list(self.room.students)
        if self.picked not in names:
            self.picked = names[0] if names else None

    def student(self) -> StudentReport | None:
        """The picked student's row, as last read."""
        return next((s for s in self.table if s.name == self.picked), None)

    def _show_results(self, student: StudentReport) -> None:
        """The student's errors and latest results, made again only when they changed."""
        shown = (student.name, tuple(t.task_id for t in student.latest + student.errors))
        if shown == self._shown:
            return
        self._shown = shown
        errors = "".join(
            f"<li><code>{html.escape(t.task_type)}</code> {html.escape(t.updated_at)}: "
            f"{html.escape(t.error_message)}</li>"
            for t in student.errors
        )
        parts = [f"<h4>{html.escape(student.name)}'s latest results</h4>"]
        if errors:
            parts.append(f"<div>Errors:<ul>{errors}</ul></div>")
        if not student.latest:
            parts.append("<p>No speech or dubs yet.</p>")
        client = self.room.client(student.name)
        for seen in student.latest:
            task = client.tasks.get(seen.task_id, fetch=False)
            task.context = context_of(seen.task_type, seen.request)  # its texts and voices
            task.apply(seen.task_type, seen.status, seen.result)
            try:
                result = task.result
                page = result._repr_html_() if result is not None else ""
                parts.append(f"<div class='dubkit-class-result'>{page}</div>")
            except DubkitError as exc:
                parts.append(error_html(str(exc), tag="div"))
        self.results_html = "".join(parts)

    # -- the teacher's levers
    def _use(self, act: Action) -> None:
        """A lever, with the picker and amount as the page had them."""
        picked = str(act.fields.get("student") or self.picked or "")
        if picked in self.room.students:
            self.picked = picked
        try:
            self.amount = float(act.fields.get("amount", self.amount))
        except (TypeError, ValueError):
            pass  # a half-typed amount: the lever says so below
        if act.name == "pick":
            self.update()
        else:
            self.lever(act.name)

    def lever(self, action: str) -> None:
        """Top up (``topup``, by :attr:`amount`), ``reset``, or ``disable`` (enable if
        disabled) the picked student; the status line says what happened."""
        name = self.picked
        if not name:
            return
        selected = self.student()
        try:
            if action == "topup":
                after = self.room.topup(name, self.amount)
                said = f"topped up {name}: {after.credits:g} credits left"
            elif action == "reset":
                after = self.room.reset(name)
                said = f"reset {name}: work forgotten, {after.credits:g} credits"
            elif selected is not None and selected.disabled:
                self.room.enable(name)
                said = f"enabled {name}"
            else:
                self.room.disable(name)
                said = f"disabled {name}: their calls are refused until enabled"
        except DubkitError as exc:
            note = error_html(str(exc))
        else:
            note = html.escape(said)
        self._shown = None if action == "reset" else self._shown
        self.update()
        self.note = note  # the lever's own words win over a change seen on the way
        self._draw()

    # -- drawing
    def _draw(self) -> None:
        me = self.model_id[:8]
        selected = self.student()
        enable = selected is not None and selected.disabled
        options = "".join(
            f"<option value='{html.escape(n)}'{' selected' if n == self.picked else ''}>"
            f"{html.escape(n)}</option>"
            for n in self.room.students
        )
        self.value = (
            "<div class='dubkit-class-view' data-dubkit-part='class'>"
            f"<div class='dubkit-class-grid'>{class_table_html(self.table, selected=self.picked)}"
            "</div><div class='dubkit-class-csv-row'>"
            + download_button_html(
                None,
                "Export CSV",
                data=self.table.to_csv().encode(),
                mime="text/csv",
                filename="class.csv",
                css_class="dubkit-class-csv",
            )
            + "</div><div class='dubkit-class-levers' style='display:flex;flex-wrap:wrap;"
            f"gap:6px;align-items:center;margin:6px 0'><label for='{me}-student'>Student</label>"
            f"<select id='{me}-student' name='student' data-dubkit-action='pick'>{options}"
            f"</select><label for='{me}-amount'>credits</label><input type='number' "
            f"id='{me}-amount' name='amount' value='{self.amount:g}' style='width:6em'>"
            f"<button type='button' id='{me}-topup' class='dubkit-class-top-up' "
            "data-dubkit-action='topup'>Top up</button>"
            f"<button type='button' id='{me}-reset' class='dubkit-class-reset' "
            "data-dubkit-action='reset'>Reset</button>"
            f"<button type='button' id='{me}-disable' class='dubkit-class-disable' "
            f"data-dubkit-action='disable'>{'Enable' if enable else 'Disable'}</button></div>"
            f"<div role='status' class='dubkit-class-note' data-dubkit-part='note'>{self.note}</div>"
            f"<div class='dubkit-class-results'>{self.results_html}</div></div>"
        )

    def fallback_html(self) -> str:
        return class_table_html(self.table, selected=self.picked) + muted(
            " (the teacher's view: live while the notebook runs)", tag="p"
        )

    # -- refreshing itself
    def _refresh_forever(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._cell.run(self.update)
            except Exception as exc:  # shown, and the view keeps refreshing
                self.note = error_html(f"refresh failed: {type(exc).__name__}: {exc}")
                self._draw()

    def stop(self) -> None:
        """Stop refreshing (closing the widget does too)."""
        self._stop.set()

    def close(self) -> None:
        self.stop()
        super().close()
