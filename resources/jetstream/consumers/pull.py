"""Pulling from durable consumers: one message, a batch, or an iterator across batches.

Each fetch is one pull request (`pull_requests.pull`): it returns as soon as any message is
ready and waits up to `expires` seconds only while there is none.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from resources.jetstream.consumers.manage import Consumers
from resources.jetstream.consumers.pull_requests import PullRequest, pull
from resources.jetstream.core.messages import JsMessage
from resources.jetstream.core.validation import validate_name, validate_seq
from resources.jetstream.errors import InvalidArgumentError

if TYPE_CHECKING:
    from resources.jetstream.consumers.state import ConsumerState
    from resources.jetstream.core.session import Session


def fetch(
    client: Session,
    stream: str,
    durable: str,
    *,
    batch: int = 100,
    max_bytes: int | None = None,
    expires: float = 1.0,
) -> list[JsMessage]:
    """Fetches up to `batch` messages from a durable pull consumer.

    Returns as soon as any message is ready, with as many as are (up to `batch` and
    `max_bytes`); waits up to `expires` seconds only while there is none.

    Args:
        client: the connected client.
        stream: the stream.
        durable: the durable pull consumer (it must exist).
        batch: the most messages to return.
        max_bytes: the most bytes to return (payloads, headers and subjects).
        expires: seconds to wait for a first message.

    Returns:
        The messages in delivery order; `[]` when none arrived within `expires`.

    Raises:
        InvalidArgumentError: a bad argument (before I/O), or the consumer is a push consumer.
        StreamNotFoundError, ConsumerNotFoundError: either is missing.
        ServerAPIError: the next message alone exceeds `max_bytes`, or another conflict.
    """
    request = _checked_request(stream, durable, batch=batch, max_bytes=max_bytes, expires=expires)
    messages = client.run(
        pull(client, stream, durable, request),
        what=f"fetch from consumer {durable!r} of stream {stream!r}",
        timeout=expires + client.settings.request_timeout + 5,
        stream=stream,
        consumer=durable,
    )
    return [JsMessage.from_nats(m, client) for m in messages]


def next_message(
    client: Session, stream: str, durable: str, *, timeout: float = 1.0
) -> JsMessage | None:
    """Pulls one message from a durable pull consumer.

    Args:
        client: the connected client.
        stream: the stream.
        durable: the durable pull consumer (it must exist).
        timeout: seconds to wait for a message.

    Returns:
        The message, or None when none arrived within `timeout`.

    Raises:
        StreamNotFoundError, ConsumerNotFoundError: either is missing.
    """
    messages = fetch(client, stream, durable, batch=1, expires=timeout)
    return messages[0] if messages else None


def iterate(
    client: Session,
    stream: str,
    durable: str,
    *,
    max_messages: int | None = None,
    idle_timeout: float = 1.0,
    batch: int = 100,
    max_bytes: int | None = None,
) -> Iterator[JsMessage]:
    """Yields a durable pull consumer's messages across fetches.

    Never fetches more than is left of `max_messages`. Messages of the current batch that
    the caller did not take (it stopped early) are redelivered after the consumer's ack_wait.

    Args:
        client: the connected client.
        stream: the stream.
        durable: the durable pull consumer (it must exist).
        max_messages: stop after this many messages (None: no limit).
        idle_timeout: stop once no message arrived for this many seconds.
        batch: the most messages per fetch.
        max_bytes: the most bytes per fetch.

    Returns:
        An iterator of messages; the arguments are checked when it is created.

    Raises:
        InvalidArgumentError: a bad argument (at once, before any I/O).
        StreamNotFoundError, ConsumerNotFoundError: either is missing (on first use).
    """
    _checked_request(stream, durable, batch=batch, max_bytes=max_bytes, expires=idle_timeout)
    if max_messages is not None:
        validate_seq("max_messages", max_messages, minimum=0)
    return _iterate(client, stream, durable, max_messages, idle_timeout, batch, max_bytes)


def _iterate(client, stream, durable, max_messages, idle_timeout, batch, max_bytes):
    yielded = 0
    idle_since = time.monotonic()
    while max_messages is None or yielded < max_messages:
        remaining = idle_timeout - (time.monotonic() - idle_since)
        if remaining <= 0:
            return
        want = batch if max_messages is None else min(batch, max_messages - yielded)
        messages = fetch(
            client, stream, durable, batch=want, max_bytes=max_bytes, expires=remaining
        )
        for message in messages:
            yield message
            yielded += 1
        if messages:
            idle_since = time.monotonic()


def _checked_request(
    stream: str, durable: str, *, batch: int, max_bytes: int | None, expires: float
) -> PullRequest:
    validate_name("stream", stream)
    validate_name("consumer", durable)
    where = f"fetch from consumer {durable!r} of stream {stream!r}"
    validate_seq(f"{where}: batch", batch)
    if max_bytes is not None:
        validate_seq(f"{where}: max_bytes", max_bytes)
    if not isinstance(expires, int | float) or expires <= 0:
        raise InvalidArgumentError(f"{where}: expires must be > 0 seconds, got {expires!r}")
    return PullRequest(batch=batch, max_bytes=max_bytes, expires=expires)


class PullConsumer:
    """A bound durable pull consumer: `fetch`, `next_message` and `iterate` without names.

    Examples:
        >>> bronze = js.pull_consumer("FILE_EVENTS", "lakehouse-bronze")
        >>> for msg in bronze.iterate(max_messages=10_000, idle_timeout=2):
        ...     msg.ack()
    """

    def __init__(self, client: Session, stream: str, durable: str) -> None:
        self._client = client
        self.stream = stream
        self.durable = durable

    @classmethod
    def bind(cls, client: Session, stream: str, durable: str) -> PullConsumer:
        """Checks that the durable exists and is a pull consumer, then binds to it.

        Raises:
            StreamNotFoundError, ConsumerNotFoundError: either is missing.
            InvalidArgumentError: the consumer is a push consumer.
        """
        state = Consumers(client).info(stream, durable)
        if state.spec.is_push:
            raise InvalidArgumentError(
                f"consumer {durable!r} of stream {stream!r} is a push consumer (deliver "
                f"subject {state.spec.deliver_subject!r}); use `subscribe_push` to bind to it",
                stream=stream,
                consumer=durable,
            )
        return cls(client, stream, durable)

    def info(self) -> ConsumerState:
        """The consumer's position and counters."""
        return Consumers(self._client).info(self.stream, self.durable)

    def fetch(
        self, *, batch: int = 100, max_bytes: int | None = None, expires: float = 1.0
    ) -> list[JsMessage]:
        """Fetches up to `batch` messages (see `JetStreamClient.fetch`)."""
        return fetch(
            self._client,
            self.stream,
            self.durable,
            batch=batch,
            max_bytes=max_bytes,
            expires=expires,
        )

    def next_message(self, *, timeout: float = 1.0) -> JsMessage | None:
        """Pulls one message, or None (see `JetStreamClient.next_message`)."""
        return next_message(self._client, self.stream, self.durable, timeout=timeout)

    def iterate(
        self,
        *,
        max_messages: int | None = None,
        idle_timeout: float = 1.0,
        batch: int = 100,
        max_bytes: int | None = None,
    ) -> Iterator[JsMessage]:
        """Yields messages across fetches (see `JetStreamClient.iterate`)."""
        return iterate(
            self._client,
            self.stream,
            self.durable,
            max_messages=max_messages,
            idle_timeout=idle_timeout,
            batch=batch,
            max_bytes=max_bytes,
        )
