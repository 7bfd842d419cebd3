"""The upload itself: dedup check, one PUT or parallel parts, completion, resume, abort."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from .._transport import Transport
from ..errors import (
    APIConnectionError,
    APIError,
    DubkitError,
    IdempotencyConflictError,
    NotFoundError,
    ServerError,
    UnexpectedAnswerError,
    ValidationError,
)
from ..schema import (
    CompletedPart,
    GenUploadUrlAnswer,
    Material,
    MultipartComplete,
    MultipartInitiateAnswer,
    UploadComplete,
    UploadStart,
)
from ._part_urls import PartUrls, presigned
from ._resume_checks import first_changed_part, registered_by_last_run
from .files import FileSlice, check_media_file, file_md5, part_size_for
from .progress import REPORT_EVERY, ProgressCallback, ProgressReport, UploadProgress
from .state import UploadState

MULTIPART_THRESHOLD = 32 * 1024 * 1024


SESSION_ASKS = 4  # a session call whose answers keep being lost is asked this often in all


class UploadError(DubkitError):
    """An upload stopped. ``resumable``: calling ``upload`` again continues where it stopped."""

    def __init__(self, message: str, *, resumable: bool, state_file: Path | None = None) -> None:
        super().__init__(message)
        self.resumable = resumable
        self.state_file = state_file


class _AlreadyMaterial(Exception):
    """A renewed session answered that these bytes are a material already: ``record``."""

    def __init__(self, record: dict[str, Any]) -> None:
        super().__init__("already a material")
        self.record = record


class _SessionGone(UploadError):
    """The service no longer knows the multipart session (aborted, or another sandbox)."""


# Storage failures a later run can get past (the transport already retried them): resumable.
_TRANSIENT = (APIConnectionError, ServerError)


class _Refused(Exception):
    """Storage refused a PUT for a reason a retry cannot fix; ``error`` says why."""

    def __init__(self, error: APIError) -> None:
        super().__init__(error.message)
        self.error = error


class Upload:
    """One file's way to a registered material; :meth:`run` does it all (see module docs)."""

    def __init__(
        self,
        transport: Transport,
        path: str | os.PathLike[str],
        *,
        find_by_hash: Callable[[str], dict[str, Any] | None],
        name: str | None = None,
        progress: ProgressCallback | None = None,
        part_size: int | None = None,
        concurrency: int = 4,
        multipart_threshold: int = MULTIPART_THRESHOLD,
        resume: bool = True,
        state_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.transport = transport
        self.find_by_hash = find_by_hash  # the registered material of these bytes, if any
        self.path = check_media_file(path)
        self.name = name or self.path.name
        if part_size is not None:
            part_size_for(0, None, part_size)  # refuse a bad size before any request
        if concurrency < 1:
            raise ValidationError("concurrency", "at least 1")
        self.part_size, self.concurrency = part_size, concurrency
        self.threshold, self.resume = multipart_threshold, resume
        self.size = self.path.stat().st_size
        self.state_file = UploadState.location(
            Path(state_dir) if state_dir else None, transport.account_id, self.path
        )
        self.report = ProgressReport(self.name, self.size, progress)
        self._stop = threading.Event()

    # -- public
    def run(self) -> dict[str, Any]:
        """Upload and register; return the material record (wire dict)."""
        state = UploadState.load(self.state_file) if self.resume else None
        if state is not None and not state.matches(self.path):
            self._abort(state)
            state = None
        if state is not None:
            return self._resume(state)
        return self._fresh()

    def abort_pending(self) -> bool:
        """Abort this file's interrupted upload, if one is pending; True if there was one."""
        state = UploadState.load(self.state_file)
        if state is None:
            return False
        self._abort(state)
        return True

    # -- flows
    def _fresh(self) -> dict[str, Any]:
        self.report.restart()  # a restart begins anew
        self._stop.clear()
        stale = UploadState.load(self.state_file)
        if stale is not None:  # resume=False: the old session must not linger
            self._abort(stale)
        file_hash = file_md5(self.path, self.report.hashed)
        self.report.phase("uploading")
        start = UploadStart(file_hash=file_hash, file_name=self.name)
        if self.size < self.threshold:
            answer = self.transport.read(
                GenUploadUrlAnswer, self._call("materials.gen_upload_url", start)
            )
            if answer.material is not None:
                self.progress.duplicate = True
                return self._done(answer.material.to_wire())
            return self._single(start, answer)
        # Only gen-upload-url reports duplicates, and it opens a single-PUT session as it
        # does; a large file would leave that session unused on the service. The material
        # list carries every material's fileHash, so a duplicate is found there instead.
        known = self.find_by_hash(file_hash)
        if known is not None:
            self.progress.duplicate = True
            return self._done(known)
        started = self.transport.read(
            MultipartInitiateAnswer, self._call("materials.multipart_initiate", start)
        )
        part_size = part_size_for(self.size, started.recommended_part_size, self.part_size)
        return self._multipart(
            UploadState.begin(self.state_file, self.path, file_hash, self.name, started, part_size)
        )

    def _resume(self, state: UploadState) -> dict[str, Any]:
        """Send the missing parts of an interrupted upload, once what it sent is checked.

        Sent bytes no longer the file's (edited in place, size and mtime kept): abort, upload
        afresh. Not an error: those bytes exist nowhere now, and a fresh upload is what the
        caller asked for (and what a size or mtime change gets). All parts sent: the last run
        may have registered the material, then died; it is returned. See ``_resume_checks``.
        """
        self.progress.hashed = self.size
        self.progress.resumed_parts = len(state.etags)
        self.progress.phase = "uploading"  # while checking, ticks show ``verified`` grow
        if first_changed_part(self.path, state, self.size, self.report.verified) is not None:
            self._abort(state)
            return self._fresh()
        registered = registered_by_last_run(self.find_by_hash, state, self.size)
        if registered is not None:
            state.delete()  # no abort: the service refuses one of a completed upload
            self.progress.sent = self.progress.resumed_bytes = self.size
            return self._done(registered)
        self.report.phase("uploading")
        try:
            return self._multipart(state)
        except _SessionGone:
            pass
        # The service forgot the session (aborted, expired, another sandbox): start over.
        state.delete()
        return self._fresh()

    def _session(self, answer: GenUploadUrlAnswer) -> GenUploadUrlAnswer:
        """A gen-upload-url answer that opened a session: its ids and URL, checked."""
        if not answer.s3_uri or not answer.material_id:
            raise UnexpectedAnswerError(
                "the answer has no s3Uri or materialId to upload to",
                operation="materials.gen_upload_url",
                **self.transport.answered(),
            )
        presigned(answer.upload_url, "materials.gen_upload_url", self.transport.answered())
        return answer

    def _single(self, start: UploadStart, answer: GenUploadUrlAnswer) -> dict[str, Any]:
        self.progress.parts_total = 1
        current = [self._session(answer)]

        def renew() -> None:
            # The URL expired: a new session with a URL of its own, completed by its own ids
            # (the old session never gets the bytes). Another upload may have registered
            # these bytes meanwhile: then the answer is that material, and nothing is sent.
            fresh = self.transport.read(
                GenUploadUrlAnswer, self._call("materials.gen_upload_url", start)
            )
            if fresh.material is not None:
                raise _AlreadyMaterial(fresh.material.to_wire())
            current[0] = self._session(fresh)

        try:
            self._put_retrying(lambda: current[0].upload_url or "", renew, 0, self.size)
        except _AlreadyMaterial as known:
            self.progress.duplicate = True
            return self._done(known.record)
        except _TRANSIENT as exc:
            raise UploadError(
                f"upload of {self.name!r} failed ({type(exc).__name__}); try again", resumable=False
            ) from None
        except _Refused as exc:
            given_by = self.transport.answered()  # the gen-upload-url answer of the URL
            raise _reworded(
                exc.error, f"storage refused {self.name!r}", given_by=given_by
            ) from None
        self.progress.parts_done = 1
        self.report.phase("registering")
        sent_to = current[0]
        return self._done(
            self._register(
                "materials.complete",
                UploadComplete(
                    **start.model_dump(), s3_uri=sent_to.s3_uri, material_id=sent_to.material_id
                ),
                start.file_hash,
            )
        )

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
        except UnexpectedAnswerError as exc:  # the service's answer cannot finish this upload
            self._abort(state)
            exc.message += "; dubkit aborted the upload"
            exc.args = (exc.message,)
            raise
        except (NotFoundError, _Refused) as exc:
            given_by = self.transport.answered()  # the presign answer of the refused URL
            self._abort(state)
            refusal = exc.error if isinstance(exc, _Refused) else exc
            if isinstance(refusal, NotFoundError):
                raise _SessionGone(
                    f"the upload session of {self.name!r} is no longer open", resumable=False
                ) from None
            raise _reworded(
                refusal,
                f"storage refused a part of {self.name!r}",
                "; the upload was aborted",
                given_by,
            ) from None
        except _TRANSIENT as exc:
            raise UploadError(
                f"upload of {self.name!r} interrupted after {self.progress.parts_done} of "
                f"{total} parts ({type(exc).__name__}); call upload() again to resume",
                resumable=True,
                state_file=state.file,
            ) from None
        self.report.phase("registering")
        parts = [CompletedPart(part_number=n, e_tag=tag) for n, tag in sorted(state.etags.items())]
        try:
            record = self._register(
                "materials.multipart_complete",
                MultipartComplete(**state.ref().model_dump(), parts=parts),
                state.data["fileHash"],
            )
        except APIError as exc:
            if exc.code in (400, 404, 413, 422):  # cannot finish: never leave it half done
                self._abort(state)
                exc.message += "; dubkit aborted the upload"
                exc.args = (exc.message,)
            raise
        state.delete()
        return self._done(record)

    # -- parts
    def _send_parts(self, state: UploadState, missing: list[int], size: int) -> None:
        urls = PartUrls(self._call, state, missing, self.transport.answered)
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="dubkit-upload")
        futures = [pool.submit(self._send_part, state, urls, n, size) for n in missing]
        try:
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=REPORT_EVERY, return_when=FIRST_COMPLETED)
                for future in finished:
                    future.result()  # the first failure stops the rest
                self.report.tick(force=bool(finished))  # every finished part is shown at once
        finally:
            self._stop.set()
            pool.shutdown(wait=True, cancel_futures=True)

    def _send_part(self, state: UploadState, urls: PartUrls, number: int, size: int) -> None:
        offset = (number - 1) * size
        sent = self._put_retrying(
            lambda: urls.get(number),
            lambda: urls.forget(number),
            offset,
            min(size, self.size - offset),
        )
        if sent is not None:
            state.record_part(number, *sent)
            self.report.part_done()

    def _put_retrying(
        self, url: Callable[[], str], renew: Callable[[], None], offset: int, length: int
    ) -> tuple[str, str] | None:
        """PUT a slice; 403 (an expired presigned URL) renews the URL and tries again.

        The transport retries connection failures, 5xx and throttling itself. None if the
        upload is stopping (another part failed, or the caller interrupted).
        """
        for attempt in range(self.transport.retry.max_retries + 1):
            if self._stop.is_set():
                return None
            try:
                return self._put(url(), offset, length)
            except _Refused as exc:
                if exc.error.http_status != 403 or attempt == self.transport.retry.max_retries:
                    raise
                renew()
        return None

    def _put(self, url: str, offset: int, length: int) -> tuple[str, str]:
        """PUT one slice through the transport (a fresh read of the slice per attempt, the
        bytes of a failed attempt taken back from the progress); (ETag, digest of the bytes
        sent). A refusal a retry cannot fix is :class:`_Refused`."""
        slices: list[FileSlice] = []

        def body() -> FileSlice:
            if slices:
                self.report.sent(-slices[-1].sent)
                slices[-1].close()
            slices.append(FileSlice(self.path, offset, length, self.report.sent))
            return slices[-1]

        try:
            answer = self.transport.send("PUT", url, data=body)
        except DubkitError as exc:
            if slices:
                self.report.sent(-slices[-1].sent)
            if isinstance(exc, _TRANSIENT) or not isinstance(exc, APIError):
                raise
            raise _Refused(exc) from None
        finally:
            if slices:
                slices[-1].close()
        return answer.headers.get("ETag", "").strip().strip('"'), slices[-1].digest

    # -- API calls
    def _call(self, op: str, payload: Any) -> Any:
        """Send a call that only opens or describes a session: a lost answer is asked again,
        with a new key (it costs nothing and makes nothing usable), up to
        :data:`SESSION_ASKS` times in all."""
        for asked in range(1, SESSION_ASKS + 1):
            try:
                return self.transport.call(op, payload)
            except IdempotencyConflictError as exc:
                if not exc.first_attempt_accepted or asked == SESSION_ASKS:
                    raise
        raise AssertionError("unreachable")

    def _register(self, op: str, payload: Any, file_hash: str) -> dict[str, Any]:
        """Complete the upload; if the answer was lost, find the material it registered."""
        try:
            record: dict[str, Any] = self.transport.call(op, payload)
            return record
        except (IdempotencyConflictError, APIConnectionError) as exc:
            if isinstance(exc, IdempotencyConflictError) and not exc.first_attempt_accepted:
                raise
            found = self.find_by_hash(file_hash)
            if found is None:
                raise UploadError(
                    f"registering {self.name!r} failed ({exc.message}); call "
                    f"upload() again to finish",
                    resumable=True,
                    state_file=self.state_file,
                ) from None
            return found

    def _abort(self, state: UploadState) -> None:
        """Best effort: tell the service to drop the session; forget it locally either way."""
        try:
            self.transport.call("materials.multipart_abort", state.ref())
        except DubkitError:
            pass  # gone already, or unreachable: the session just expires there
        state.delete()

    @property
    def progress(self) -> UploadProgress:
        return self.report.progress

    def _done(self, record: dict[str, Any]) -> dict[str, Any]:
        self.report.done(self.transport.read(Material, record).material_id)
        return record


def _reworded(
    error: APIError, what: str, after: str = "", given_by: dict[str, Any] | None = None
) -> APIError:
    """``error`` (same class and codes) saying what was refused: ``what (HTTP 4xx: …)after``.

    A storage answer has no ``req_id``; the error keeps the one of ``given_by``, the API answer
    that gave the refused URL, so support can trace it."""
    error.message = f"{what} ({error.message}){after}"
    error.args = (error.message,)
    if error.req_id is None and given_by:
        error.req_id = given_by.get("req_id")
    return error
