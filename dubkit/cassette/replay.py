"""Replay: a ``requests`` adapter that answers from a cassette and sends nothing out.

Every request of the client's session comes here (it is mounted for http and https):

* a call the cassette holds is answered from it: the recorded answers to that request in
  order, the last one repeating (a task polled again stays done; a cell run twice gets its
  answer again), each no sooner than it came while recording, up to :data:`PACE_CAP`. URLs in the answers point at the local sandbox, which serves the recorded
  media under their recorded paths (published on first use), so players follow the same
  rules as the sandbox's own files;
* a request to the local sandbox (those media, a stray's files) goes to it;
* an API call the cassette lacks is a *stray*: by default it goes to the local sandbox with
  a one-line note naming it, or, with ``strays="error"``, it raises
  :class:`~dubkit.errors.ReplayMissError` naming the closest recorded call;
* anything else (a file or storage URL the cassette lacks) raises ReplayMissError: replay
  never reaches the network.

Answers say who gave them: ``X-Dubkit-Answered-By: cassette|sandbox``, and
:attr:`Replayer.answered` counts them.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

import requests
from requests.adapters import BaseAdapter, HTTPAdapter
from requests.structures import CaseInsensitiveDict

from .._transport import Transport
from .._util import extras_header
from ..errors import ReplayMissError
from ..webhooks import push
from ..webhooks.events import parse_event
from .matching import PLACEHOLDER, Matcher, bare, body_bytes, is_json, replace_urls
from .recording import task_id_of
from .store import Cassette

ANSWERED_BY = "X-Dubkit-Answered-By"
PUSH_AFTER = 0.2  # seconds between an answer and the recorded events of its task
# A recorded answer that came N seconds after the first to its request is given no sooner
# than min(N, PACE_CAP) seconds after replay was first asked: a task cell shows "running"
# where the recording did, and a long dub's states still pass in seconds.
PACE_CAP = 2.0
STRAYS = ("sandbox", "error")


class Replayer:
    """One cassette's replay in this process: cursors, served media and the tally, shared by
    every client that replays it (a notebook may connect twice)."""

    def __init__(
        self,
        cassette: Cassette,
        *,
        sandbox_url: str,
        sandbox_key: str,
        serve_file: Callable[[str, bytes, str], str],
        strays: str = "sandbox",
        note: Callable[[str], None] = print,
    ) -> None:
        if strays not in STRAYS:
            raise ValueError(f"strays: one of {STRAYS}, got {strays!r}")
        self.cassette = cassette
        self.sandbox_url = sandbox_url.rstrip("/")
        self.sandbox_key = sandbox_key
        self.serve_file = serve_file
        self.strays = strays
        self.note = note
        self.answered: Counter[str] = Counter()  # "cassette" / "sandbox" -> calls answered
        self.strayed: list[str] = []  # each stray call once, as "METHOD /path"
        self._cursors: Counter[str] = Counter()
        self._served: dict[str, str] = {}  # token -> the sandbox URL its media is served at
        self._recorded_of: dict[str, str] = {}  # served URL (bare) -> token
        self._uploads: dict[str, bytes] = {}  # sha256 -> bytes this process uploaded
        self._pushed: set[str] = set()  # tasks whose recorded events were pushed
        self._by_task: dict[str, str] = {}  # task id -> who answered the call that made it
        self._first_asked: dict[str, float] = {}  # key -> when this replay was first asked
        self._lock = threading.Lock()
        self.matcher = Matcher(cassette.service, known=self._recorded_of.get)

    def serve(self, transport: Transport) -> None:
        """Answer every request of ``transport``'s session from here on."""
        transport.mount(ReplayAdapter(self))

    def __repr__(self) -> str:
        return (
            f"Replayer({self.cassette.path.name!r}, answered={dict(self.answered)}, "
            f"strays={len(self.strayed)})"
        )

    # ---------------------------------------------------------------- answers

    def answer(self, request: requests.PreparedRequest) -> requests.Response | None:
        """The next recorded answer to ``request``, or None when the cassette lacks it."""
        asked = self.matcher.asked(request)
        key = self.matcher.key(asked)
        answers = self.cassette.answers(key)
        if not answers:
            return None
        with self._lock:
            turn = self._cursors[key]
            first = self._first_asked.setdefault(key, time.monotonic())
            if turn < len(answers) and turn > 0:
                due = min(float(answers[turn].get("after", 0)), PACE_CAP)
                if time.monotonic() - first < due:  # not yet: the state before still holds
                    turn -= 1
            self._cursors[key] = turn + 1
            self.answered["cassette"] += 1
            if asked["method"] == "PUT" and isinstance(asked["body"], dict):
                self._uploads[asked["body"].get("sha256", "")] = body_bytes(request) or b""
        answer = answers[min(turn, len(answers) - 1)]
        task_id = self.remember("cassette", answer.get("json"))
        if task_id:
            self._push_events_of(task_id)
        return self._response(request, answer)

    def remember(self, who: str, payload: Any) -> str | None:
        """Note who answered the call that made the task ``payload`` (an envelope) names;
        that task's id."""
        task_id = task_id_of(payload)
        if task_id:
            with self._lock:
                self._by_task[task_id] = who
        return task_id

    def answered_by(self, thing: Any) -> str | None:
        """Who answered the call that made ``thing`` (a task id, or a task or result with a
        ``task_id``): ``"cassette"``, ``"sandbox"`` (a stray), or None if this replay did not
        see it."""
        task_id = thing if isinstance(thing, str) else getattr(thing, "task_id", None)
        with self._lock:
            return self._by_task.get(task_id) if isinstance(task_id, str) else None

    def _push_events_of(self, task_id: str) -> None:
        """The recorded webhook events of a task an answer named, pushed once to this
        process's task cells (after the answer, as the service's deliveries come after its
        acceptance) while a receiver runs here, as they were when recorded."""
        if not push.active():
            return
        with self._lock:
            if task_id in self._pushed:
                return
            self._pushed.add(task_id)
        bodies = [replace_urls(body, self._url) for body in self.cassette.events(task_id)]
        if bodies:
            later = threading.Timer(PUSH_AFTER, self._push, (bodies,))
            later.daemon = True
            later.start()

    @staticmethod
    def _push(bodies: list[dict[str, Any]]) -> None:
        for body in bodies:
            push.publish(parse_event(body))

    def _response(
        self, request: requests.PreparedRequest, answer: dict[str, Any]
    ) -> requests.Response:
        response = requests.Response()
        response.status_code = answer["status"]
        response.headers = CaseInsensitiveDict(answer.get("headers", {}))
        response.headers[ANSWERED_BY] = "cassette"
        if "json" in answer:
            payload = replace_urls(answer["json"], self._url)
            response._content = json.dumps(payload).encode()
            if "extras" in answer:
                header = extras_header.encode(replace_urls(answer["extras"], self._url))
                if header:
                    response.headers[extras_header.HEADER] = header
        elif "media" in answer:
            response._content = self.cassette.media(answer["media"])[0]
        else:
            response._content = b""
        response.encoding = "utf-8"
        response.url = request.url or ""
        response.request = request
        response.reason = "OK" if answer["status"] < 400 else "Recorded"
        return response

    def _url(self, value: str) -> str:
        """A placeholder of the index back as a URL on the local sandbox, never elsewhere:
        its file served there (from the cassette, or this process's upload of the same file),
        or, for a URL that named no file here (a storage URL, a file not recorded), an
        address the sandbox answers 404 that this replay still knows the token of."""
        if not value.startswith(PLACEHOLDER):
            return value
        token = value[len(PLACEHOLDER) :]
        entry = self.cassette.url(token)
        if entry is None:
            return value
        with self._lock:
            served = self._served.get(token)
        if served is not None:
            return served
        found = self._file(entry)
        path = replay_path(entry["url"])
        if found is None:
            local = f"{self.sandbox_url}/files/{quote(path, safe='/')}"
        else:
            local = self.serve_file(path, *found)
        with self._lock:
            self._recorded_of[bare(local)] = token
            if found is not None:  # an upload seen later may still serve the others
                self._served[token] = local
        return local

    def _file(self, entry: dict[str, Any]) -> tuple[bytes, str] | None:
        """The bytes and type a recorded URL served: from the cassette, or an upload's from
        this process's own upload of the same file (a cassette never holds those)."""
        if entry["media"]:
            return self.cassette.media(entry["media"])
        upload = entry.get("upload")
        if upload and upload["sha256"] in self._uploads:
            return self._uploads[upload["sha256"]], upload["type"]
        return None

    # ---------------------------------------------------------------- strays

    def stray(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        """``request`` re-addressed to the sandbox, or ReplayMissError (strict, or not an
        API call: replay reaches nothing else)."""
        url = request.url or ""
        said = self._said(request)
        if not self.matcher.is_api(url) or self.strays == "error":
            raise ReplayMissError(
                f"{said} is not in the cassette {self.cassette.path.name}"
                + (
                    ""
                    if self.matcher.is_api(url)
                    else " (replay reaches no network: only recorded files and the local sandbox)"
                )
                + self._closest(request),
                call=said,
            )
        with self._lock:
            first = said not in self.strayed
            if first:
                self.strayed.append(said)
            self.answered["sandbox"] += 1
        if first:
            self.note(
                f"dubkit: {said} is not in {self.cassette.path.name}; the local sandbox answered"
            )
        rerouted = request.copy()
        rerouted.url = self.sandbox_url + self.matcher.below_base(url)
        rerouted.headers["Authorization"] = f"Bearer {self.sandbox_key}"
        return rerouted

    def _said(self, request: requests.PreparedRequest) -> str:
        url = request.url or ""
        path = urlsplit(url).path if self.matcher.is_api(url) else "a file at " + urlsplit(url).path
        return f"{request.method} {path}"

    def _closest(self, request: requests.PreparedRequest) -> str:
        """Where the nearest recorded call differs: the same method and path, body apart."""
        asked = self.matcher.asked(request)
        path = asked["url"].split("?")[0]
        same = [
            c
            for c in self.cassette.calls()
            if c["method"] == asked["method"] and c["url"].split("?")[0] == path
        ]
        if not same:
            return "; it holds no call to that path"
        where = [difference(c, asked) for c in same]
        best = min(where, key=len)
        return f"; the closest recorded call ({len(same)} to that path) differs at {best}"


def difference(recorded: Any, asked: Any, at: str = "") -> str:
    """The first place two JSON values differ, as a dotted path ('' when equal)."""
    if isinstance(recorded, dict) and isinstance(asked, dict):
        for key in sorted(set(recorded) | set(asked)):
            if key == "answers":
                continue
            found = difference(recorded.get(key), asked.get(key), f"{at}.{key}" if at else key)
            if found:
                return found
        return ""
    if isinstance(recorded, list) and isinstance(asked, list):
        if len(recorded) != len(asked):
            return f"{at} ({len(recorded)} items recorded, {len(asked)} asked)"
        for i, (a, b) in enumerate(zip(recorded, asked)):
            found = difference(a, b, f"{at}[{i}]")
            if found:
                return found
        return ""
    return "" if recorded == asked else (at or "the request")


def replay_path(recorded_url: str) -> str:
    """Where the sandbox serves a recorded file: under its recorded path when that was a
    sandbox's ``/files/...`` (so a lesson recorded against a sandbox shows the same links),
    else under ``replay/<host>/<path>``."""
    parts = urlsplit(recorded_url)
    if parts.path.startswith("/files/"):
        return parts.path[len("/files/") :]
    return f"replay/{parts.hostname}{parts.path}"


class ReplayAdapter(BaseAdapter):
    """The adapter a replaying client's session sends everything through."""

    def __init__(self, replayer: Replayer, pool_size: int = 16) -> None:
        super().__init__()
        self.replayer = replayer
        self.local = HTTPAdapter(pool_connections=pool_size, pool_maxsize=pool_size)

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        url = request.url or ""
        recorded = self.replayer.answer(request)
        if recorded is not None:
            return recorded
        kwargs["proxies"] = {}  # the local sandbox only, never through a proxy
        local = url.startswith(self.replayer.sandbox_url + "/")
        if local and not self.replayer.matcher.is_api(url):
            return self.local.send(request, **kwargs)  # a served file, a stray's download
        response = self.local.send(self.replayer.stray(request), **kwargs)
        response.headers[ANSWERED_BY] = "sandbox"
        if is_json(response.headers):
            try:
                self.replayer.remember("sandbox", response.json())
            except ValueError:
                pass
        return response

    def close(self) -> None:
        self.local.close()
