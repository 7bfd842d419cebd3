"""A class: its students' keys, kept in a class file only the teacher can read, and the
teacher's levers on a class sandbox.

>>> room = Classroom.create("roster.csv", "class.json", credits=500, max_tasks=3)
>>> room.topup("ada", 200)            # dubkit class topup ada 200
>>> room.report()                     # every student: tasks, credits, errors, last activity
>>> ClassView(room)                    # the same, refreshing itself, with the levers
>>> room.environment("ada")           # what the hub gives ada's server: her key, the URL

The class file (JSON, mode 0600, written whole and renamed into place so a reader never sees
half of it) maps each student's name to their key. On a class sandbox ``create`` makes the
keys, with the class's quotas, through the sandbox's admin routes (its admin token:
``admin_token=``, ``$DUBKIT_SANDBOX_ADMIN_TOKEN`` or the default data dir's file). For the
real service, whose keys come from its account page, the roster's ``api_key`` column (or
``add(name, api_key=...)``) gives them, and the levers that need the sandbox say so.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._util.masking import mask_key
from ..client import Client
from ..errors import NotFoundError, ValidationError
from ..sandbox_handle import SandboxHandle
from ..schema.sandbox_admin import KeyInfo
from .report import ClassTable
from .roster import Student, checked_credits, checked_name, read_roster

CLASS_FILE_ENV = "DUBKIT_CLASS_FILE"
DEFAULT_FILE = "class.json"
DEFAULT_CREDITS = 1000.0
DEFAULT_URL = "http://127.0.0.1:8765"  # where `dubkit sandbox` listens by default
DEMO_LINES = {
    "ada": "Good morning, class.",
    "bob": "My first line of speech.",
    "cy": "Bonjour, this is my dub.",
}


def class_file_path(path: str | Path | None = None) -> Path:
    """``path``, else ``$DUBKIT_CLASS_FILE``, else ``class.json`` here."""
    return Path(path or os.environ.get(CLASS_FILE_ENV) or DEFAULT_FILE)


class Classroom:
    """A class file and, on a class sandbox, the teacher's levers on its keys."""

    def __init__(
        self,
        path: Path,
        base_url: str,
        students: Iterable[Student],
        *,
        sandbox: bool = True,
        credits: float = DEFAULT_CREDITS,
        max_tasks: int | None = None,
        max_storage: int | None = None,
        admin_token: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.base_url = base_url.rstrip("/")
        self.is_sandbox = sandbox
        self.credits = credits
        self.max_tasks = max_tasks
        self.max_storage = max_storage
        self.students: dict[str, Student] = {s.name: s for s in students}
        self._admin_token = admin_token

    def __repr__(self) -> str:
        kind = "sandbox" if self.is_sandbox else "service"
        return (
            f"Classroom({str(self.path)!r}, {kind} {self.base_url!r}, "
            f"{len(self.students)} students)"
        )

    # -- making and opening
    @classmethod
    def create(
        cls,
        roster: str | Path,
        path: str | Path | None = None,
        *,
        base_url: str | None = None,
        service: bool = False,
        credits: float = DEFAULT_CREDITS,
        max_tasks: int | None = None,
        max_storage: int | None = None,
        admin_token: str | None = None,
        overwrite: bool = False,
    ) -> Classroom:
        """Read ``roster`` and write the class file ``path``; on a class sandbox (the default)
        make each student a key with ``credits`` (or the roster's) and the quotas."""
        target = class_file_path(path)
        if target.exists() and not overwrite:
            raise ValidationError(
                "path",
                f"{target} exists: it holds a class's keys (--force or overwrite=True replaces it)",
            )
        students = read_roster(roster)
        given = [s.name for s in students if s.api_key]
        if service and len(given) < len(students):
            missing = [s.name for s in students if not s.api_key]
            raise ValidationError(
                "roster api_key",
                f"a class on the service needs each student's key from the account page; "
                f"missing for {', '.join(missing[:5])}",
            )
        if not service and given:
            raise ValidationError(
                "roster api_key",
                "a class sandbox makes its students' keys; the api_key column is for a class "
                f"on the service (service=True, --service); given for {', '.join(given[:5])}",
            )
        room = cls(
            target,
            base_url or os.environ.get("DUBKIT_BASE_URL") or DEFAULT_URL,
            [],
            sandbox=not service,
            credits=checked_credits(credits),
            max_tasks=_limit(max_tasks, "max_tasks"),
            max_storage=_limit(max_storage, "max_storage"),
            admin_token=admin_token,
        )
        if room.is_sandbox:
            room.sandbox.info()  # reachable, and the token is right, before any key is made
            if target.exists():  # replaced: the old class's keys stop working
                room._remove_keys_of(target)
        with room._editing(reread=False):
            for student in students:
                room._enrol(student)
        return room

    def _remove_keys_of(self, old_file: Path) -> None:
        try:
            old = Classroom.open(old_file, admin_token=self._admin_token)
        except ValidationError:
            return  # not a class file: nothing of ours to take back
        if not old.is_sandbox or old.base_url != self.base_url:
            return
        for student in old.students.values():
            if student.api_key:
                try:
                    self.sandbox.remove_key(student.api_key)
                except NotFoundError:
                    pass  # already gone (a sandbox reset)

    @classmethod
    def open(cls, path: str | Path | None = None, *, admin_token: str | None = None) -> Classroom:
        """The class in ``path`` (default ``$DUBKIT_CLASS_FILE``, else ``class.json``)."""
        source = class_file_path(path)
        try:
            data = json.loads(source.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValidationError(
                "path", f"cannot read the class file {source}: {exc.strerror}"
            ) from None
        except ValueError:
            raise ValidationError("path", f"{source} is not a class file (not JSON)") from None
        if not isinstance(data, dict) or data.get("dubkit") != "class":
            raise ValidationError("path", f"{source} is not a dubkit class file")
        try:
            students = [
                Student(s["name"], s.get("email"), s.get("credits"), s.get("apiKey"))
                for s in data["students"]
            ]
            return cls(
                source,
                data["baseUrl"],
                students,
                sandbox=data.get("sandbox", True),
                credits=data.get("credits", DEFAULT_CREDITS),
                max_tasks=data.get("maxTasks"),
                max_storage=data.get("maxStorage"),
                admin_token=admin_token,
            )
        except (KeyError, TypeError) as exc:
            raise ValidationError(
                "path", f"the class file {source} lacks {exc} (was it edited by hand?)"
            ) from None

    @classmethod
    def demo(cls) -> Classroom:
        """A class of three (ada, bob, cy) on this process's embedded sandbox, each having
        said a line: the teacher's view to try with no class sandbox and no key. Made once per
        sandbox data dir, then reopened."""
        from ..sandbox_handle import embedded

        handle, _ = embedded()
        token = handle.server.admin_token if handle.server else None
        path = handle.data_dir / "demo-class.json"
        if path.exists():
            return cls.open(path, admin_token=token)
        roster = handle.data_dir / "demo-roster.csv"
        roster.write_text("name,credits\nada,500\nbob,500\ncy,200\n", encoding="utf-8")
        room = cls.create(roster, path, base_url=handle.url, admin_token=token, max_tasks=3)
        for name, line in DEMO_LINES.items():
            client = room.client(name)
            client.tts.create([line], voice=client.voices.presets(locale="en-US")[0])
        return room

    def save(self) -> None:
        """Write the class file: owner-only from its first byte, replaced whole."""
        data = {
            "dubkit": "class",
            "version": 1,
            "baseUrl": self.base_url,
            "sandbox": self.is_sandbox,
            "credits": self.credits,
            "maxTasks": self.max_tasks,
            "maxStorage": self.max_storage,
            "students": [
                {"name": s.name, "email": s.email, "credits": s.credits, "apiKey": s.api_key}
                for s in self.students.values()
            ],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(partial, self.path)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise

    @contextmanager
    def _editing(self, *, reread: bool = True) -> Iterator[None]:
        """Change the class under the class file's lock, from the file as it is now, and save:
        two teachers' commands at once both count."""
        lock_path = self.path.with_name(f".{self.path.name}.lock")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if reread and self.path.exists():
                self.students = Classroom.open(self.path).students
            yield
            self.save()
        finally:
            os.close(fd)  # closing releases the lock

    # -- the sandbox
    @functools.cached_property
    def sandbox(self) -> SandboxHandle:
        """The class sandbox's admin handle, made once (one session for every lever)."""
        if not self.is_sandbox:
            raise ValidationError(
                "class",
                "this class is on the service: its keys, credits and limits are managed on "
                "the service's account page (a class sandbox has these levers)",
            )
        return SandboxHandle(self.base_url, admin_token=self._admin_token)

    def _student(self, name: str) -> Student:
        student = self.students.get(name.strip().lower())
        if student is None:
            known = ", ".join(sorted(self.students)[:8]) or "none"
            raise ValidationError("name", f"{name!r} is not in this class (students: {known})")
        return student

    def _key(self, name: str) -> str:
        key = self._student(name).api_key
        if not key:
            raise ValidationError("name", f"{name} has no key in the class file")
        return key

    def _enrol(self, student: Student) -> None:
        if self.is_sandbox and not student.api_key:
            student.api_key = self.sandbox.create_key(
                student.name,
                student.credits if student.credits is not None else self.credits,
                student=True,
                max_tasks=self.max_tasks,
                max_storage=self.max_storage,
            )
        self.students[student.name] = student

    # -- the teacher's levers
    def add(
        self,
        name: str,
        *,
        email: str | None = None,
        credits: float | None = None,
        api_key: str | None = None,
    ) -> Student:
        """Enrol one more student (a key of their own on a class sandbox)."""
        name = checked_name(name)
        if api_key and self.is_sandbox:
            raise ValidationError(
                "api_key", "a class sandbox makes its students' keys; api_key is for the service"
            )
        if not self.is_sandbox and not api_key:
            raise ValidationError("api_key", "a class on the service needs the student's key")
        student = Student(
            name, email, None if credits is None else checked_credits(credits), api_key
        )
        with self._editing():
            if name in self.students:
                raise ValidationError("name", f"{name!r} is already in this class")
            self._enrol(student)
        return student

    def remove(self, name: str) -> None:
        """Take a student out: on a class sandbox their key stops working."""
        with self._editing():
            student = self._student(name)
            if self.is_sandbox and student.api_key:
                try:
                    self.sandbox.remove_key(student.api_key)
                except NotFoundError:
                    pass  # already gone (the sandbox was reset): still taken out of the class
            del self.students[student.name]

    def topup(self, name: str, credits: float) -> KeyInfo:
        """Add ``credits`` (more than 0) to the student's key."""
        if not checked_credits(credits) > 0:
            raise ValidationError("credits", f"a top-up adds more than 0 credits, not {credits!r}")
        return self.sandbox.update_key(self._key(name), add_credits=credits)

    def reset(self, name: str) -> KeyInfo:
        """A fresh start: the student's tasks, uploads and clones forgotten, credits as granted."""
        student = self._student(name)
        granted = student.credits if student.credits is not None else self.credits
        return self.sandbox.reset_key(self._key(name), credits=granted)

    def disable(self, name: str) -> KeyInfo:
        """Every call with the student's key is refused until :meth:`enable`."""
        return self.sandbox.update_key(self._key(name), disabled=True)

    def enable(self, name: str) -> KeyInfo:
        return self.sandbox.update_key(self._key(name), disabled=False)

    def limits(self, name: str, *, tasks: int | None = None, storage: int | None = None) -> KeyInfo:
        """Set the student's quotas: tasks running at once, uploaded bytes (0 lifts one)."""
        _limit(tasks, "tasks")
        _limit(storage, "storage")
        return self.sandbox.update_key(self._key(name), max_tasks=tasks, max_storage=storage)

    # -- what students get
    def environment(self, name: str) -> StudentEnvironment:
        """What a student's server needs: ``DUBKIT_API_KEY`` and ``DUBKIT_BASE_URL`` (shown
        with the key masked)."""
        return StudentEnvironment(
            {"DUBKIT_API_KEY": self._key(name), "DUBKIT_BASE_URL": self.base_url}
        )

    def client(self, name: str) -> Client:
        """A client with the student's key (what their notebooks use)."""
        return Client(self._key(name), self.base_url)

    # -- the teacher's view
    def report(self) -> ClassTable:
        """Every student of the class as the sandbox sees them now."""
        seen = {r.name: r for r in self.sandbox.class_report().students}
        return ClassTable([seen[name] for name in self.students if name in seen])


class StudentEnvironment(dict[str, str]):
    """A student's environment: the key is a credential, so it is never shown."""

    def __repr__(self) -> str:
        return repr({k: mask_key(v) if k == "DUBKIT_API_KEY" else v for k, v in self.items()})

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def _limit(value: int | None, name: str) -> int | None:
    """A quota as given: a whole number, 0 or more; 0 (and None) mean no limit."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(name, f"a whole number, 0 or more (0: no limit), not {value!r}")
    return value or None
