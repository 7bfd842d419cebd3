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

import ipywidgets as widgets

from ..errors import DubkitError
from ..schema.sandbox_admin import StudentReport
from ..views.buttons import download_button_html
from ..views.classroom import class_table_html
from ..views.sources import data_uri
from ..widgets._threads import CellContext
from .classroom import Classroom
from .report import ClassTable

TOP_UP = 100.0


class ClassView(widgets.VBox):
    """The class table, a student picker with the teacher's levers, and the student's results."""

    def __init__(self, room: Classroom, *, refresh: float = 5.0) -> None:
        self.room = room
        self.interval = refresh
        self.table = ClassTable()
        self._shown: tuple[str, tuple[str, ...]] | None = None  # whose results, which tasks
        self._lock = threading.Lock()
        self._syncing = False
        self._stop = threading.Event()
        self._cell = CellContext()

        self.grid = widgets.HTML()
        self.csv = widgets.HTML()
        self.note = widgets.HTML()
        self.pick = widgets.Dropdown(description="Student", options=list(room.students))
        self.amount = widgets.FloatText(
            value=TOP_UP, description="credits", layout={"width": "180px"}
        )
        self.topup_button = widgets.Button(description="Top up", icon="plus")
        self.reset_button = widgets.Button(description="Reset", icon="undo")
        self.disable_button = widgets.Button(description="Disable", icon="ban")
        self.results = widgets.Output()
        for button in (self.topup_button, self.reset_button, self.disable_button):
            button.add_class("dubkit-class-" + button.description.lower().replace(" ", "-"))
        self.topup_button.on_click(lambda _: self._lever("topup"))
        self.reset_button.on_click(lambda _: self._lever("reset"))
        self.disable_button.on_click(lambda _: self._lever("disable"))
        self.pick.observe(self._picked, names="value")
        levers = widgets.HBox(
            [self.pick, self.amount, self.topup_button, self.reset_button, self.disable_button]
        )
        super().__init__([self.grid, self.csv, levers, self.note, self.results])
        self.add_class("dubkit-class-view")
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
                self.table = self.room.report()
            except DubkitError as exc:
                self.note.value = f"<span style='color:#cf222e'>{html.escape(str(exc))}</span>"
                return
            selected = self.student()
            self.grid.value = class_table_html(self.table, selected=self.pick.value)
            self.csv.value = download_button_html(
                data_uri(self.table.to_csv().encode(), "text/csv"),
                "Export CSV",
                filename="class.csv",
                css_class="dubkit-class-csv",
            )
            if selected is not None:
                self.disable_button.description = "Enable" if selected.disabled else "Disable"
                self._show_results(selected)

    def _reread_roster(self) -> None:
        """Students added or removed since (dubkit class add/remove) join or leave the view."""
        if self.room.path.exists():
            self.room.students = Classroom.open(self.room.path).students
        names = list(self.room.students)
        if list(self.pick.options) != names:
            picked = self.pick.value
            self._syncing = True  # setting the options is not the teacher picking
            try:
                self.pick.options = names
                self.pick.value = picked if picked in names else (names[0] if names else None)
            finally:
                self._syncing = False

    def _picked(self, _: object) -> None:
        if not self._syncing:
            self.update()

    def student(self) -> StudentReport | None:
        """The picked student's row, as last read."""
        return next((s for s in self.table if s.name == self.pick.value), None)

    def _show_results(self, student: StudentReport) -> None:
        """The student's errors and latest results, redrawn only when they changed."""
        shown = (student.name, tuple(t.task_id for t in student.latest + student.errors))
        if shown == self._shown:
            return
        self._shown = shown
        # Emptied in the kernel's state: clear_output() sends a message the browser applies
        # later and syncs back, wiping the results appended meanwhile.
        self.results.outputs = ()
        errors = "".join(
            f"<li><code>{html.escape(t.task_type)}</code> {html.escape(t.updated_at)}: "
            f"{html.escape(t.error_message)}</li>"
            for t in student.errors
        )
        heading = f"<h4>{html.escape(student.name)}'s latest results</h4>"
        if errors:
            heading += f"<div>Errors:<ul>{errors}</ul></div>"
        if not student.latest:
            heading += "<p>No speech or dubs yet.</p>"
        self.results.append_display_data(widgets.HTML(heading))
        client = self.room.client(student.name)
        for seen in student.latest:
            task = client.tasks.get(seen.task_id, fetch=False)
            task.apply(seen.task_type, seen.status, seen.result)
            try:
                self.results.append_display_data(task.result)
            except DubkitError as exc:
                self.results.append_display_data(widgets.HTML(html.escape(str(exc))))

    # -- the teacher's levers
    def _lever(self, action: str) -> None:
        name = self.pick.value
        if not name:
            return
        try:
            if action == "topup":
                after = self.room.topup(name, self.amount.value)
                said = f"topped up {name}: {after.credits:g} credits left"
            elif action == "reset":
                after = self.room.reset(name)
                said = f"reset {name}: work forgotten, {after.credits:g} credits"
            elif self.disable_button.description == "Enable":
                self.room.enable(name)
                said = f"enabled {name}"
            else:
                self.room.disable(name)
                said = f"disabled {name}: their calls are refused until enabled"
        except DubkitError as exc:
            said = f"<span style='color:#cf222e'>{html.escape(str(exc))}</span>"
        else:
            said = html.escape(said)
        self._shown = None if action == "reset" else self._shown
        self.update()
        self.note.value = f"<span class='dubkit-class-note'>{said}</span>"

    # -- refreshing itself
    def _refresh_forever(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._cell.run(self.update)
            except Exception as exc:  # shown, and the view keeps refreshing
                self.note.value = (
                    f"<span style='color:#cf222e'>refresh failed: "
                    f"{html.escape(type(exc).__name__)}: {html.escape(str(exc))}</span>"
                )

    def stop(self) -> None:
        """Stop refreshing (closing the widget does too)."""
        self._stop.set()

    def close(self) -> None:
        self.stop()
        super().close()
