"""The service's products, one row each: task types, webhook event, creates, result, context.

A product is what makes tasks: text to speech, text translation, voice cloning, and media
translation (the dub). Everything dubkit keys on a product reads :data:`PRODUCTS`: the operation
table takes its create operations from here, ``client.tasks.list`` its task types, the client's
``Task`` its result model, :mod:`dubkit.webhooks` its typed events, and the sandbox its task
types and the event it sends. Adding an asynchronous operation is a row here (with its models)
plus the handlers that answer it (``docs/architecture.md``).

>>> product_of_task_type("vt").event
'openapi-media-translation'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .assets import Material
from .base import AsyncAcceptance, Operation, W, Wire, post
from .jobs import (
    CloneAsyncRequest,
    CloneRequest,
    CloneResult,
    MediaAcceptance,
    MediaTranslationRequest,
    TranslateAsyncRequest,
    TranslateRequest,
    TranslateResult,
    TTSAsyncRequest,
    TTSRequest,
    TTSResult,
)
from .media_result import MediaTranslationResult

# --------------------------------------------------------------------------- webhooks (§4.4)


class WebhookEnvelope(Wire):
    """One delivery. ``data`` is required, but a failed task's ``data`` is not specified by the
    interface (null, ``{}``, or only ``taskId``): it is accepted whatever it is."""

    code: int | None = None
    version: str | None = None
    event: str | None = None
    pipeline_key: str | None = None
    message: str | None = None
    extra_data: dict[str, Any] | None = None
    data: Any


class MediaEventData(Wire):
    """``data`` of ``openapi-media-translation``: the task's own status and its result."""

    task_id: str | None = None
    task_type: str | None = None
    status: str | None = None
    result: MediaTranslationResult | None = None


# --------------------------------------------------------------------------- idempotency keys

# The extraData key an asynchronous create carries its X-Idempotency-Key under (a dubkit
# convention the interface allows), so its webhook names the call it answers.
IDEMPOTENCY_EXTRA = "dubkitIdempotencyKey"


def with_idempotency_key(request: W, key: str) -> W:
    """``request`` (an asynchronous create) with ``key`` in its ``extraData``; a value the
    caller put there under the same name wins."""
    own = getattr(request, "extra_data", None) or {}
    return request.model_copy(update={"extra_data": {IDEMPOTENCY_EXTRA: key, **own}})


def idempotency_key_of(extra_data: dict[str, Any] | None) -> str | None:
    """The key an asynchronous create's ``extraData`` carries, if dubkit put one there."""
    value = (extra_data or {}).get(IDEMPOTENCY_EXTRA)
    return value if isinstance(value, str) else None


# --------------------------------------------------------------------------- task contexts


@dataclass(frozen=True)
class TaskContext:
    """What the call that created a task knew that the task's result does not say.

    A :class:`dubkit.Task` made by a create holds its product's context and hands it to the
    typed result; a task found later (``client.tasks.get``) has none, and its result says less.
    """

    @classmethod
    def of(cls, request: Any) -> TaskContext:
        return cls()


@dataclass(frozen=True)
class SpeechContext(TaskContext):
    texts: tuple[str, ...] = ()
    voices: tuple[str | None, ...] = ()  # each line's voice id (None: a timbre reference)

    @classmethod
    def of(cls, request: TTSRequest) -> SpeechContext:
        lines = request.data
        return cls(tuple(line.text for line in lines), tuple(line.voice_id for line in lines))


@dataclass(frozen=True)
class TranslationContext(TaskContext):
    sources: tuple[str, ...] = ()  # the segments' texts, in the order sent

    @classmethod
    def of(cls, request: TranslateRequest) -> TranslationContext:
        return cls(tuple(segment.text for segment in request.segments))


@dataclass(frozen=True)
class CloneContext(TaskContext):
    name: str | None = None
    provider: str | None = None
    locale: str | None = None  # the sample's
    text: str | None = None  # the sample's transcript
    ref_audio: str | None = None  # the sample's URL

    @classmethod
    def of(cls, request: CloneRequest) -> CloneContext:
        return cls(
            request.voice_name,
            request.provider,
            request.sample_language,
            request.sample_text,
            request.ref_audio,
        )


@dataclass(frozen=True)
class DubbingContext(TaskContext):
    source: str | None = None
    target: str | None = None
    material: Material | None = None  # the source material's record, as listed

    @classmethod
    def of(cls, request: MediaTranslationRequest) -> DubbingContext:
        return cls(request.language.source, request.language.target)


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Product:
    """One product: how its tasks are made, called, announced and read.

    ``result`` is the model of a finished task's ``result`` (tasks/detail) and of its webhook's
    ``data``, unless ``event_data`` says the webhook wraps it (media translation's ``data`` is
    ``{taskId, taskType, status, result}``). ``context`` is its :class:`TaskContext`.
    """

    name: str
    task_types: tuple[str, ...]  # what its tasks' taskType says (the first: the default)
    event: str  # the webhook event of its asynchronous tasks
    creates: tuple[Operation, ...]  # its create operations, synchronous and asynchronous
    result: type[Wire]
    context: type[TaskContext] = TaskContext
    event_data: type[Wire] | None = None
    acceptance: type[AsyncAcceptance] = AsyncAcceptance  # what its create-async answers

    @property
    def task_type(self) -> str:
        return self.task_types[0]

    def task_type_of(self, request: Wire) -> str:
        """The task type a create makes (media translation's request chooses ``vt``/``at``)."""
        chosen = getattr(request, "task_type", None)
        return chosen if isinstance(chosen, str) else self.task_type

    @property
    def requests(self) -> tuple[type[Wire], ...]:
        return tuple(op.body for op in self.creates if op.body is not None)


def _creates(
    name: str, path: str, sync: type[Wire] | None, async_: type[Wire]
) -> tuple[Operation, ...]:
    """``name.create`` (if it has one) and ``name.create_async`` at ``path/create[-async]``."""
    synchronous = (post(f"{name}.create", f"{path}/create", sync),) if sync else ()
    return (*synchronous, post(f"{name}.create_async", f"{path}/create-async", async_))


TTS = Product(
    name="tts",
    task_types=("tts",),
    event="openapi-tts",
    creates=_creates("tts", "/task/tts", TTSRequest, TTSAsyncRequest),
    result=TTSResult,
    context=SpeechContext,
)
TRANSLATION = Product(
    name="translation",
    task_types=("textTranslation",),
    event="openapi-translate",
    creates=_creates("translate", "/task/translate", TranslateRequest, TranslateAsyncRequest),
    result=TranslateResult,
    context=TranslationContext,
)
CLONE = Product(
    name="clone",
    task_types=("cloneVoice",),
    event="openapi-clone-voice",
    creates=_creates("clone", "/task/clone-voice", CloneRequest, CloneAsyncRequest),
    result=CloneResult,
    context=CloneContext,
)
DUBBING = Product(
    name="dubbing",
    task_types=("vt", "at"),  # video or audio translation
    event="openapi-media-translation",
    creates=_creates("media", "/task/media-translation", None, MediaTranslationRequest),
    result=MediaTranslationResult,
    context=DubbingContext,
    event_data=MediaEventData,
    acceptance=MediaAcceptance,
)

PRODUCTS: tuple[Product, ...] = (TTS, TRANSLATION, CLONE, DUBBING)
TASK_TYPES: tuple[str, ...] = tuple(t for product in PRODUCTS for t in product.task_types)

if TYPE_CHECKING:
    TaskType = str
else:  # the table's task types as a Literal: pydantic checks them and the contract test reads them
    TaskType = Literal[TASK_TYPES]

_BY_TASK_TYPE = {t: product for product in PRODUCTS for t in product.task_types}
_BY_OPERATION = {op.name: product for product in PRODUCTS for op in product.creates}


def product_of_task_type(task_type: str | None) -> Product | None:
    """The product whose tasks carry ``task_type`` (None for a type this table lacks)."""
    return _BY_TASK_TYPE.get(task_type or "")


def context_of(task_type: str | None, request: dict[str, Any] | None) -> TaskContext | None:
    """The context a create's ``request`` (its wire body) gives a task of ``task_type``: what a
    view of a task found later (a class report's) needs to line its result up (texts,
    voices, locales). ``None`` when the type or the request is unknown or does not parse."""
    product = product_of_task_type(task_type)
    if product is None or not request:
        return None
    for body in reversed(product.requests):  # the asynchronous create's model first
        try:
            return product.context.of(body.model_validate(request))
        except ValueError:
            continue
    return None


def product_of_operation(name: str) -> Product | None:
    """The product a create operation (``tts.create_async``) makes tasks of."""
    return _BY_OPERATION.get(name)


def _check(products: Sequence[Product]) -> None:
    """Task types and events name one product each; every product has an async create."""
    types = [t for p in products for t in p.task_types]
    events = [p.event for p in products]
    if len(set(types)) != len(types) or len(set(events)) != len(events):
        raise RuntimeError(f"product table: a task type or event is shared: {types}, {events}")
    for product in products:
        if not any(op.asynchronous for op in product.creates):
            raise RuntimeError(f"product table: {product.name} has no create-async operation")


_check(PRODUCTS)

__all__ = [
    "IDEMPOTENCY_EXTRA",
    "with_idempotency_key",
    "idempotency_key_of",
    "WebhookEnvelope",
    "MediaEventData",
    "TaskContext",
    "SpeechContext",
    "TranslationContext",
    "CloneContext",
    "DubbingContext",
    "Product",
    "PRODUCTS",
    "TTS",
    "TRANSLATION",
    "CLONE",
    "DUBBING",
    "TASK_TYPES",
    "TaskType",
    "product_of_task_type",
    "product_of_operation",
]
