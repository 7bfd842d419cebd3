"""Webhooks from the service (interface §4): verify, parse, and a Receiver that runs handlers.

In a notebook::

    receiver = dubkit.webhooks.Receiver(client.sandbox.webhook_secret, store="events.sqlite3")
    receiver.on("openapi-translate", lambda event: print(event.result.items))
    client.sandbox.set_webhook(receiver.serve(port=8787))
    task = client.translate.create_async(["Hello"], source="en-US", target="fr-FR")
    dubkit.monitor(task)      # this cell now updates the instant the event arrives

In your own web framework, verify and parse yourself (always the raw bytes, verify first)::

    verify(secret, headers["X-Timestamp"], raw_body, headers["X-Signature"])
    event = parse_event(raw_body)   # TTSEvent, TranslateEvent, CloneEvent, MediaTranslationEvent
    # or hand both to receiver.handle(headers, raw_body) and send back its status and body

Behind gunicorn or waitress (``app.py`` holds ``receiver = Receiver(...)`` and its handlers)::

    gunicorn -w 4 'app:receiver.wsgi_app'        waitress-serve app:receiver.wsgi_app

**Several processes.** Dedupe is only as wide as the store. Every process on one host must open
the *same* SQLite file (``store=`` or ``$DUBKIT_WEBHOOK_DB``): its primary key lets exactly one
process accept a ``pipelineKey`` however many retries race in, and the others answer 200 as a
duplicate. Each process runs its own handler threads, started lazily on its first delivery (so
``gunicorn --preload`` forks before any thread exists). A process that dies with accepted work
leaves it *pending* under a lease (``lease=``, 300 s) that names its owner: the pid, and the
host's boot and pid namespace. When that owner is a process of this host that no longer runs
(crashed, killed), a running receiver on the store takes the work over within seconds, and one
that starts after the crash takes it over at once. Work whose owner is in another host or
container, or cannot be checked, is taken over when the lease runs out; nothing accepted is
lost either way.

**Several hosts** need a store they all see (SQLite on a network filesystem is not one):
``Receiver(secret, store="postgresql://user@db/app")`` (``pip install 'dubkit[postgres]'``,
:mod:`dubkit.webhooks.postgres_store`). There PostgreSQL's row lock decides who runs an event:
a handler runs in a transaction holding the event's row, and a receiver that dies frees it with
its connection, so another takes the event over within seconds.

**Exactly once.** A handler may run twice for one event if its process dies after the side
effect and before the event is marked done (at-least-once): keep such side effects keyed by
``event.task_id``. On PostgreSQL, ``receiver.on(event, handler, transaction=True)`` calls
``handler(event, connection)`` in the transaction that marks the event done: writes made
through ``connection`` commit with the mark or not at all.
"""

import logging

from .._util.deprecation import module_renames
from .._util.signing import sign
from ..errors import WebhookVerificationError
from . import push
from .deliveries import Delivery
from .events import (
    EVENT_TYPES,
    CloneEvent,
    MediaTranslationEvent,
    TranslateEvent,
    TTSEvent,
    WebhookEvent,
    parse_event,
)
from .postgres_store import PostgresEventStore
from .receiver import Answer, Receiver
from .signature import TOLERANCE_SECONDS, verify
from .store import EventStore, default_store_path

# A library logs, the application decides where to: without this, Python's last-resort handler
# would print rejections into whichever notebook cell happens to be running.
logging.getLogger("dubkit.webhooks").addHandler(logging.NullHandler())

__all__ = [
    "verify",
    "sign",
    "parse_event",
    "Receiver",
    "EventStore",
    "PostgresEventStore",
    "Answer",
    "Delivery",
    "WebhookEvent",
    "TTSEvent",
    "TranslateEvent",
    "CloneEvent",
    "MediaTranslationEvent",
    "EVENT_TYPES",
    "WebhookVerificationError",
    "TOLERANCE_SECONDS",
    "default_store_path",
    "push",
]

__getattr__ = module_renames(__name__, {"parse": ("parse_event", parse_event)})
