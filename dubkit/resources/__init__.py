"""One service object per product, each on the client's one transport (as stripe-python's
services sit on one requestor). The Client makes one of each and hands a resource the siblings
it needs (TTS checks voices with ``client.voices`` and uploads references with
``client.materials``), so no resource imports the client."""

from .._util.deprecation import module_renames
from .clone import CloneResource
from .dubbing import DubbingResource
from .materials import MaterialsResource
from .tasks import TasksResource
from .translate import TranslateResource
from .tts import TTSResource
from .voices import VoicesResource, unknown_voice

__all__ = [
    "CloneResource",
    "MaterialsResource",
    "DubbingResource",
    "TasksResource",
    "TranslateResource",
    "TTSResource",
    "VoicesResource",
    "unknown_voice",
]

__getattr__ = module_renames(__name__, {"MediaResource": ("DubbingResource", DubbingResource)})
