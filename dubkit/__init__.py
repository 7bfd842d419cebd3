"""dubkit: a Jupyter-first toolkit for a translate-and-dub media service.

>>> import dubkit
>>> client = dubkit.connect()          # the real service with DUBKIT_API_KEY, else the sandbox
>>> client.translate.create(["Hello"], source="en-US", target="fr-FR")
>>> dubkit.monitor(client.translate.create_async(["Hi"], source="en-US", target="de-DE"))
>>> client = await dubkit.connect_async()  # the same calls, awaited (asyncio, Jupyter cells)
"""

from typing import TYPE_CHECKING, Any

from . import frontends, webhooks
from ._transport import RetryPolicy, Timeout
from ._version import __version__
from .client import AsyncClient, Client, connect, connect_async
from .errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    BudgetExceededError,
    DubkitError,
    IdempotencyConflictError,
    InsufficientCreditsError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitError,
    ReplayMissError,
    ServerError,
    TaskFailedError,
    TaskTimeoutError,
    UnexpectedAnswerError,
    UnprocessableError,
    UpstreamError,
    ValidationError,
    WebhookVerificationError,
)
from .frontends import configure
from .results import (
    AsyncTask,
    Audition,
    Clone,
    DubbingResult,
    Material,
    Speech,
    SpeechLine,
    Task,
    Translation,
    VoiceList,
)
from .sandbox_handle import SandboxHandle
from .sandbox_handle import start as start_sandbox

if TYPE_CHECKING:
    from .cast import Cast
    from .widgets import (
        CheckView,
        ClonePanel,
        DubbingView,
        ScriptEditor,
        TaskMonitor,
        VoiceBrowser,
        compare,
        monitor,
    )

# The widgets load ipywidgets (a tenth of a second): on first use, not with `import dubkit`.
_WIDGETS = {
    "CheckView",
    "ClonePanel",
    "DubbingView",
    "ScriptEditor",
    "TaskMonitor",
    "VoiceBrowser",
    "compare",
    "monitor",
}


def __getattr__(name: str) -> Any:
    if name == "Cast":  # its sound check loads numpy: on first use, like the widgets
        from .cast import Cast

        return Cast
    if name in _WIDGETS:
        from . import widgets

        return getattr(widgets, name)
    raise AttributeError(f"module 'dubkit' has no attribute {name!r}")


__all__ = [
    "__version__",
    "connect",
    "connect_async",
    "AsyncClient",
    "AsyncTask",
    "configure",
    "frontends",
    "monitor",
    "compare",
    "start_sandbox",
    "webhooks",
    "Client",
    "Cast",
    "SandboxHandle",
    "RetryPolicy",
    "Timeout",
    "Task",
    "Speech",
    "SpeechLine",
    "Translation",
    "Clone",
    "DubbingResult",
    "Material",
    "VoiceList",
    "Audition",
    "TaskMonitor",
    "ScriptEditor",
    "CheckView",
    "VoiceBrowser",
    "ClonePanel",
    "DubbingView",
    "DubkitError",
    "ValidationError",
    "APIError",
    "BadRequestError",
    "BudgetExceededError",
    "AuthenticationError",
    "InsufficientCreditsError",
    "NotFoundError",
    "IdempotencyConflictError",
    "PayloadTooLargeError",
    "RateLimitError",
    "ReplayMissError",
    "UnprocessableError",
    "ServerError",
    "UpstreamError",
    "UnexpectedAnswerError",
    "APIConnectionError",
    "APITimeoutError",
    "TaskFailedError",
    "TaskTimeoutError",
    "WebhookVerificationError",
]
