"""The sandbox's own admin API (``/_sandbox``, not the service's interface): its request bodies
and the answers :class:`dubkit.SandboxHandle` reads. Both sides use these models, so a field
is named once; they are not exported from :mod:`dubkit.schema` (the interface's models).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from .base import MIN_PART_SIZE, Wire


class RouteBody(Wire):
    """A sandbox admin route's request body, built when defined rather than on first use: the
    sandbox's FastAPI wraps it in an adapter of its own as a route is declared, and that adapter,
    left deferred, would build at the first request and warn there about its ``body`` alias."""

    model_config = ConfigDict(defer_build=False)


class NewKey(RouteBody):
    name: str = "extra"
    credits: float = Field(default=1_000_000, ge=0)
    api_key: str | None = Field(default=None, pattern=r"^sk_[A-Za-z0-9_]{16,100}$")
    student: bool = False  # a class roster's key: its refusals say "ask your teacher"
    max_tasks: int | None = Field(default=None, ge=1)
    max_storage: int | None = Field(default=None, ge=1)


class KeyUpdate(RouteBody):
    """A key's credits and quotas (only the fields sent change; ``0`` lifts a limit)."""

    api_key: str
    credits: float | None = Field(default=None, ge=0)
    add_credits: float | None = Field(default=None, gt=0)  # a top-up, added atomically
    disabled: bool | None = None
    max_tasks: int | None = Field(default=None, ge=0)
    max_storage: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _one_way_to_change_credits(self) -> KeyUpdate:
        if self.credits is not None and self.add_credits is not None:
            raise ValueError("give credits (set them) or addCredits (a top-up), not both")
        return self


class KeyReset(RouteBody):
    """A fresh start for one key: its work forgotten, its credits set to ``credits``."""

    api_key: str
    credits: float | None = Field(default=None, ge=0)


class KeyRef(RouteBody):
    api_key: str


class KeyMade(Wire):
    api_key: str
    webhook_secret: str | None = None


class KeyInfo(Wire):
    """One key as listed: masked."""

    api_key: str
    name: str | None = None
    credits: float | None = None
    webhook_url: str | None = None
    student: bool = False
    disabled: bool = False
    max_tasks: int | None = None
    max_storage: int | None = None


class TaskSeen(Wire):
    """A task in the class report: as ``tasks/detail`` answers it, with its times."""

    task_id: str
    task_type: str
    status: str
    created_at: str
    updated_at: str
    result: dict[str, Any] | None = None
    request: dict[str, Any] | None = None  # the create as sent (its texts, voices, locales)

    @property
    def error_message(self) -> str:
        """A failed task's message (``''`` for any other)."""
        return str((self.result or {}).get("errorMessage") or "")


class StudentReport(Wire):
    """One key in the class report (``GET /_sandbox/class``): what its holder has done."""

    name: str
    api_key: str  # masked
    credits: float  # left
    spent: float  # charged less refunded, over every task
    disabled: bool = False
    max_tasks: int | None = None
    max_storage: int | None = None
    stored: int = 0  # uploaded bytes kept
    last_seen: float | None = None  # epoch seconds of the last call with the key
    tasks: dict[str, dict[str, int]] = Field(default_factory=dict)  # task type -> status -> n
    errors: list[TaskSeen] = Field(default_factory=list)  # the latest failed tasks
    latest: list[TaskSeen] = Field(default_factory=list)  # the latest finished speech and dubs


class ClassReport(Wire):
    students: list[StudentReport]


class SandboxInfo(Wire):
    url: str | None = None
    api_key: str
    webhook_secret: str | None = None
    webhook_url: str | None = None
    data_dir: str
    timing: dict[str, Any] | None = None
    faults: dict[str, Any] | None = None


class Credits(RouteBody):
    api_key: str | None = None
    credits: float = Field(ge=0)


class WebhookSettings(RouteBody):
    api_key: str | None = None
    url: str | None = None
    rotate_secret: bool = False
    overlap_seconds: float = 3600


class WebhookSecrets(Wire):
    url: str | None = None
    secret: str | None = None
    previous_secret: str | None = None  # during a rotation's overlap


class Timing(RouteBody):
    mode: Literal["immediate", "seconds", "polls"]
    value: float = 0


class Faults(RouteBody):
    """Rates 0..1 of each fault on the matching ``paths`` (all API paths without them)."""

    drop_after_commit: float = Field(default=0, ge=0, le=1)
    error502_before: float = Field(default=0, ge=0, le=1)
    error502_after: float = Field(default=0, ge=0, le=1)
    latency_ms: float = Field(default=0, ge=0)
    crash_after_handler: float = Field(default=0, ge=0, le=1)
    # A 429 before any work, with Retry-After in seconds, or as an HTTP date when asked.
    error429: float = Field(default=0, ge=0, le=1)
    retry_after: int = Field(default=1, ge=0)
    retry_after_as_date: bool = False
    # A dub made while this is set lays these line ids this many dB off (a take quieter or
    # louder than the rest, as a service's voice can give): what a dub's check must find.
    line_gain_db: dict[str, float] = Field(default_factory=dict)
    paths: list[str] | None = None
    seed: int | None = None


class ThrottleLimits(RouteBody):
    """Per-key limits (see :mod:`dubkit.sandbox.throttle`); ``0`` turns one off."""

    rate: float | None = Field(default=None, ge=0)
    burst: int | None = Field(default=None, ge=1)
    concurrency: int | None = Field(default=None, ge=0)


class Limits(RouteBody):
    body_limit: int | None = Field(default=None, ge=1)
    idempotency_window: float | None = Field(default=None, gt=0)
    upload_limit: int | None = Field(default=None, ge=1)


class FetchPolicy(RouteBody):
    remote: bool | None = None
    schemes: list[Literal["http", "https"]] | None = None
    allow: list[str] | None = None  # hosts, host:port or networks that may be non-public


class DeliverySchedule(RouteBody):
    base_delay: float | None = Field(default=None, gt=0)
    max_delay: float | None = Field(default=None, gt=0)
    max_attempts: int | None = Field(default=None, ge=1)
    timeout: float | None = Field(default=None, gt=0)
    jitter: float | None = Field(default=None, ge=0, lt=1)


class Redeliver(RouteBody):
    task_id: str | None = None
    ids: list[int] | None = None


class UploadSession(Wire):
    material_id: str | None = None
    kind: str | None = None
    state: str | None = None
    file_name: str | None = None
    created_at: str | None = None


class DeliveryAttempt(Wire):
    attempt: int | None = None
    at: float | None = None
    url: str | None = None
    status_code: int | None = None
    error: str | None = None
    duration_ms: float | None = None
    secret: str | None = None  # which secret signed it: "current" or "previous"


class OutboxRow(Wire):
    """One webhook in the sandbox's outbox, with its attempts; no secrets, no body."""

    id: int
    api_key: str  # masked
    task_id: str | None = None
    event: str | None = None
    pipeline_key: str | None = None
    state: str | None = None
    attempts: int | None = None
    next_at: float | None = None
    last_error: str | None = None
    created_at: float | None = None
    delivered_at: float | None = None
    log: list[DeliveryAttempt] = Field(default_factory=list)


class StorageSettings(RouteBody):
    presign_ttl: float | None = Field(default=None, gt=0)
    recommended_part_size: int | None = Field(default=None, ge=MIN_PART_SIZE)
    put_latency_ms: float | None = Field(default=None, ge=0)


class StorageState(Wire):
    """The object storage's settings in force, and the PUTs it refused (by reason)."""

    presign_ttl: float
    recommended_part_size: int
    put_latency_ms: float
    upload_limit: int
    min_part_size: int
    refused: dict[str, int] = Field(default_factory=dict)


class StoredPart(Wire):
    part_number: int
    size: int
    e_tag: str | None = None
    puts: int = 0  # how many PUTs the part took


class UploadState(Wire):
    """One multipart session of the object storage: its state and parts."""

    upload_id: str
    state: str | None = None
    parts: list[StoredPart] = Field(default_factory=list)


class PartQuery(Wire):
    """The query of a presigned part URL: which upload and part it may write (with its
    ``expires`` and ``signature``, which are one word each)."""

    upload_id: str = ""
    part_number: str = ""
