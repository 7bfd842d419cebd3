"""Upload sessions: the handle an upload has until its bytes become a material.

gen-upload-url and multipart/initiate open one (``materialId`` plus where the bytes go); every
later call about the upload is checked against what the session was opened with, and one
completion claims it (``open`` -> ``completing`` -> ``completed``, or back to ``open`` when the
bytes are not right yet; ``aborted`` and ``failed`` are final). See
:mod:`dubkit.sandbox.products.materials` for the choices these follow.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from ...schema import UploadStart
from .. import storage
from ..backend import Backend, new_id, now_iso
from ..database import Database
from ..service_error import ServiceError

SCHEMA = """
CREATE TABLE IF NOT EXISTS material_uploads (
    material_id TEXT PRIMARY KEY, api_key TEXT NOT NULL, kind TEXT NOT NULL, upload_id TEXT,
    file_hash TEXT NOT NULL, file_name TEXT NOT NULL, object_key TEXT NOT NULL,
    state TEXT NOT NULL, created_at TEXT NOT NULL);
"""


def _table(backend: Backend) -> Database:
    return backend.db.ensure(SCHEMA)


def _safe_name(file_name: str) -> str:
    stem, dot, ext = Path(file_name).name.rpartition(".")
    stem, ext = (stem, ext) if dot else (ext, "")
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "file"
    ext = re.sub(r"[^A-Za-z0-9]+", "", ext)[:10]
    return f"{clean[:80]}.{ext}" if ext else clean[:80]


def open_session(backend: Backend, api_key: str, body: UploadStart, kind: str) -> dict[str, Any]:
    """A new ``single`` or ``multipart`` session for ``body``'s file; its row."""
    material_id = new_id("mat_")
    key = f"materials/{material_id}/{_safe_name(body.file_name)}"
    upload_id = storage.create_multipart(backend, key) if kind == "multipart" else None
    _table(backend).execute(
        "INSERT INTO material_uploads (material_id, api_key, kind, upload_id, file_hash, "
        "file_name, object_key, state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'open', ?)",
        (
            material_id,
            api_key,
            kind,
            upload_id,
            body.file_hash.lower(),
            body.file_name,
            key,
            now_iso(),
        ),
    )
    return session_row(backend, api_key, material_id)  # type: ignore[return-value]


def sessions_of(backend: Backend, api_key: str) -> list[dict[str, Any]]:
    """Every upload session of a key, oldest first (for the admin view)."""
    return [
        dict(r)
        for r in _table(backend).all(
            "SELECT * FROM material_uploads WHERE api_key = ? ORDER BY created_at, rowid",
            (api_key,),
        )
    ]


def session_row(backend: Backend, api_key: str, material_id: str) -> dict[str, Any] | None:
    row = _table(backend).one(
        "SELECT * FROM material_uploads WHERE material_id = ? AND api_key = ?",
        (material_id, api_key),
    )
    return dict(row) if row else None


def checked_session(
    backend: Backend,
    api_key: str,
    material_id: str | None,
    kind: str,
    file_hash: str | None,
    upload_id: str | None = None,
    *,
    need_hash: bool = True,
) -> dict[str, Any]:
    """The caller's upload session, checked against what the request claims about it."""
    if not material_id:
        raise ServiceError(
            400,
            "invalid request: materialId: is required (from gen-upload-url or multipart/initiate)",
        )
    session = session_row(backend, api_key, material_id)
    if session is None:
        raise ServiceError(404, f"upload not found: materialId {material_id}")
    if session["kind"] != kind:
        other = "multipart/complete" if session["kind"] == "multipart" else "upload/complete"
        raise ServiceError(
            400,
            f"invalid request: materialId: {material_id} is a "
            f"{session['kind']} upload; finish it with {other}",
        )
    if kind == "multipart" and upload_id != session["upload_id"]:
        raise ServiceError(
            400,
            "invalid request: uploadId: "
            + (
                "is required"
                if not upload_id
                else f"{upload_id!r} is not the upload of materialId {material_id}"
            ),
        )
    if (file_hash or need_hash) and (file_hash or "").lower() != session["file_hash"]:
        raise ServiceError(
            400,
            f"invalid request: fileHash: must equal the hash given when the "
            f"upload started ({session['file_hash']})",
        )
    return session


def claim(backend: Backend, session: dict[str, Any]) -> None:
    """Move an open session to 'completing' so two completions cannot both register it."""
    state = session["state"]
    if state == "completed":
        raise ServiceError(
            400,
            f"upload already completed: material {session['material_id']} "
            f"is registered (see material/list)",
        )
    cursor = _table(backend).execute(
        "UPDATE material_uploads SET state = 'completing' WHERE material_id = ? AND state = 'open'",
        (session["material_id"],),
    )
    if cursor.rowcount == 0:
        # 400, not 409: 409 means a reused idempotency key to every client of the service.
        raise ServiceError(
            404 if state in ("aborted", "failed") else 400,
            f"upload {session['material_id']} is {state}, not open",
        )


def set_state(backend: Backend, material_id: str, state: str) -> None:
    _table(backend).execute(
        "UPDATE material_uploads SET state = ? WHERE material_id = ?", (state, material_id)
    )


def mark_completed(db: sqlite3.Connection, material_id: str) -> None:
    """Close the session inside the transaction that registers its material."""
    db.execute(
        "UPDATE material_uploads SET state = 'completed' WHERE material_id = ?", (material_id,)
    )
