"""The synchronous JetStream client that the Dagster resource hands out.

It owns an `EventLoopThread` and one nats-py connection, runs every coroutine there, and
translates nats-py errors into `resources.jetstream.errors`. Management lives in
`client.streams` and `client.consumers`; publishing and fetching are methods here.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Coroutine, Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.manager import JetStreamManager

from resources.jetstream.connection import ConnectionSettings, open_connection
from resources.jetstream.consumers import Consumers
from resources.jetstream.errors import (
    ConnectionFailedError,
    InvalidArgumentError,
    JetStreamError,
    NoStreamForSubjectError,
    translate_api_error,
)
from resources.jetstream.messages import MSG_ID_HEADER, JsMessage, PubAck
from resources.jetstream.runtime import EventLoopThread
from resources.jetstream.streams import Streams, validate_name, validate_subject

if TYPE_CHECKING:
    from resources.jetstream.buckets import KeyValueSpec, ObjectStoreSpec
    from resources.jetstream.kv import KeyValueBucket
    from resources.jetstream.object_store import ObjectStoreBucket

T = TypeVar("T")


class JetStreamClient:
    """A connected JetStream client with a synchronous API.

    Examples:
        >>> with JetStreamClient(ConnectionSettings(servers=("nats://127.0.0.1:4222",))) as js:
        ...     ack = js.publish("files.deleted", b"{}", msg_id="evt-1")
        ...     js.streams.info("FILE_EVENTS").last_seq
    """

    def __init__(self, settings: ConnectionSettings) -> None:
        self.settings = settings
        self._loop: EventLoopThread | None = None
        self._nc: NATS | None = None
        self._js: JetStreamContext | None = None
        self._pull_subscriptions: dict[tuple[str, str], JetStreamContext.PullSubscription] = {}

    # -- lifecycle -------------------------------------------------------------------------

    def connect(self) -> JetStreamClient:
        """Opens the connection (once); later calls return at once."""
        if self._nc is not None:
            return self
        loop = EventLoopThread()
        try:
            self._nc = loop.run(open_connection(self.settings))
        except BaseException:
            loop.close()
            raise
        self._loop = loop
        self._js = self._nc.jetstream(
            prefix=self.settings.api_prefix or "$JS.API",
            domain=self.settings.domain,
            timeout=self.settings.request_timeout,
        )
        return self

    def close(self) -> None:
        """Drains the connection (pending acks and publishes are flushed), then closes it."""
        nc, loop = self._nc, self._loop
        self._nc = self._js = self._loop = None
        self._pull_subscriptions.clear()
        self.__dict__.pop("jsm", None)
        if loop is None:
            return
        try:
            if nc is not None and not nc.is_closed:
                loop.run(nc.drain(), timeout=self.settings.request_timeout + 5)
        except (TimeoutError, nats.errors.Error):
            loop.run(nc.close(), timeout=5)
        finally:
            loop.close()

    def __enter__(self) -> JetStreamClient:
        return self.connect()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def is_connected(self) -> bool:
        return self._nc is not None and self._nc.is_connected

    @property
    def nc(self) -> NATS:
        """The underlying nats-py connection (for the modules of this package)."""
        self.connect()
        assert self._nc is not None
        return self._nc

    @property
    def js(self) -> JetStreamContext:
        """The underlying nats-py JetStream context (for the modules of this package)."""
        self.connect()
        assert self._js is not None
        return self._js

    @cached_property
    def jsm(self) -> JetStreamManager:
        return self.js._jsm

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
        from resources.jetstream import kv

        return kv.bind(self, bucket)

    def create_key_value(self, spec: KeyValueSpec) -> KeyValueBucket:
        """Creates the Key-Value bucket if it is missing, then binds to it."""
        from resources.jetstream import kv

        return kv.create(self, spec)

    def object_store(self, bucket: str) -> ObjectStoreBucket:
        """Binds to an existing Object Store bucket (raises `BucketNotFoundError` if missing)."""
        from resources.jetstream import object_store

        return object_store.bind(self, bucket)

    def create_object_store(self, spec: ObjectStoreSpec) -> ObjectStoreBucket:
        """Creates the Object Store bucket if it is missing, then binds to it."""
        from resources.jetstream import object_store

        return object_store.create(self, spec)

    def run(
        self,
        coro: Coroutine[Any, Any, T],
        *,
        what: str,
        timeout: float | None = None,
        **names: Any,
    ) -> T:
        """Runs a nats-py coroutine on the client's loop, translating its errors.

        Args:
            coro: the coroutine.
            what: the operation, for error messages ("add stream 'FILE_EVENTS'").
            timeout: seconds to wait; defaults to the request timeout plus a margin. Pass
                `math.inf` for work bounded by its own per-request timeouts (a batch).
            **names: stream / consumer / bucket / key / seq, attached to errors.

        Raises:
            JetStreamError: a subclass naming the cause.
        """
        self.connect()
        assert self._loop is not None
        wait = timeout if timeout is not None else self.settings.request_timeout + 5
        if math.isinf(wait):
            wait = None
        try:
            return self._loop.run(coro, timeout=wait)
        except JetStreamError:
            raise
        except (nats.js.errors.Error, TimeoutError, nats.errors.TimeoutError) as error:
            raise translate_api_error(error, what, **names) from error
        except nats.errors.NoRespondersError as error:
            raise translate_api_error(
                nats.js.errors.ServiceUnavailableError(description="no responders"), what, **names
            ) from error
        except (nats.errors.ConnectionClosedError, nats.errors.Error, OSError) as error:
            raise ConnectionFailedError(
                f"cannot {what}: the connection to {self.settings.server_list} failed ({error})",
                server=self.settings.server_list,
                **names,
            ) from error

    # -- publishing ------------------------------------------------------------------------

    def publish(
        self,
        subject: str,
        data: bytes,
        *,
        headers: dict[str, str] | None = None,
        msg_id: str | None = None,
    ) -> PubAck:
        """Publishes one message and waits for the stream's acknowledgement.

        Args:
            subject: a subject captured by a stream.
            data: the payload, stored exactly as given.
            headers: message headers.
            msg_id: sets `Nats-Msg-Id`; the stream drops a repeat inside its duplicate window
                and acknowledges it with `duplicate=True`.

        Raises:
            NoStreamForSubjectError: no stream captures `subject`.
        """
        validate_subject(subject, wildcards=False)
        hdrs = dict(headers or {})
        if msg_id is not None:
            hdrs[MSG_ID_HEADER] = msg_id
        try:
            ack = self.run(
                self.js.publish(subject, data, headers=hdrs or None),
                what=f"publish to {subject!r}",
            )
        except JetStreamError as error:
            if isinstance(error.__cause__, nats.js.errors.NoStreamResponseError):
                raise NoStreamForSubjectError(
                    f"no stream captures subject {subject!r}; add it to a stream's subjects "
                    "(see the topology) before publishing",
                ) from error
            raise
        return PubAck(stream=ack.stream, seq=ack.seq, duplicate=bool(ack.duplicate))

    def publish_batch(
        self,
        messages: Iterable[tuple[str, bytes, dict[str, str] | None]],
        *,
        max_in_flight: int = 256,
    ) -> list[PubAck]:
        """Publishes many messages with at most `max_in_flight` acknowledgements outstanding.

        Args:
            messages: (subject, data, headers) triples; put `Nats-Msg-Id` in the headers for
                de-duplication.
            max_in_flight: the bound on unacknowledged publishes.

        Returns:
            One acknowledgement per message, in order.
        """
        if max_in_flight < 1:
            raise InvalidArgumentError(f"max_in_flight must be at least 1, got {max_in_flight!r}")
        return self.run(
            self._publish_batch(messages, max_in_flight),
            what="publish a batch",
            timeout=math.inf,  # each publish is bounded by the request timeout
        )

    async def _publish_batch(self, messages, max_in_flight: int) -> list[PubAck]:
        js = self.js
        window: asyncio.Semaphore = asyncio.Semaphore(max_in_flight)
        pending: list[asyncio.Future] = []

        async def one(subject: str, data: bytes, headers: dict[str, str] | None):
            try:
                return await js.publish(subject, data, headers=headers)
            finally:
                window.release()

        for subject, data, headers in messages:
            await window.acquire()
            pending.append(asyncio.ensure_future(one(subject, data, headers)))
        acks = await asyncio.gather(*pending)
        return [PubAck(stream=a.stream, seq=a.seq, duplicate=bool(a.duplicate)) for a in acks]

    # -- consuming -------------------------------------------------------------------------

    def fetch(
        self, stream: str, durable: str, *, batch: int = 100, expires: float = 1.0
    ) -> list[JsMessage]:
        """Fetches up to `batch` messages from a durable pull consumer.

        Args:
            stream: the stream.
            durable: the durable pull consumer (it must exist).
            batch: the most messages to return.
            expires: seconds to wait for messages; an empty stream returns `[]`.
        """
        validate_name("stream", stream)
        validate_name("consumer", durable)
        if batch < 1 or expires <= 0:
            raise InvalidArgumentError(
                f"fetch from {stream!r}/{durable!r}: batch must be >= 1 and expires > 0, "
                f"got batch={batch!r}, expires={expires!r}"
            )
        names = {"stream": stream, "consumer": durable}
        subscription = self._pull_subscription(stream, durable)

        async def fetch_batch():
            try:
                return await subscription.fetch(batch, timeout=expires)
            except nats.errors.TimeoutError:
                return []

        messages = self.run(
            fetch_batch(),
            what=f"fetch from consumer {durable!r} of stream {stream!r}",
            timeout=expires + self.settings.request_timeout,
            **names,
        )
        return [JsMessage.from_nats(m, self) for m in messages]

    def _pull_subscription(self, stream: str, durable: str):
        cache = self._pull_subscriptions
        key = (stream, durable)
        if key not in cache:
            self.consumers.info(stream, durable)  # a clear error if either is missing
            cache[key] = self.run(
                self.js.pull_subscribe_bind(durable=durable, stream=stream),
                what=f"bind to consumer {durable!r} of stream {stream!r}",
                stream=stream,
                consumer=durable,
            )
        return cache[key]
