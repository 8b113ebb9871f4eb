"""Push subscriptions: a push consumer delivering to this client, taken synchronously.

The server pushes messages to the consumer's deliver subject and nats-py queues them on the
client's loop thread (handling heartbeats and flow control there). `PushSubscription` takes
them off that queue from the caller's thread, so the loop never waits on Dagster code.
Subscriptions to a consumer with a deliver group share its messages: each goes to one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import nats.errors
import nats.js.errors
from nats.js.client import DEFAULT_JS_SUB_PENDING_MSGS_LIMIT

from resources.jetstream.core.messages import JsMessage
from resources.jetstream.core.validation import validate_name, validate_seq
from resources.jetstream.errors import InvalidArgumentError, JetStreamError

if TYPE_CHECKING:
    from nats.js import JetStreamContext

    from resources.jetstream.core.session import Session


UNBIND_WAIT, UNBIND_PAUSE = 1.0, 0.1  # seconds a subscriber that just left may look bound


class PushSubscription:
    """Messages a push consumer delivers to this client.

    Unsettled messages are redelivered by the server after the consumer's ack_wait, also
    those still buffered here when the subscription ends.

    Examples:
        >>> with js.subscribe_push("FILE_EVENTS", "audit") as sub:
        ...     for msg in sub.messages(idle_timeout=2):
        ...         msg.ack()
    """

    def __init__(
        self,
        client: Session,
        psub: JetStreamContext.PushSubscription,
        *,
        stream: str,
        consumer: str,
        ephemeral: bool = False,
    ) -> None:
        self._client = client
        self._psub = psub
        self._conn = client.nc
        self._ephemeral = ephemeral
        self._closed = False
        self.stream = stream
        self.consumer = consumer
        client.subscriptions.add(self)  # ended by client.close()

    @property
    def pending(self) -> int:
        """Messages received and buffered here, not yet taken with `next`."""
        return self._psub.pending_msgs

    def next(self, timeout: float = 1.0) -> JsMessage | None:
        """Takes the next delivered message, waiting up to `timeout` seconds.

        Returns:
            The message, or None when nothing arrived in time.

        Raises:
            InvalidArgumentError: `timeout` is not positive, or the subscription has ended.
        """
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise InvalidArgumentError(f"timeout must be > 0 seconds, got {timeout!r}")
        self._check_open()

        async def take():
            try:
                return await self._psub.next_msg(timeout=timeout)
            except nats.errors.TimeoutError:
                return None

        msg = self._client.run(
            take(),
            what=f"receive from push consumer {self.consumer!r} of stream {self.stream!r}",
            timeout=timeout + self._client.settings.request_timeout + 5,
            stream=self.stream,
            consumer=self.consumer,
        )
        return None if msg is None else JsMessage.from_nats(msg, self._client)

    def messages(
        self, *, max_messages: int | None = None, idle_timeout: float = 1.0
    ) -> Iterator[JsMessage]:
        """Yields messages until `max_messages` were yielded or none came for `idle_timeout`.

        Raises:
            InvalidArgumentError: a limit is out of range (checked before the first message).
        """
        if max_messages is not None:
            validate_seq("max_messages", max_messages, minimum=0)
        if not isinstance(idle_timeout, int | float) or idle_timeout <= 0:
            raise InvalidArgumentError(f"idle_timeout must be > 0 seconds, got {idle_timeout!r}")
        return self._messages(max_messages, idle_timeout)

    def _messages(self, max_messages: int | None, idle_timeout: float) -> Iterator[JsMessage]:
        yielded = 0
        idle_since = time.monotonic()
        while max_messages is None or yielded < max_messages:
            remaining = idle_timeout - (time.monotonic() - idle_since)
            msg = self.next(remaining) if remaining > 0 else None
            if msg is None:
                return
            yield msg
            yielded += 1
            idle_since = time.monotonic()

    def __iter__(self) -> Iterator[JsMessage]:
        return self.messages()

    def unsubscribe(self) -> None:
        """Stops the deliveries to this subscription (an ephemeral consumer is deleted).

        Buffered, unsettled messages are dropped here and redelivered after ack_wait.
        """
        if self._closed:
            return
        self._closed = True
        self._client.subscriptions.discard(self)
        if not self._still_connected():
            return
        consumer = self._psub._consumer  # an ordered consumer may have been recreated

        async def stop() -> None:
            with contextlib.suppress(nats.errors.Error):
                await self._psub.unsubscribe()
            if self._ephemeral:
                with contextlib.suppress(nats.errors.Error, nats.js.errors.Error):
                    await self._client.jsm.delete_consumer(self.stream, consumer)

        with contextlib.suppress(JetStreamError):
            self._client.run(stop(), what=f"unsubscribe from consumer {consumer!r}")

    def __enter__(self) -> PushSubscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.unsubscribe()

    def _still_connected(self) -> bool:
        return self._client._nc is self._conn and not self._conn.is_closed

    def _check_open(self) -> None:
        if self._closed or not self._still_connected():
            raise InvalidArgumentError(
                f"the subscription to consumer {self.consumer!r} of stream {self.stream!r} "
                "has ended (unsubscribed or the client closed); subscribe again",
                stream=self.stream,
                consumer=self.consumer,
            )


def subscribe_push(
    client: Session,
    stream: str,
    durable: str,
    *,
    pending_msgs_limit: int = DEFAULT_JS_SUB_PENDING_MSGS_LIMIT,
) -> PushSubscription:
    """Binds to an existing durable push consumer; its messages queue up on the client.

    With a `deliver_group` on the consumer, all its subscriptions share the messages (each
    goes to one of them); without, only one subscription may be bound at a time.

    Args:
        client: the connected client.
        stream: the stream.
        durable: the durable push consumer (declared with a `deliver_subject`).
        pending_msgs_limit: the most messages buffered here before the server's deliveries
            are dropped (and later redelivered).

    Returns:
        A subscription with `next(timeout)`, `messages(...)`, iteration and `unsubscribe`.

    Raises:
        InvalidArgumentError: a bad argument; a pull consumer; already bound without a group.
        StreamNotFoundError, ConsumerNotFoundError: either is missing.
    """
    validate_name("stream", stream)
    validate_name("consumer", durable)
    validate_seq("pending_msgs_limit", pending_msgs_limit)
    where = f"consumer {durable!r} of stream {stream!r}"

    # The server's `push_bound` follows interest asynchronously: it can lag a new subscriber
    # and outlive one that has just left. This client's own live subscriptions are known at
    # once (read here, on the caller's thread, from a copy); for another process's, a
    # subscriber that has just unsubscribed may still show as bound for a moment, so the
    # server is asked again for up to UNBIND_WAIT seconds.
    bound_here = any(
        isinstance(sub, PushSubscription)
        and not sub._closed
        and sub._still_connected()
        and (sub.stream, sub.consumer) == (stream, durable)
        for sub in list(client.subscriptions)
    )
    wait = min(UNBIND_WAIT, client.settings.request_timeout / 2)

    async def bind() -> JetStreamContext.PushSubscription:
        info = await client.jsm.consumer_info(stream, durable)
        deadline = time.monotonic() + wait
        while (
            not (bound_here or info.config.deliver_group or not info.push_bound)
            and time.monotonic() < deadline
        ):
            await asyncio.sleep(UNBIND_PAUSE)
            info = await client.jsm.consumer_info(stream, durable)
        config = info.config
        if not config.deliver_subject:
            raise InvalidArgumentError(
                f"cannot subscribe to {where}: it is a pull consumer (no deliver_subject); "
                "use `fetch`, `iterate` or `pull_consumer`",
                stream=stream,
                consumer=durable,
            )
        if not config.deliver_group and (bound_here or info.push_bound):
            raise InvalidArgumentError(
                f"cannot subscribe to {where}: another subscriber is bound to it and it has no "
                "deliver_group; give it a deliver_group to share it, or unsubscribe the other",
                stream=stream,
                consumer=durable,
            )
        return await client.js.subscribe_bind(
            stream=stream,
            config=config,
            consumer=durable,
            manual_ack=True,
            pending_msgs_limit=pending_msgs_limit,
        )

    psub = client.run(bind(), what=f"subscribe to {where}", stream=stream, consumer=durable)
    return PushSubscription(client, psub, stream=stream, consumer=durable)
