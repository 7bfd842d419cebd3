"""The customer's own bucket (``output`` of a media-translation request, from the vendor's
guides, interface §8.2, which do not show its fields).

The sandbox has no cloud storage. It reads ``output.bucket`` (a bucket name) and, if given,
``output.prefix`` (a folder in it), and delivers the dub's files into a local folder that
stands for that bucket: ``files/buckets/<key>/<bucket>/<prefix>/<task id>/`` of its data
dir, one folder per key (keys sharing a sandbox never write into each other's buckets),
served under ``/files/`` like every result. The result says so (``delivery``, a sandbox
extra: the bucket, the prefix, each object's key and URL, the fields it did not use). It
never accepts ``output`` silently: one without a bucket name it can use is a 400 naming the
field, before anything is charged. The values of fields it does not use (credentials, a
region) are never stored, echoed or logged; only their names are said.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass
from typing import Any

from ..backend import Backend
from ..service_error import ServiceError

BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")  # S3's rule, which GCS shares
PREFIX_PART = re.compile(r"^[\w.-]+$")


@dataclass(frozen=True)
class Bucket:
    """Where a dub's files go: a bucket name, a prefix, and the fields left unused."""

    name: str
    prefix: str
    unused: tuple[str, ...]

    @classmethod
    def of(cls, output: dict[str, Any] | None) -> Bucket | None:
        """The bucket ``output`` names, None without ``output``; a 400 naming the field when
        the sandbox cannot deliver to it."""
        if output is None:
            return None
        name = output.get("bucket")
        if not isinstance(name, str) or not BUCKET_NAME.match(name):
            raise ServiceError(
                400,
                "invalid request: output.bucket: the sandbox delivers results to a bucket named "
                "by output.bucket (3-63 lowercase letters, digits, dots, hyphens), kept as a "
                f"local folder; it cannot deliver to {_shown(output)}",
            )
        prefix = output.get("prefix") or ""
        parts = [p for p in prefix.split("/") if p] if isinstance(prefix, str) else None
        if parts is None or not all(PREFIX_PART.match(p) and p not in (".", "..") for p in parts):
            raise ServiceError(
                400,
                "invalid request: output.prefix: a folder in the bucket, as names of letters, "
                "digits, '.', '-' and '_' joined by '/' (no '..')",
            )
        unused = tuple(sorted(k for k in output if k not in ("bucket", "prefix")))
        return cls(name, "/".join(parts), unused)

    def deliver(
        self, backend: Backend, api_key: str, task_id: str, result: dict[str, Any]
    ) -> dict[str, Any]:
        """Copy the dub's files (the video, the audio, the subtitles) into the bucket's
        folder; what the result's ``delivery`` says."""
        scope = hashlib.sha256(api_key.encode()).hexdigest()[:16]
        folder = "/".join(p for p in ("buckets", scope, self.name, self.prefix, task_id) if p)
        objects = []
        for url in _files_of(result):
            relpath = url.removeprefix(backend.file_url(""))
            if relpath == url or ".." in relpath.split("/"):
                continue  # not one of this sandbox's files
            name = relpath.rsplit("/", 1)[-1]
            target = backend.file_path(f"{folder}/{name}")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(backend.file_path(relpath), target)
            key = "/".join(p for p in (self.prefix, task_id, name) if p)
            objects.append({"key": key, "url": backend.file_url(f"{folder}/{name}")})
        return {
            "bucket": self.name,
            "prefix": self.prefix,
            "location": f"bucket://{self.name}/{'/'.join(p for p in (self.prefix, task_id) if p)}/",
            "objects": objects,
            "unusedFields": list(self.unused),
            "note": "the sandbox's stand-in for your bucket: a folder of its own, served under /files/",
        }


def _files_of(result: dict[str, Any]) -> list[str]:
    build = result.get("build") or {}
    subtitles = build.get("subtitles") or {}
    found = [
        (build.get("video") or {}).get("url"),
        (build.get("audio") or {}).get("url"),
        subtitles.get("srt"),
        subtitles.get("vtt"),
    ]
    return [url for url in found if isinstance(url, str) and url]


def _shown(output: dict[str, Any]) -> str:
    """What ``output`` holds, by field names only (values may be credentials)."""
    return "an output with " + (", ".join(sorted(map(str, output))) or "no fields")
