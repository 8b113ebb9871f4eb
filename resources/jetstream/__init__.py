"""JetStream for Dagster: the resource, its client, topology as code, an embedded server."""

from resources.jetstream.buckets import KeyValueSpec, ObjectStoreSpec
from resources.jetstream.client import JetStreamClient
from resources.jetstream.connection import ConnectionSettings
from resources.jetstream.consumers import AckPolicy, ConsumerSpec, ConsumerState, DeliverPolicy
from resources.jetstream.messages import JsMessage, PubAck
from resources.jetstream.resource import JetStreamResource
from resources.jetstream.server import EmbeddedNatsServer
from resources.jetstream.streams import Discard, Retention, Storage, StreamSpec, StreamState
from resources.jetstream.topology import Change, Topology, reconcile

__all__ = [
    "AckPolicy",
    "Change",
    "ConnectionSettings",
    "ConsumerSpec",
    "ConsumerState",
    "DeliverPolicy",
    "Discard",
    "EmbeddedNatsServer",
    "JetStreamClient",
    "JetStreamResource",
    "JsMessage",
    "KeyValueSpec",
    "ObjectStoreSpec",
    "PubAck",
    "Retention",
    "Storage",
    "StreamSpec",
    "StreamState",
    "Topology",
    "reconcile",
]
