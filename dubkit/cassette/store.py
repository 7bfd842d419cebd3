"""A cassette on disk: a folder with a readable index and the media, each stored once.

::

    lesson.dubkit/
      index.json            what was asked and answered, in the order first asked
      media/<sha256>        every file the answers pointed to (and the client downloaded)

``index.json`` holds ``service`` (the base URL recorded against, without user info),
``calls`` (one entry per distinct request, see :mod:`dubkit.cassette.matching`, each with
the answers it got in order), ``urls`` (each URL an answer held, without its query, and the
media file it served) and ``media`` (size and type of each file). It holds no header but an
answer's content type, no query string of a file URL, no upload's bytes: nothing a request
carried to prove who sent it. Plain files that diff and check into a repository.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import ValidationError
from .matching import bare

FORMAT = "dubkit-cassette/1"


def without_user_info(url: str) -> str:
    """A base URL without ``user:password@`` (it may carry a credential), nor a query."""
    return bare(url).rstrip("/")


INDEX = "index.json"


class Cassette:
    """One cassette folder, loaded or new; thread-safe, saved after every change."""

    def __init__(self, path: Path, index: dict[str, Any]) -> None:
        self.path = path
        self.index = index
        self._lock = threading.Lock()
        self._by_key = {call["key"]: call for call in index["calls"]}
        self._first_answer: dict[str, float] = {}  # key -> when recording first got one
        # Files and URLs are added as an answer's media are fetched; the index is written
        # once per answer (or event), not once per file.
        self._dirty = False

    # ---------------------------------------------------------------- opening

    @classmethod
    def new(cls, path: str | os.PathLike[str], service: str, *, overwrite: bool) -> Cassette:
        """An empty cassette at ``path`` for the service at ``service`` (kept without user
        info); an existing one is replaced only with ``overwrite``."""
        folder = Path(path)
        service = without_user_info(service)
        if (folder / INDEX).exists() and not overwrite:
            raise ValidationError(
                "record",
                f"{folder.name} already holds a recording; pass record_mode='overwrite' to "
                f"record over it or 'append' to add to it (or set DUBKIT_RECORD_MODE), or "
                f"choose another path",
            )
        if folder.exists() and not (folder / INDEX).exists() and any(folder.iterdir()):
            raise ValidationError(
                "record", f"{folder.name} is a folder with other files in it, not a cassette"
            )
        (folder / "media").mkdir(parents=True, exist_ok=True)
        for old in (folder / "media").iterdir():
            old.unlink()
        index = {
            "format": FORMAT,
            "recorded": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "dubkit": __version__,
            "service": service,
            "calls": [],
            "urls": {},
            "media": {},
            "events": [],
        }
        cassette = cls(folder, index)
        cassette.save()
        return cassette

    @classmethod
    def resume(cls, path: str | os.PathLike[str], service: str) -> Cassette:
        """The cassette at ``path`` to record more into (a new one if there is none): a
        course's notebooks, recorded one after another into one lesson."""
        if not (Path(path) / INDEX).exists():
            return cls.new(path, service, overwrite=False)
        cassette = cls.load(path)
        if cassette.service != without_user_info(service):
            raise ValidationError(
                "record",
                f"{Path(path).name} was recorded from {cassette.service}, not "
                f"{without_user_info(service)}: record into another cassette",
            )
        return cassette

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Cassette:
        folder = Path(path)
        try:
            index = json.loads((folder / INDEX).read_text("utf-8"))
        except FileNotFoundError:
            raise ValidationError(
                "replay", f"{folder} is not a cassette (it has no {INDEX})"
            ) from None
        except ValueError as exc:
            raise ValidationError("replay", f"{folder / INDEX} is not JSON: {exc}") from None
        if not isinstance(index, dict) or index.get("format") != FORMAT:
            raise ValidationError("replay", f"{folder / INDEX} is not a {FORMAT} index")
        return cls(folder, index)

    # ---------------------------------------------------------------- calls

    @property
    def service(self) -> str:
        return str(self.index["service"])

    def answers(self, key: str) -> list[dict[str, Any]]:
        call = self._by_key.get(key)
        return call["answers"] if call else []

    def calls(self) -> list[dict[str, Any]]:
        return list(self.index["calls"])

    def add_answer(self, key: str, request: dict[str, Any], answer: dict[str, Any]) -> None:
        """Keep ``answer`` to the request ``key``; an answer equal to the one before it is
        kept once (a task polled while nothing changed), so replay steps through states.
        ``after``: seconds since the first answer to this request, for replay's pace."""
        now = time.monotonic()
        with self._lock:
            call = self._by_key.get(key)
            if call is None:
                call = {"key": key, **request, "answers": []}
                self._by_key[key] = call
                self.index["calls"].append(call)
                self._first_answer[key] = now
            last = call["answers"][-1] if call["answers"] else None
            if last is not None and {k: v for k, v in last.items() if k != "after"} == answer:
                if self._dirty:  # the URLs and media this answer brought
                    self._save_locked()
                return
            after = round(now - self._first_answer.get(key, now), 2)
            call["answers"].append({**answer, "after": after} if call["answers"] else answer)
            self._save_locked()

    # ---------------------------------------------------------------- webhook events

    def events(self, task_id: str) -> list[dict[str, Any]]:
        """The bodies of the webhook events a receiver accepted for ``task_id``, in order."""
        return [e["body"] for e in self.index.get("events", []) if e["taskId"] == task_id]

    def add_event(self, task_id: str, body: dict[str, Any]) -> None:
        with self._lock:
            events = self.index.setdefault("events", [])
            if not any(e["taskId"] == task_id and e["body"] == body for e in events):
                events.append({"taskId": task_id, "body": body})
                self._dirty = True
            if self._dirty:
                self._save_locked()

    # ---------------------------------------------------------------- urls and media

    def url(self, token: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.index["urls"].get(token)
        return found

    def add_url(
        self,
        token: str,
        url: str,
        media: str | None,
        upload: dict[str, str] | None = None,
        *,
        owned: bool = False,
    ) -> None:
        """``url`` (bare) is known by ``token``; it served ``media`` (a stored file's hash),
        or ``upload``: an uploaded file's ``sha256`` and ``type``, whose bytes are not kept;
        ``owned``: a file of the user's own material, not kept either."""
        entry: dict[str, Any] = {"url": url, "media": media}
        if upload:
            entry["upload"] = upload
        if owned:
            entry["owned"] = True
        with self._lock:
            self.index["urls"][token] = entry
            self._dirty = True  # saved with the answer or event that named it

    def add_problem(self, problem: str) -> None:
        """Something the recording missed (it never fails the call that was recorded)."""
        with self._lock:
            self.index.setdefault("problems", []).append(problem)
            self._save_locked()

    def put_media(self, data: bytes, media_type: str) -> str:
        """Store ``data`` once by its sha256; the hash."""
        digest = hashlib.sha256(data).hexdigest()
        target = self.path / "media" / digest
        with self._lock:
            if not target.exists():
                partial = target.with_name(digest + ".part")
                partial.write_bytes(data)
                partial.replace(target)
            self.index["media"][digest] = {"size": len(data), "type": media_type}
            self._dirty = True  # saved with the answer or event that named it
        return digest

    def media(self, digest: str) -> tuple[bytes, str]:
        """The bytes and media type of a stored file."""
        facts = self.index["media"][digest]
        return (self.path / "media" / digest).read_bytes(), str(facts["type"])

    # ---------------------------------------------------------------- saving

    def save(self) -> None:
        with self._lock:
            self._save_locked()

    def _save_locked(self) -> None:
        self._dirty = False
        partial = self.path / (INDEX + ".part")
        partial.write_text(json.dumps(self.index, indent=1, ensure_ascii=False) + "\n", "utf-8")
        partial.replace(self.path / INDEX)  # a reader never sees half an index

    # ---------------------------------------------------------------- summary

    def summary(self) -> dict[str, Any]:
        """What ``dubkit cassette show`` prints: the calls, the media, the size on disk."""
        calls = self.index["calls"]
        media = self.index["media"]
        on_disk = sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())
        return {
            "path": str(self.path),
            "service": self.service,
            "recorded": self.index.get("recorded"),
            "calls": [
                {
                    "method": call["method"],
                    "url": call["url"],
                    "answers": len(call["answers"]),
                    "status": [a["status"] for a in call["answers"]],
                }
                for call in calls
            ],
            "media": [{"sha256": k, **v} for k, v in media.items()],
            "events": len(self.index.get("events", [])),
            "problems": list(self.index.get("problems", [])),
            "media_bytes": sum(int(v["size"]) for v in media.values()),
            "total_bytes": on_disk,
        }
