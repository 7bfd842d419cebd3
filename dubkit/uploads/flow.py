"""The upload itself: dedup check, one PUT or parallel parts, completion, resume, abort."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import requests
from requests.adapters import HTTPAdapter

from ..errors import (APIConnectionError, APIError, DubkitError, IdempotencyConflictError,
                      NotFoundError, ValidationError, error_class_for)
from ._part_urls import PartUrls
from ._resume_checks import first_changed_part, registered_by_last_run
from .files import FileSlice, check_media_file, file_md5, part_size_for
from .state import UploadState

if TYPE_CHECKING:
    from ..client import Client

MULTIPART_THRESHOLD = 32 * 1024 * 1024
_REPORT_EVERY = 0.2              # seconds between progress reports

ProgressCallback = Callable[["UploadProgress"], None]


class UploadError(DubkitError):
    """An upload stopped. ``resumable``: calling ``upload`` again continues where it stopped."""

    def __init__(self, message: str, *, resumable: bool, state_file: Path | None = None) -> None:
        super().__init__(message)
        self.resumable = resumable
        self.state_file = state_file


@dataclass
class UploadProgress:
    """A snapshot for progress displays; ``phase`` is hashing, uploading, registering, done."""

    file_name: str
    total: int
    phase: str = "hashing"
    hashed: int = 0
    sent: int = 0
    parts_done: int = 0
    parts_total: int = 0
    resumed_parts: int = 0
    resumed_bytes: int = 0          # sent by an earlier, interrupted run
    verified: int = 0               # of those, re-read to check they are still the file's
    material_id: str | None = None
    duplicate: bool = False
    started: float = field(default_factory=time.monotonic)
    sending_since: float | None = None
    sending_until: float | None = None
    ended: float | None = None

    @property
    def rate(self) -> float:
        """Bytes per second sent by this run (0 before sending starts)."""
        if self.sending_since is None:
            return 0.0
        seconds = (self.sending_until or time.monotonic()) - self.sending_since
        return (self.sent - self.resumed_bytes) / seconds if seconds > 0 else 0.0

    @property
    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started


class _SessionGone(UploadError):
    """The service no longer knows the multipart session (aborted, or another sandbox)."""


class _Refused(Exception):
    """Storage refused a PUT for a reason a retry cannot fix."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Upload:
    """One file's way to a registered material; :meth:`run` does it all (see module docs)."""

    def __init__(self, client: "Client", path: str | os.PathLike[str], *,
                 name: str | None = None, progress: ProgressCallback | None = None,
                 part_size: int | None = None, concurrency: int = 4,
                 multipart_threshold: int = MULTIPART_THRESHOLD, resume: bool = True,
                 state_dir: str | os.PathLike[str] | None = None) -> None:
        self.client = client
        self.path = check_media_file(path)
        self.name = name or self.path.name
        if part_size is not None:
            part_size_for(0, None, part_size)           # refuse a bad size before any request
        if concurrency < 1:
            raise ValidationError("concurrency", "at least 1")
        self.part_size, self.concurrency = part_size, concurrency
        self.threshold, self.resume = multipart_threshold, resume
        self.size = self.path.stat().st_size
        self.state_file = UploadState.location(Path(state_dir) if state_dir else None,
                                               client.transport.account_id, self.path)
        self.progress = UploadProgress(self.name, self.size)
        self.on_progress = progress      # called from the caller's thread only
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._last_report = 0.0
        self._storage = requests.Session()
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=concurrency)
        self._storage.mount("http://", adapter)
        self._storage.mount("https://", adapter)

    # -- public
    def run(self) -> dict[str, Any]:
        """Upload and register; return the material record (wire dict)."""
        try:
            state = UploadState.load(self.state_file) if self.resume else None
            if state is not None and not state.matches(self.path):
                self._abort(state)
                state = None
            if state is not None:
                return self._resume(state)
            return self._fresh()
        finally:
            self._storage.close()

    def abort_pending(self) -> bool:
        """Abort this file's interrupted upload, if one is pending; True if there was one."""
        try:
            state = UploadState.load(self.state_file)
            if state is None:
                return False
            self._abort(state)
            return True
        finally:
            self._storage.close()

    # -- flows
    def _fresh(self) -> dict[str, Any]:
        self.progress = UploadProgress(self.name, self.size)     # a restart begins anew
        self._stop.clear()
        stale = UploadState.load(self.state_file)
        if stale is not None:            # resume=False: the old session must not linger
            self._abort(stale)
        file_hash = file_md5(self.path, self._hashed)
        self._phase("uploading")
        if self.size < self.threshold:
            answer = self._call("materials.gen_upload_url", {"fileHash": file_hash,
                                                             "fileName": self.name})
            if answer.get("material"):
                self.progress.duplicate = True
                return self._done(answer["material"])
            return self._single(file_hash, answer)
        # Only gen-upload-url reports duplicates, and it opens a single-PUT session as it
        # does; a large file would leave that session unused on the service. The material
        # list carries every material's fileHash, so a duplicate is found there instead.
        known = self.client.materials.find_by_hash(file_hash)
        if known is not None:
            self.progress.duplicate = True
            return self._done(known.to_wire())
        started = self._call("materials.multipart_initiate", {"fileHash": file_hash,
                                                              "fileName": self.name})
        part_size = part_size_for(self.size, started.get("recommendedPartSize"), self.part_size)
        return self._multipart(UploadState.begin(self.state_file, self.path, file_hash,
                                                 self.name, started, part_size))

    def _resume(self, state: UploadState) -> dict[str, Any]:
        """Send the missing parts of an interrupted upload, once what it sent is checked.

        Sent bytes no longer the file's (edited in place, size and mtime kept): abort, upload
        afresh. Not an error: those bytes exist nowhere now, and a fresh upload is what the
        caller asked for (and what a size or mtime change gets). All parts sent: the last run
        may have registered the material, then died; it is returned. See ``_resume_checks``.
        """
        self.progress.hashed = self.size
        self.progress.resumed_parts = len(state.etags)
        self.progress.phase = "uploading"       # while checking, ticks show ``verified`` grow
        if first_changed_part(self.path, state, self.size, self._verified) is not None:
            self._abort(state)
            return self._fresh()
        registered = registered_by_last_run(self.client, state, self.size)
        if registered is not None:
            state.delete()     # no abort: the service refuses one of a completed upload
            self.progress.sent = self.progress.resumed_bytes = self.size
            return self._done(registered)
        self._phase("uploading")
        try:
            return self._multipart(state)
        except _SessionGone:
            pass
        # The service forgot the session (aborted, expired, another sandbox): start over.
        state.delete()
        return self._fresh()

    def _single(self, file_hash: str, answer: dict[str, Any]) -> dict[str, Any]:
        self.progress.parts_total = 1
        start = {"fileHash": file_hash, "fileName": self.name}
        current = [answer]

        def renew() -> None:         # the single URL expired: a new session, a new URL
            current[0] = self._call("materials.gen_upload_url", start)

        try:
            self._put_retrying(lambda: current[0]["uploadUrl"], renew, 0, self.size)
        except _Refused as exc:
            raise error_class_for(exc.status)(f"storage refused {self.name!r} ({exc})",
                                              code=exc.status, http_status=exc.status) from None
        except requests.RequestException as exc:
            raise UploadError(f"upload of {self.name!r} failed ({type(exc).__name__}); try "
                              f"again", resumable=False) from None
        self.progress.parts_done = 1
        self._phase("registering")
        answer = current[0]
        return self._done(self._register("materials.complete", {
            "s3Uri": answer["s3Uri"], "fileName": self.name, "materialId": answer["materialId"],
            "fileHash": file_hash}, file_hash))

    def _multipart(self, state: UploadState) -> dict[str, Any]:
        size = state.data["partSize"]
        total = -(-self.size // size)
        done = state.etags
        self.progress.parts_total, self.progress.parts_done = total, len(done)
        self.progress.sent = sum(min(size, self.size - (n - 1) * size) for n in done)
        self.progress.resumed_bytes = self.progress.sent
        missing = [n for n in range(1, total + 1) if n not in done]
        try:
            self._send_parts(state, missing, size)
        except (NotFoundError, _Refused) as exc:
            self._abort(state)
            if isinstance(exc, NotFoundError) or exc.status == 404:
                raise _SessionGone(f"the upload session of {self.name!r} is no longer open",
                                   resumable=False) from None
            raise error_class_for(exc.status)(
                f"storage refused a part of {self.name!r} ({exc}); the upload was aborted",
                code=exc.status, http_status=exc.status) from None
        except (requests.RequestException, APIConnectionError) as exc:
            raise UploadError(
                f"upload of {self.name!r} interrupted after {self.progress.parts_done} of "
                f"{total} parts ({type(exc).__name__}); call upload() again to resume",
                resumable=True, state_file=state.file) from None
        self._phase("registering")
        parts = [{"partNumber": n, "eTag": tag} for n, tag in sorted(state.etags.items())]
        ref = {k: state.data[k] for k in ("materialId", "uploadId", "fileHash", "fileName")}
        try:
            record = self._register("materials.multipart_complete", {**ref, "parts": parts},
                                    state.data["fileHash"])
        except APIError as exc:
            if exc.code in (400, 404, 413, 422):     # cannot finish: never leave it half done
                self._abort(state)
                exc.message += "; dubkit aborted the upload"
                exc.args = (exc.message,)
            raise
        state.delete()
        return self._done(record)

    # -- parts
    def _send_parts(self, state: UploadState, missing: list[int], size: int) -> None:
        urls = PartUrls(self._call, state, missing)
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="dubkit-upload")
        futures = [pool.submit(self._send_part, state, urls, n, size) for n in missing]
        try:
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=_REPORT_EVERY,
                                         return_when=FIRST_COMPLETED)
                for future in finished:
                    future.result()          # the first failure stops the rest
                self._tick(force=bool(finished))   # every finished part is shown at once
        finally:
            self._stop.set()
            pool.shutdown(wait=True, cancel_futures=True)

    def _send_part(self, state: UploadState, urls: PartUrls, number: int, size: int) -> None:
        offset = (number - 1) * size
        sent = self._put_retrying(lambda: urls.get(number), lambda: urls.forget(number),
                                  offset, min(size, self.size - offset))
        if sent is not None:
            state.record_part(number, *sent)
            with self._lock:
                self.progress.parts_done += 1

    def _put_retrying(self, url: Callable[[], str], renew: Callable[[], None], offset: int,
                      length: int) -> tuple[str, str] | None:
        """PUT a slice with the client's retry policy; 403 (expired URL) renews the URL.

        None if the upload is stopping (another part failed, or the caller interrupted).
        """
        retry = self.client.transport.retry
        for attempt in range(retry.max_retries + 1):
            if self._stop.is_set():
                return None
            try:
                return self._put(url(), offset, length)
            except _Refused as exc:
                if exc.status != 403 or attempt == retry.max_retries:
                    raise
                renew()
            except requests.RequestException:
                if attempt == retry.max_retries:
                    raise
                time.sleep(retry.delay(attempt))
        return None

    def _put(self, url: str, offset: int, length: int) -> tuple[str, str]:
        """PUT one slice; (ETag, digest of the bytes sent). Retryable failures: requests errors."""
        body = FileSlice(self.path, offset, length, self._sent)
        try:
            answer = self._storage.put(url, data=body, timeout=(
                self.client.transport.timeout.connect, self.client.transport.timeout.read))
        except requests.RequestException:
            self._sent(-body.sent)
            raise
        finally:
            body.close()
        if answer.status_code in (429, 500, 502, 503, 504):
            self._sent(-body.sent)
            raise requests.ConnectionError(f"storage answered HTTP {answer.status_code}")
        if not 200 <= answer.status_code < 300:
            self._sent(-body.sent)
            raise _Refused(answer.status_code, _storage_message(answer))
        return answer.headers.get("ETag", "").strip().strip('"'), body.digest

    # -- API calls
    def _call(self, op: str, payload: dict[str, Any]) -> Any:
        """Send a call that only opens or describes a session: a lost answer is asked again."""
        try:
            return self.client.call(op, payload)
        except IdempotencyConflictError as exc:
            if not exc.first_attempt_accepted:
                raise
            return self.client.call(op, payload)

    def _register(self, op: str, payload: dict[str, Any], file_hash: str) -> dict[str, Any]:
        """Complete the upload; if the answer was lost, find the material it registered."""
        try:
            return self.client.call(op, payload)
        except (IdempotencyConflictError, APIConnectionError) as exc:
            if isinstance(exc, IdempotencyConflictError) and not exc.first_attempt_accepted:
                raise
            found = self.client.materials.find_by_hash(file_hash)
            if found is None:
                raise UploadError(f"registering {self.name!r} failed ({exc.message}); call "
                                  f"upload() again to finish", resumable=True,
                                  state_file=self.state_file) from None
            return found.to_wire()

    def _abort(self, state: UploadState) -> None:
        """Best effort: tell the service to drop the session; forget it locally either way."""
        ref = {k: state.data.get(k) for k in ("materialId", "uploadId", "fileHash", "fileName")}
        try:
            self.client.call("materials.multipart_abort", ref)
        except DubkitError:
            pass   # gone already, or unreachable: the session just expires there
        state.delete()

    # -- progress
    def _hashed(self, count: int) -> None:
        self.progress.hashed += count
        self._tick()

    def _verified(self, count: int) -> None:
        self.progress.verified += count
        self._tick()

    def _sent(self, count: int) -> None:
        with self._lock:
            self.progress.sent += count

    def _phase(self, phase: str) -> None:
        self.progress.phase = phase
        if phase == "uploading" and self.progress.sending_since is None:
            self.progress.sending_since = time.monotonic()
        if phase in ("registering", "done") and self.progress.sending_until is None:
            self.progress.sending_until = time.monotonic()
        self._tick(force=True)

    def _done(self, record: dict[str, Any]) -> dict[str, Any]:
        self.progress.material_id = record.get("materialId")
        self.progress.ended = time.monotonic()
        self._phase("done")
        return record

    def _tick(self, force: bool = False) -> None:
        """Report progress from the caller's thread (widgets must be updated from it)."""
        now = time.monotonic()
        if self.on_progress is not None and (force or now - self._last_report >= _REPORT_EVERY):
            self._last_report = now
            self.on_progress(self.progress)


def _storage_message(answer: requests.Response) -> str:
    try:
        message = answer.json().get("message")
    except ValueError:
        message = None
    return f"HTTP {answer.status_code}: {message or answer.text[:200] or answer.reason}"
