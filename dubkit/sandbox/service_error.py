"""The business error of the sandbox: a refusal answered as ``{code, message, data: null}``.

A module of its own so every layer (guard, pipeline, products, credits, the backend) can refuse
a call without importing the backend.
"""

from __future__ import annotations


class ServiceError(Exception):
    """A business error answered in the envelope: ``{code, message, data: null}``."""

    def __init__(self, code: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.headers = headers or {}
