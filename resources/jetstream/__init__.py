"""JetStream for Dagster: the resource, its client, topology as code, an embedded server.

Dagster code reaches JetStream through `JetStreamResource`; everything it hands back is a
plain value from this package (see docs/jetstream.md for the whole surface).
"""

from resources.jetstream.client import JetStreamClient
from resources.jetstream.connection.settings import ConnectionSettings
from resources.jetstream.consumers.push import PushSubscription
from resources.jetstream.consumers.spec import AckPolicy, ConsumerSpec, DeliverPolicy
from resources.jetstream.consumers.state import ConsumerState
from resources.jetstream.core.messages import JsMessage, PubAck
from resources.jetstream.kv.bucket import KeyValueBucket
from resources.jetstream.kv.entries import KvEntry, KvOperation, KvStatus
from resources.jetstream.kv.spec import KeyValueSpec
from resources.jetstream.objects.bucket import ObjectStoreBucket
from resources.jetstream.objects.meta import ObjectInfo, ObjectLink, ObjectStoreStatus
from resources.jetstream.objects.spec import ObjectStoreSpec
from resources.jetstream.resource import JetStreamResource
from resources.jetstream.server.embedded import EmbeddedNatsServer
from resources.jetstream.streams.source import StreamSource
from resources.jetstream.streams.spec import Compression, Discard, Retention, Storage, StreamSpec
from resources.jetstream.streams.state import StreamState
from resources.jetstream.streams.stored import StoredMessage
from resources.jetstream.topology.plan import Change, Topology, plan, reconcile

__all__ = [
    "AckPolicy",
    "Change",
    "Compression",
    "ConnectionSettings",
    "ConsumerSpec",
    "ConsumerState",
    "DeliverPolicy",
    "Discard",
    "EmbeddedNatsServer",
    "JetStreamClient",
    "JetStreamResource",
    "JsMessage",
    "KeyValueBucket",
    "KeyValueSpec",
    "KvEntry",
    "KvOperation",
    "KvStatus",
    "ObjectInfo",
    "ObjectLink",
    "ObjectStoreBucket",
    "ObjectStoreSpec",
    "ObjectStoreStatus",
    "PubAck",
    "PushSubscription",
    "Retention",
    "Storage",
    "StoredMessage",
    "StreamSource",
    "StreamSpec",
    "StreamState",
    "Topology",
    "plan",
    "reconcile",
]
