"""One service object per product, each on the client's one transport (as stripe-python's
services sit on one requestor). The Client makes one of each and hands a resource the siblings
it needs (TTS checks voices with ``client.voices`` and uploads references with
``client.materials``), so no resource imports the client.

Each product's calls are written once, as plans (:mod:`dubkit._transport.plans`); the sync
resource runs them, its ``Async…`` subclass (for :class:`dubkit.AsyncClient`) awaits the same
plans on the async transport. Uploads, clones and dubs, file and media work as much as HTTP,
are the sync resource's calls run in a worker thread (``Offloaded``)."""

from .._util.deprecation import module_renames
from .clone import AsyncCloneResource, CloneResource
from .dubbing import AsyncDubbingResource, DubbingResource
from .materials import AsyncMaterialsResource, MaterialsResource
from .tasks import AsyncTasksResource, TasksResource
from .translate import AsyncTranslateResource, TranslateResource
from .tts import AsyncTTSResource, TTSResource
from .voices import AsyncVoicesResource, VoicesResource, unknown_voice

__all__ = [
    "CloneResource",
    "MaterialsResource",
    "DubbingResource",
    "TasksResource",
    "TranslateResource",
    "TTSResource",
    "VoicesResource",
    "unknown_voice",
    "AsyncTasksResource",
    "AsyncCloneResource",
    "AsyncDubbingResource",
    "AsyncMaterialsResource",
    "AsyncTranslateResource",
    "AsyncTTSResource",
    "AsyncVoicesResource",
]

__getattr__ = module_renames(__name__, {"MediaResource": ("DubbingResource", DubbingResource)})
