"""The service's answer shape, ``{code, message, data}``, as the sandbox sends it."""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse


def omit_nulls(value: Any) -> Any:
    """``value`` with every ``None`` inside dicts left out (lists keep their length).

    The interface has no nullable field: an optional field with no value is absent, never
    ``null``. Answers and webhook ``data`` pass through this on their way out.
    """
    if isinstance(value, dict):
        return {k: omit_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [omit_nulls(v) for v in value]
    return value


def envelope(
    code: int, message: str = "", data: Any = None, *, headers: dict[str, str] | None = None
) -> JSONResponse:
    """One answer. *choice*: the HTTP status mirrors the business code for errors."""
    return JSONResponse(
        {"code": code, "message": message, "data": omit_nulls(data)},
        status_code=200 if code == 200 else code,
        headers=headers,
    )
