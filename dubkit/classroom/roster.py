"""A class's roster: the CSV a teacher writes (``name`` and, optionally, ``email``,
``credits`` and ``api_key``), read into students with every problem named by line and column
before anything is made."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ValidationError

# What JupyterHub and most authenticators accept as a user name, so a roster's names can be
# the hub's users (the hub hook looks students up by the name the hub gives).
NAME = re.compile(r"^[a-z0-9][a-z0-9._@+-]{0,63}$")
COLUMNS = ("name", "email", "credits", "api_key")


@dataclass
class Student:
    """One student: their name (the hub user), email, credits granted and key."""

    name: str
    email: str | None = None
    credits: float | None = None  # granted at the start (None: the class's default)
    api_key: str | None = None

    def __repr__(self) -> str:  # the key is a credential: never shown
        return f"Student({self.name!r}, email={self.email!r}, credits={self.credits!r})"


def checked_name(name: str, where: str = "name") -> str:
    """The name as the hub knows it: JupyterHub lowercases user names, so a roster does too."""
    name = name.strip().lower()
    if not NAME.match(name):
        raise ValidationError(
            where,
            f"{name!r} is not a user name: use 1-64 letters, digits and . _ @ + -, starting "
            "with a letter or digit (the name the student logs in to the hub with)",
        )
    return name


def checked_credits(value: object, where: str = "credits") -> float:
    try:
        credits = float(str(value).strip())
    except ValueError:
        raise ValidationError(where, f"{value!r} is not a number of credits") from None
    if not credits >= 0 or credits == float("inf"):
        raise ValidationError(where, f"{value!r} must be a number of credits, 0 or more")
    return credits


def read_roster(path: str | Path) -> list[Student]:
    """The students of a roster CSV; a ValidationError names the line and column at fault."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ValidationError("roster", f"cannot read {path}: {exc.strerror}") from None
    rows = csv.DictReader(io.StringIO(text, newline=""))
    header = [h.strip().lower() for h in rows.fieldnames or []]
    if "name" not in header:
        raise ValidationError(
            f"roster {path.name} line 1",
            "the first line must name the columns, with 'name' among them (and optionally "
            f"{', '.join(COLUMNS[1:])}); it says {', '.join(header) or 'nothing'}",
        )
    unknown = [h for h in header if h not in COLUMNS]
    if unknown:
        raise ValidationError(
            f"roster {path.name} line 1",
            f"unknown column {unknown[0]!r}; the columns are {', '.join(COLUMNS)}",
        )
    students: list[Student] = []
    seen: set[str] = set()
    for raw in rows:
        where = f"roster {path.name} line {rows.line_num}"  # the file's line, blanks counted
        if None in raw:  # DictReader keeps values past the header's columns under None
            raise ValidationError(
                where,
                f"more values than the {len(header)} columns ({', '.join(header)}); a value "
                'with a comma needs quotes: "Smith, Jo"',
            )
        row = {(k or "").strip().lower(): (v or "").strip() for k, v in raw.items()}
        if not any(row.values()):
            continue  # a line of empty cells
        name = checked_name(row.get("name", ""), f"{where}, name")
        if name in seen:
            raise ValidationError(f"{where}, name", f"{name!r} is listed twice")
        seen.add(name)
        students.append(
            Student(
                name=name,
                email=row.get("email") or None,
                credits=checked_credits(row["credits"], f"{where}, credits")
                if row.get("credits")
                else None,
                api_key=row.get("api_key") or None,
            )
        )
    if not students:
        raise ValidationError(f"roster {path.name}", "no students listed")
    return students
