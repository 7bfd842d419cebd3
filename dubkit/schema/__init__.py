"""Wire records and request shapes of the service (interface §2-§4), in one place.

Python names are snake_case, the wire is camelCase (``voice_id`` <-> ``voiceId``). Unknown
fields are kept in both directions, so a newer service field survives a round trip and a caller
can send a field dubkit does not model yet. Only the limits the interface states are enforced
(≤ 50 lines, 0 ≤ emoWeight ≤ 1, contextWindow 1-20, ...); open values (locales, free strings)
are left to the service.

Both the client (before sending) and the sandbox (on receipt) validate with these models, so a
rule lives here once. Modules: ``base`` (the Wire base, limits, the Operation row,
:func:`validated`), ``jobs`` (the products' requests and results), ``media_result`` (the §3.6
deliverables and the sandbox's labelled extras), ``products`` (the product table: task types,
webhook events and envelopes, creates, results, task contexts), ``tasks`` (task records and
statuses), ``assets`` (materials, voices), ``operations`` (the table of every operation);
import everything from ``dubkit.schema``. ``dubkit/contract/openapi.yaml`` is the referee these models
answer to (``tests/test_contract_models.py``).

>>> TranslateRequest.model_validate({"language": {"source": "en-US", "target": "fr-FR"},
...                                  "segments": [{"text": "Hello"}]}).to_wire()
{'language': {'source': 'en-US', 'target': 'fr-FR'}, 'segments': [{'text': 'Hello'}]}
"""

from __future__ import annotations

from .._util.deprecation import module_renames
from .assets import *  # noqa: F401,F403
from .base import *  # noqa: F401,F403
from .base import W  # noqa: F401
from .jobs import *  # noqa: F401,F403
from .media_result import *  # noqa: F401,F403
from .operations import *  # noqa: F401,F403
from .products import *  # noqa: F401,F403
from .tasks import *  # noqa: F401,F403

__getattr__ = module_renames(__name__, {"parse": ("validated", validated)})  # noqa: F405
