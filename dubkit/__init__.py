"""dubkit: a Jupyter-first toolkit for a translate-and-dub media service.

>>> import dubkit
>>> client = dubkit.connect()          # the real service with DUBKIT_API_KEY, else the sandbox
>>> client.translate.create(["Hello"], source="en-US", target="fr-FR")
"""

from ._transport import RetryPolicy, Timeout
from ._version import __version__
from .client import Client, connect
from .errors import (APIConnectionError, APIError, APITimeoutError, AuthenticationError,
                     BadRequestError, DubkitError, IdempotencyConflictError,
                     InsufficientCreditsError, NotFoundError, PayloadTooLargeError, ServerError,
                     TaskFailedError, TaskTimeoutError, UnprocessableError, UpstreamError,
                     ValidationError, WebhookVerificationError)
from . import webhooks
from .resources import Task, Translation

__all__ = [
    "__version__", "connect", "webhooks", "Client", "RetryPolicy", "Timeout", "Task", "Translation",
    "DubkitError", "ValidationError", "APIError", "BadRequestError", "AuthenticationError",
    "InsufficientCreditsError", "NotFoundError", "IdempotencyConflictError",
    "PayloadTooLargeError", "UnprocessableError", "ServerError", "UpstreamError",
    "APIConnectionError", "APITimeoutError", "TaskFailedError", "TaskTimeoutError",
    "WebhookVerificationError",
]
