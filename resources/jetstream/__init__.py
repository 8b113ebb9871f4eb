"""JetStream for Dagster: the resource, its client, topology as code, an embedded server.

Dagster code reaches JetStream through `JetStreamResource`; everything it hands back is a
plain value from this package (see docs/jetstream.md for the whole surface).
"""

from resources.jetstream.buckets import KeyValueSpec, ObjectStoreSpec
from resources.jetstream.client import JetStreamClient
from resources.jetstream.connection import ConnectionSettings
from resources.jetstream.consumers import AckPolicy, ConsumerSpec, ConsumerState, DeliverPolicy
from resources.jetstream.kv import KeyValueBucket, KvEntry, KvOperation, KvStatus
from resources.jetstream.messages import JsMessage, PubAck
from resources.jetstream.object_meta import ObjectInfo, ObjectLink, ObjectStoreStatus
from resources.jetstream.object_store import ObjectStoreBucket
from resources.jetstream.push import PushSubscription
from resources.jetstream.resource import JetStreamResource
from resources.jetstream.server import EmbeddedNatsServer
from resources.jetstream.stream_messages import StoredMessage
from resources.jetstream.streams import (
    Compression,
    Discard,
    Retention,
    Storage,
    StreamSource,
    StreamSpec,
    StreamState,
)
from resources.jetstream.topology import Change, Topology, plan, reconcile

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
