"""The synchronous JetStream client that the Dagster resource hands out: the facade.

`JetStreamClient` is a `core.session.Session` (one connection, one private loop, errors
translated) with every feature on it: management in `client.streams` and
`client.consumers`, KV and Object Store buckets, and thin methods over `publishing.send`,
`consumers.pull`, `consumers.push` and `consumers.ordered`. The feature modules know only
the session, never this class, so the package has no import cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property

from resources.jetstream.consumers import ordered, pull, push
from resources.jetstream.consumers.manage import Consumers
from resources.jetstream.consumers.push import PushSubscription
from resources.jetstream.core.messages import JsMessage, PubAck
from resources.jetstream.core.session import Session
from resources.jetstream.kv import bucket as kv
from resources.jetstream.kv.bucket import KeyValueBucket
from resources.jetstream.kv.spec import KeyValueSpec
from resources.jetstream.objects import bucket as object_store
from resources.jetstream.objects.bucket import ObjectStoreBucket
from resources.jetstream.objects.spec import ObjectStoreSpec
from resources.jetstream.publishing import send
from resources.jetstream.publishing.expectations import Expectations
from resources.jetstream.streams.manage import Streams


class JetStreamClient(Session):
    """A connected JetStream client with a synchronous API.

    Examples:
        >>> with JetStreamClient(ConnectionSettings(servers=("nats://127.0.0.1:4222",))) as js:
        ...     ack = js.publish("files.deleted", b"{}", msg_id="evt-1")
        ...     js.streams.info("FILE_EVENTS").last_seq
    """

    @cached_property
    def streams(self) -> Streams:
        """Stream management: add, info, update, delete, ..."""
        return Streams(self)

    @cached_property
    def consumers(self) -> Consumers:
        """Consumer management: add, info, delete, ..."""
        return Consumers(self)

    def key_value(self, bucket: str) -> KeyValueBucket:
        """Binds to an existing Key-Value bucket (raises `BucketNotFoundError` if missing)."""
        return kv.bind(self, bucket)

    def create_key_value(self, spec: KeyValueSpec) -> KeyValueBucket:
        """Creates the Key-Value bucket if it is missing, then binds to it."""
        return kv.create(self, spec)

    def object_store(self, bucket: str) -> ObjectStoreBucket:
        """Binds to an existing Object Store bucket (raises `BucketNotFoundError` if missing)."""
        return object_store.bind(self, bucket)

    def create_object_store(self, spec: ObjectStoreSpec) -> ObjectStoreBucket:
        """Creates the Object Store bucket if it is missing, then binds to it."""
        return object_store.create(self, spec)

    # -- publishing and consuming: full docs on the module functions ----------------------

    def publish(
        self,
        subject: str,
        data: bytes,
        *,
        headers: Mapping[str, str] | None = None,
        msg_id: str | None = None,
        expected_stream: str | None = None,
        expected_last_seq: int | None = None,
        expected_last_msg_id: str | None = None,
        expected_last_subject_seq: int | None = None,
        timeout: float | None = None,
    ) -> PubAck:
        """Publishes one message and waits for its ack (see `publishing.send.publish`).

        Raises:
            NoStreamForSubjectError: no stream captures `subject`.
            PublishExpectationError: an `expected_*` was not met; nothing was stored.
        """
        expect = Expectations(
            stream=expected_stream,
            last_seq=expected_last_seq,
            last_msg_id=expected_last_msg_id,
            last_subject_seq=expected_last_subject_seq,
        )
        return send.publish(
            self, subject, data, headers=headers, msg_id=msg_id, expect=expect, timeout=timeout
        )

    def publish_batch(
        self,
        messages: Iterable[send.OutboundMessage],
        *,
        max_in_flight: int = 256,
        timeout: float | None = None,
    ) -> list[PubAck]:
        """Publishes (subject, data[, headers]) tuples with at most `max_in_flight` acks
        outstanding; returns the acks in input order (see `publishing.send.publish_batch`)."""
        return send.publish_batch(self, messages, max_in_flight=max_in_flight, timeout=timeout)

    def fetch(
        self,
        stream: str,
        durable: str,
        *,
        batch: int = 100,
        max_bytes: int | None = None,
        expires: float = 1.0,
    ) -> list[JsMessage]:
        """Fetches up to `batch` messages from a durable pull consumer; `[]` if none came
        within `expires` seconds (see `pull.fetch`)."""
        return pull.fetch(self, stream, durable, batch=batch, max_bytes=max_bytes, expires=expires)

    def next_message(self, stream: str, durable: str, *, timeout: float = 1.0) -> JsMessage | None:
        """Pulls one message from a durable pull consumer; None if none came in `timeout`."""
        return pull.next_message(self, stream, durable, timeout=timeout)

    def iterate(
        self,
        stream: str,
        durable: str,
        *,
        max_messages: int | None = None,
        idle_timeout: float = 1.0,
        batch: int = 100,
        max_bytes: int | None = None,
    ) -> Iterator[JsMessage]:
        """Yields a durable pull consumer's messages across fetches until `max_messages` or
        `idle_timeout` seconds without one (see `pull.iterate`)."""
        return pull.iterate(
            self,
            stream,
            durable,
            max_messages=max_messages,
            idle_timeout=idle_timeout,
            batch=batch,
            max_bytes=max_bytes,
        )

    def pull_consumer(self, stream: str, durable: str) -> pull.PullConsumer:
        """Binds to an existing durable pull consumer (see `pull.PullConsumer.bind`)."""
        return pull.PullConsumer.bind(self, stream, durable)

    def subscribe_push(self, stream: str, durable: str) -> PushSubscription:
        """Binds to an existing durable push consumer, sharing it with the other subscribers
        of its deliver group if it has one (see `push.subscribe_push`)."""
        return push.subscribe_push(self, stream, durable)

    def subscribe_ordered(
        self,
        stream: str,
        *,
        start_seq: int = 1,
        filter_subjects: Sequence[str] = (),
        idle_heartbeat: float = 5.0,
    ) -> PushSubscription:
        """Follows a stream in order from `start_seq` with an ephemeral ordered push consumer
        (flow control, heartbeats; see `ordered.subscribe_ordered`)."""
        return ordered.subscribe_ordered(
            self,
            stream,
            start_seq=start_seq,
            filter_subjects=filter_subjects,
            idle_heartbeat=idle_heartbeat,
        )

    def read_ordered(
        self,
        stream: str,
        start_seq: int,
        end_seq: int,
        *,
        filter_subjects: Sequence[str] = (),
        batch: int = 1000,
        max_bytes: int | None = None,
    ) -> Iterator[JsMessage]:
        """Yields the messages with `start_seq <= stream_seq <= end_seq` in stream order,
        reading nothing beyond `end_seq` (see `ordered.read_ordered`)."""
        return ordered.read_ordered(
            self,
            stream,
            start_seq,
            end_seq,
            filter_subjects=filter_subjects,
            batch=batch,
            max_bytes=max_bytes,
        )
