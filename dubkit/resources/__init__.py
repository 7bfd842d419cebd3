"""One resource object per product; the Client makes one of each."""

from . import clone  # noqa: F401  (registers the cloneVoice result type)

from .materials import MaterialsResource
from .media import MediaResource
from .tasks import Task, TaskList, TasksResource
from .translate import TranslateResource, Translation
from .tts import TTSResource
from .voices import VoicesResource

__all__ = ["MaterialsResource", "MediaResource", "Task", "TaskList", "TasksResource",
           "TranslateResource", "Translation", "TTSResource", "VoicesResource"]
