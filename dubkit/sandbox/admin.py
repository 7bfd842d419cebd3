"""Admin endpoints under ``/_sandbox`` (moto-style): tests, benchmarks and demos steer the
sandbox through them. They are not part of the service's interface. Each needs the data dir's
admin token, and state-changing ones refuse calls from web pages (:mod:`dubkit.sandbox.guard`);
:class:`dubkit.SandboxHandle` sends the token. Answers carry full keys and secrets only
where their holder needs them (``/info``, a new key, a webhook's secrets); lists mask them.

=====================  ==================================================================
``GET  /_sandbox/info``      default key, its webhook secret, settings
``POST /_sandbox/reset``     forget everything; a fresh default key
``GET|POST /_sandbox/keys``  list keys / create one ``{name, credits, apiKey?, student?,
                             maxTasks?, maxStorage?}``
``POST /_sandbox/keys/update`` ``{apiKey, credits?, addCredits?, disabled?, maxTasks?,
                             maxStorage?}`` (see :mod:`dubkit.sandbox.accounts`)
``POST /_sandbox/keys/reset`` ``{apiKey, credits?}``: the key's work forgotten
``POST /_sandbox/keys/remove`` ``{apiKey}``: the key stops working; its work is forgotten
``GET  /_sandbox/class``     the teacher's view: each student's use (``?all=1``: every key)
``GET|POST /_sandbox/credits`` a key's credits ``?apiKey=`` / set them ``{apiKey?, credits}``
``POST /_sandbox/webhook``   ``{apiKey?, url?, rotateSecret?, overlapSeconds?}`` -> secrets
``POST /_sandbox/timing``    ``{mode: immediate|seconds|polls, value}``
``POST /_sandbox/faults``    ``{dropAfterCommit, error502Before, error502After, latencyMs,
                             crashAfterHandler, error429, retryAfter, retryAfterAsDate, paths,
                             seed}`` (rates 0..1; ``{}`` clears;
                             seed: repeatable; crashAfterHandler: a 500 after the work, as
                             a sandbox bug would, which must charge nothing and leave no task)
``GET|POST /_sandbox/fetch`` which reference URLs are fetched ``{remote, schemes, allow}``
``POST /_sandbox/limits``    ``{bodyLimit?, idempotencyWindow?}``
``GET|POST /_sandbox/throttle`` per-key limits ``{rate?, burst?, concurrency?}`` (0: off) and
                             the 429s each key got (see :mod:`dubkit.sandbox.throttle`)
``GET  /_sandbox/deliveries`` outbox rows with their attempts; ``?taskId=&state=&apiKey=``
``POST /_sandbox/deliveries/redeliver`` ``{taskId? | ids?}``: send again, same body (a replay)
``GET  /_sandbox/uploads``   a key's material upload sessions ``?apiKey=``
``PUT  /_sandbox/replayed-files/<path>`` bytes to serve at ``/files/<path>`` (a replayed
                             lesson's media; see :mod:`dubkit.sandbox.replayed_files`)
``GET  /_sandbox/contract``  strict contract mode: ``{strict, mismatches}``
``GET|POST /_sandbox/delivery`` retry schedule ``{baseDelay, maxDelay, maxAttempts, timeout,
                             jitter}`` (partial updates; see :mod:`dubkit.sandbox.delivery`)
=====================  ==================================================================
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from .._util.masking import mask_key
from ..schema.sandbox_admin import (
    Credits,
    DeliveryAttempt,
    DeliverySchedule,
    Faults,
    FetchPolicy,
    KeyInfo,
    KeyMade,
    KeyRef,
    KeyReset,
    KeyUpdate,
    Limits,
    NewKey,
    OutboxRow,
    Redeliver,
    SandboxInfo,
    ThrottleLimits,
    Timing,
    UploadSession,
    WebhookSecrets,
    WebhookSettings,
)
from . import accounts, class_report, delivery, references, replayed_files
from .backend import Backend, new_secret
from .envelope import envelope
from .guard import read_body
from .products.upload_sessions import sessions_of
from .service_error import ServiceError

admin_router = APIRouter(prefix="/_sandbox", include_in_schema=True)


def _backend(request: Request) -> Backend:
    return request.app.state.backend


def _key(backend: Backend, api_key: str | None) -> str:
    return api_key or backend.default_key


@admin_router.get("/info")
def info(request: Request) -> dict[str, Any]:
    backend = _backend(request)
    key = backend.key(backend.default_key) or {}
    return SandboxInfo(
        url=backend.base_url,
        api_key=backend.default_key,
        webhook_secret=key.get("webhook_secret"),
        webhook_url=key.get("webhook_url"),
        data_dir=str(backend.data_dir),
        timing=backend.setting("timing"),
        faults=backend.setting("faults", {}),
    ).model_dump(by_alias=True)


@admin_router.get("/uploads")
def uploads(request: Request, api_key: str | None = Query(None, alias="apiKey")) -> dict[str, Any]:
    backend = _backend(request)
    sessions = [
        UploadSession(
            material_id=s["material_id"],
            kind=s["kind"],
            state=s["state"],
            file_name=s["file_name"],
            created_at=s["created_at"],
        ).model_dump(by_alias=True)
        for s in sessions_of(backend, _key(backend, api_key))
    ]
    return {"sessions": sessions}


@admin_router.get("/contract")
def contract_mismatches(request: Request) -> dict[str, Any]:
    """Strict contract mode's record (see :mod:`dubkit.sandbox.contract_log`)."""
    log = _backend(request).contract_log
    return {"strict": log.strict, "mismatches": log.mismatches()}


@admin_router.post("/reset")
def reset(request: Request) -> dict[str, Any]:
    backend = _backend(request)
    backend.reset()
    return info(request)


@admin_router.get("/keys")
def list_keys(request: Request) -> list[dict[str, Any]]:
    """Every key, masked (the full key was answered once, when it was made)."""
    return [_key_info(k) for k in _backend(request).keys()]


def _key_info(key: dict[str, Any]) -> dict[str, Any]:
    return KeyInfo(
        api_key=mask_key(key["api_key"]),
        name=key["name"],
        credits=key["credits"],
        webhook_url=key["webhook_url"],
        student=bool(key["class_name"]),
        disabled=bool(key["disabled"]),
        max_tasks=key["max_tasks"],
        max_storage=key["max_storage"],
    ).model_dump(by_alias=True)


@admin_router.post("/keys")
def create_key(body: NewKey, request: Request) -> dict[str, Any]:
    backend = _backend(request)
    key = backend.create_key(body.name, body.credits, api_key=body.api_key)
    if body.student or body.max_tasks or body.max_storage is not None:
        _update_key(
            backend,
            KeyUpdate(api_key=key, max_tasks=body.max_tasks, max_storage=body.max_storage),
            student=body.name if body.student else None,
        )
    made = KeyMade(api_key=key, webhook_secret=(backend.key(key) or {}).get("webhook_secret"))
    return made.model_dump(by_alias=True)


def _known_key(backend: Backend, api_key: str) -> dict[str, Any]:
    row = backend.key(api_key)
    if row is None:
        raise ServiceError(404, "no such key in this sandbox")
    return row


def _on_key(backend: Backend, api_key: str, change: Callable[[], object]) -> Any:
    """Run ``change`` on a known key and answer the key as it is after; 404 for another."""
    try:
        _known_key(backend, api_key)
    except ServiceError as refusal:
        return envelope(refusal.code, refusal.message)
    change()
    row = backend.key(api_key)
    return _key_info(row) if row else {"removed": True}


def _update_key(backend: Backend, body: KeyUpdate, *, student: str | None = None) -> None:
    """Only the fields sent change; a quota of ``0`` is lifted (stored as no limit)."""
    changes: list[tuple[str, Any]] = []  # (assignment, its value)
    if body.credits is not None:
        changes.append(("credits = ?", body.credits))
    if body.add_credits:
        changes.append(("credits = credits + ?", body.add_credits))
    if body.disabled is not None:
        changes.append(("disabled = ?", int(body.disabled)))
    if body.max_tasks is not None:
        changes.append(("max_tasks = ?", body.max_tasks or None))
    if body.max_storage is not None:
        changes.append(("max_storage = ?", body.max_storage or None))
    if student is not None:
        changes.append(("class_name = ?", student))
    if changes:
        backend.db.execute(
            f"UPDATE keys SET {', '.join(a for a, _ in changes)} WHERE api_key = ?",
            (*(v for _, v in changes), body.api_key),
        )


@admin_router.post("/keys/update")
def update_key(body: KeyUpdate, request: Request) -> Any:
    """Top up, set credits, disable or enable, set or lift (``0``) a quota."""
    backend = _backend(request)
    return _on_key(backend, body.api_key, lambda: _update_key(backend, body))


@admin_router.post("/keys/reset")
def reset_key(body: KeyReset, request: Request) -> Any:
    """A fresh start for one student: their work forgotten, credits set back."""
    backend = _backend(request)

    def reset() -> None:
        accounts.forget_work(backend, body.api_key)
        _update_key(backend, KeyUpdate(api_key=body.api_key, credits=body.credits))

    return _on_key(backend, body.api_key, reset)


@admin_router.post("/keys/remove")
def remove_key(body: KeyRef, request: Request) -> Any:
    """The key stops working (401) and its work is forgotten; the default key stays."""
    backend = _backend(request)
    if body.api_key == backend.default_key:
        return envelope(400, "the sandbox's default key cannot be removed (disable it instead)")

    def remove() -> None:
        accounts.forget_work(backend, body.api_key)
        backend.db.execute("DELETE FROM keys WHERE api_key = ?", (body.api_key,))

    return _on_key(backend, body.api_key, remove)


@admin_router.get("/class")
def class_view(request: Request, everyone: bool = Query(False, alias="all")) -> dict[str, Any]:
    """Every student's use of the sandbox (see :mod:`dubkit.sandbox.class_report`)."""
    return class_report.report(_backend(request), everyone=everyone).model_dump(by_alias=True)


@admin_router.get("/credits")
def get_credits(
    request: Request, api_key: str | None = Query(None, alias="apiKey")
) -> dict[str, Any]:
    backend = _backend(request)
    row = backend.key(_key(backend, api_key))
    return {"credits": row["credits"] if row else None}


@admin_router.post("/credits")
def set_credits(body: Credits, request: Request) -> dict[str, Any]:
    backend = _backend(request)
    backend.set_credits(_key(backend, body.api_key), body.credits)
    return {"credits": body.credits}


@admin_router.post("/webhook")
def set_webhook(body: WebhookSettings, request: Request) -> dict[str, Any]:
    """Point a key's webhooks at ``url``; optionally rotate its secret.

    On rotation the old secret is reported as ``previousSecret`` for ``overlapSeconds`` so a
    receiver can accept both while it switches. Deliveries are signed with the new one; during
    the overlap a 401/403 is retried signed with the old one (see
    :mod:`dubkit.sandbox.delivery`). Without ``url`` in the body the URL is left as it is.
    """
    backend = _backend(request)
    key = _key(backend, body.api_key)
    if "url" in body.model_fields_set:  # rotating alone keeps the URL
        backend.db.execute("UPDATE keys SET webhook_url = ? WHERE api_key = ?", (body.url, key))
    if body.rotate_secret:
        backend.db.execute(
            "UPDATE keys SET previous_secret = webhook_secret, webhook_secret = ?, "
            "rotated_at = ? WHERE api_key = ?",
            (new_secret(), time.time() + body.overlap_seconds, key),
        )
    row = backend.key(key) or {}
    overlap = row.get("rotated_at") and row["rotated_at"] > time.time()
    return WebhookSecrets(
        url=row.get("webhook_url"),
        secret=row.get("webhook_secret"),
        previous_secret=row.get("previous_secret") if overlap else None,
    ).model_dump(by_alias=True)


@admin_router.post("/timing")
def set_timing(body: Timing, request: Request) -> dict[str, Any]:
    _backend(request).set_setting("timing", {"mode": body.mode, "value": body.value})
    return {"mode": body.mode, "value": body.value}


@admin_router.post("/faults")
def set_faults(body: Faults, request: Request) -> dict[str, Any]:
    backend = _backend(request)
    backend.fault_rng = random.Random(body.seed)
    faults = body.model_dump(by_alias=True, exclude_defaults=True, exclude={"seed"})
    backend.set_setting("faults", faults)
    return faults


@admin_router.post("/limits")
def set_limits(body: Limits, request: Request) -> dict[str, Any]:
    backend = _backend(request)
    for name, value in (
        ("body_limit", body.body_limit),
        ("idempotency_window", body.idempotency_window),
        ("upload_limit", body.upload_limit),
    ):
        if value is not None:
            backend.set_setting(name, value)
    return body.model_dump(by_alias=True, exclude_none=True)


@admin_router.get("/throttle")
def get_throttle(request: Request) -> dict[str, Any]:
    throttle = _backend(request).throttle
    refused = {mask_key(key): n for key, n in throttle.refused().items()}
    return {**throttle.settings(), "refused": refused}


@admin_router.post("/throttle")
def set_throttle(body: ThrottleLimits, request: Request) -> dict[str, Any]:
    backend = _backend(request)
    backend.throttle.configure(body.rate, body.burst, body.concurrency)
    backend.set_setting("throttle", backend.throttle.settings())
    return get_throttle(request)


@admin_router.get("/fetch")
def get_fetch(request: Request) -> dict[str, Any]:
    return references.fetch_policy(_backend(request))


@admin_router.post("/fetch")
def set_fetch(body: FetchPolicy, request: Request) -> dict[str, Any]:
    """Which reference URLs the sandbox fetches (see :mod:`dubkit.sandbox.references`)."""
    backend = _backend(request)
    policy = references.fetch_policy(backend) | body.model_dump(by_alias=True, exclude_none=True)
    backend.set_setting("fetch", policy)
    return policy


@admin_router.get("/delivery")
def get_delivery(request: Request) -> dict[str, Any]:
    return delivery.schedule(_backend(request)).answer()


@admin_router.post("/delivery")
def set_delivery(body: DeliverySchedule, request: Request) -> dict[str, Any]:
    backend = _backend(request)
    plan = delivery.updated(delivery.schedule(backend), body).answer()
    backend.set_setting("delivery", plan)
    return plan


@admin_router.get("/deliveries")
def deliveries(
    request: Request,
    task_id: str | None = Query(None, alias="taskId"),
    state: str | None = None,
    api_key: str | None = Query(None, alias="apiKey"),
) -> dict[str, Any]:
    """Outbox rows, oldest first, each with its attempts; no secrets, no bodies."""
    where, args = "1 = 1", []
    for column, value in (("task_id", task_id), ("state", state), ("api_key", api_key)):
        if value is not None:
            where += f" AND {column} = ?"
            args.append(value)
    store = _backend(request).db
    rows = [dict(r) for r in store.all(f"SELECT * FROM outbox WHERE {where} ORDER BY id", args)]
    attempts: dict[int, list[DeliveryAttempt]] = {}
    for a in store.all(
        f"SELECT * FROM deliveries WHERE outbox_id IN (SELECT id FROM outbox "
        f"WHERE {where}) ORDER BY id",
        args,
    ):
        attempts.setdefault(a["outbox_id"], []).append(
            DeliveryAttempt(
                attempt=a["attempt"],
                at=a["at"],
                url=a["url"],
                status_code=a["status_code"],
                error=a["error"],
                duration_ms=round(a["duration_ms"], 1),
                secret=a["secret"],
            )
        )
    listed = [
        OutboxRow(
            id=r["id"],
            api_key=mask_key(r["api_key"]),
            task_id=r["task_id"],
            event=r["event"],
            pipeline_key=r["pipeline_key"],
            state=r["state"],
            attempts=r["attempts"],
            next_at=r["next_at"],
            last_error=r["last_error"],
            created_at=r["created_at"],
            delivered_at=r["delivered_at"],
            log=attempts.get(r["id"], []),
        ).model_dump(by_alias=True)
        for r in rows
    ]
    return {"deliveries": listed}


@admin_router.post("/deliveries/redeliver")
def redeliver(body: Redeliver, request: Request) -> dict[str, Any]:
    """Queue rows again (by ``ids``, or every row of ``taskId``): the receiver sees a replay."""
    backend = _backend(request)
    ids = list(body.ids or [])
    if body.task_id:
        ids += [
            r["id"]
            for r in backend.db.all("SELECT id FROM outbox WHERE task_id = ?", (body.task_id,))
        ]
    return {"requeued": delivery.redeliver(backend, ids)}


@admin_router.put("/replayed-files/{relpath:path}")
async def put_replayed_file(relpath: str, request: Request) -> Any:
    """Serve the body at ``/files/<relpath>`` (a replayed lesson's media)."""
    media_type = request.headers.get("X-Media-Type", "application/octet-stream")
    try:
        data = await read_body(request, replayed_files.MAX_FILE)
        digest = await run_in_threadpool(
            replayed_files.publish, _backend(request), relpath, data, media_type
        )
    except ServiceError as refusal:
        return envelope(refusal.code, refusal.message)
    return {"path": relpath, "sha256": digest, "size": len(data)}
