"""Ordered reads: every message of a stream, in stream order, from an ephemeral consumer.

Two forms, both without acknowledgements and recreating their consumer when a delivery goes
missing (so no gap and no repeat reaches the caller):

- `subscribe_ordered`: nats-py's ordered push consumer (flow control and idle heartbeats),
  for following a stream from a start sequence onwards.
- `read_ordered`: exactly the range `start_seq..end_seq`, for a Spark task reading its slice
  of a stream. It pulls with `no_wait` requests never larger than what is left of the range,
  so it reads nothing past `end_seq` (a push consumer would run a flow-control window ahead).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import nats.errors
import nats.js.errors
from nats.js import api

from resources.jetstream.consumers.pull_requests import PullRequest, pull
from resources.jetstream.consumers.push import PushSubscription
from resources.jetstream.core.messages import JsMessage
from resources.jetstream.core.validation import validate_name, validate_seq, validate_subject
from resources.jetstream.errors import (
    ConsumerNotFoundError,
    InvalidArgumentError,
    JetStreamError,
    RequestTimeoutError,
)

if TYPE_CHECKING:
    from resources.jetstream.core.session import Session

INACTIVE_THRESHOLD = 30.0  # seconds an abandoned ephemeral consumer lives on the server
MAX_RESETS = 5  # consumer re-creations in a row, without progress, before giving up


def _filters(config: api.ConsumerConfig, filter_subjects: Sequence[str]) -> api.ConsumerConfig:
    subjects = list(filter_subjects)
    if len(subjects) == 1:
        config.filter_subject = subjects[0]
    elif subjects:
        config.filter_subjects = subjects
    return config


def _check(stream: str, start_seq: int, filter_subjects: Sequence[str]) -> tuple[str, ...]:
    validate_name("stream", stream)
    validate_seq("start_seq", start_seq)
    subjects = (filter_subjects,) if isinstance(filter_subjects, str) else tuple(filter_subjects)
    for subject in subjects:
        validate_subject(subject)
    return subjects


def subscribe_ordered(
    client: Session,
    stream: str,
    *,
    start_seq: int = 1,
    filter_subjects: Sequence[str] = (),
    idle_heartbeat: float = 5.0,
) -> PushSubscription:
    """Follows a stream in order with an ephemeral ordered push consumer.

    Flow control and idle heartbeats are on; a missed delivery or two missed heartbeats make
    nats-py recreate the consumer after the last message seen. Messages need no ack. The
    consumer is deleted on `unsubscribe` (the server drops it anyway once idle).

    Args:
        client: the connected client.
        stream: the stream.
        start_seq: the first stream sequence to deliver.
        filter_subjects: only messages on these subjects (wildcards allowed).
        idle_heartbeat: seconds between the server's heartbeats while idle.

    Returns:
        A subscription with `next(timeout)`, `messages(...)`, iteration and `unsubscribe`.

    Raises:
        InvalidArgumentError: a bad argument (before I/O).
        StreamNotFoundError: the stream is missing.
    """
    subjects = _check(stream, start_seq, filter_subjects)
    if not isinstance(idle_heartbeat, int | float) or idle_heartbeat <= 0:
        raise InvalidArgumentError(f"idle_heartbeat must be > 0 seconds, got {idle_heartbeat!r}")

    async def start():
        config = _filters(
            api.ConsumerConfig(
                deliver_subject=client.nc.new_inbox(),
                deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=start_seq,
                ack_policy=api.AckPolicy.NONE,
                max_deliver=1,
                flow_control=True,
                idle_heartbeat=idle_heartbeat,
                num_replicas=1,
                mem_storage=True,
                inactive_threshold=INACTIVE_THRESHOLD,
            ),
            subjects,
        )
        info = await client.jsm.add_consumer(stream, config=config)
        return await client.js.subscribe_bind(
            stream=stream, config=config, consumer=info.name, ordered_consumer=True
        )

    psub = client.run(
        start(), what=f"start an ordered consumer on stream {stream!r}", stream=stream
    )
    return PushSubscription(client, psub, stream=stream, consumer=psub._consumer, ephemeral=True)


def read_ordered(
    client: Session,
    stream: str,
    start_seq: int,
    end_seq: int,
    *,
    filter_subjects: Sequence[str] = (),
    batch: int = 1000,
    max_bytes: int | None = None,
) -> Iterator[JsMessage]:
    """Yields the stored messages with `start_seq <= stream_seq <= end_seq`, in stream order.

    Reads through an ephemeral pull consumer (deleted at the end) and never past `end_seq`.
    Deleted and filtered-out sequences are skipped; a range past the stream's last message
    ends there. Messages need no ack. Safe to run concurrently on disjoint ranges.

    Args:
        client: the connected client.
        stream: the stream.
        start_seq: the first sequence of the range (>= 1).
        end_seq: the last sequence of the range (inclusive).
        filter_subjects: only messages on these subjects (wildcards allowed).
        batch: the most messages per pull request.
        max_bytes: the most bytes per pull request.

    Returns:
        An iterator of messages; the arguments are checked when it is created.

    Raises:
        InvalidArgumentError: a bad argument (at once, before any I/O).
        StreamNotFoundError: the stream is missing (on first use).
    """
    subjects = _check(stream, start_seq, filter_subjects)
    validate_seq(f"end_seq (start_seq is {start_seq})", end_seq, minimum=start_seq)
    validate_seq("batch", batch)
    if max_bytes is not None:
        validate_seq("max_bytes", max_bytes)
    return _RangeReader(client, stream, subjects).read(start_seq, end_seq, batch, max_bytes)


class _RangeReader:
    """One ephemeral pull consumer at a time, recreated from the next sequence on a gap."""

    def __init__(self, client: Session, stream: str, subjects: tuple[str, ...]) -> None:
        self._client = client
        self._stream = stream
        self._subjects = subjects
        self._consumer: str | None = None
        self._next_delivery = 1  # the consumer sequence the next message must carry

    def read(
        self, start_seq: int, end_seq: int, batch: int, max_bytes: int | None
    ) -> Iterator[JsMessage]:
        next_seq, resets = start_seq, 0
        try:
            while next_seq <= end_seq:
                if self._consumer is None and not self._open(next_seq):
                    return  # nothing stored from next_seq on (matching the filter)
                request = PullRequest(batch=min(batch, end_seq - next_seq + 1), max_bytes=max_bytes)
                batch_msgs = self._pull(request, next_seq)
                if batch_msgs == []:
                    return  # 404: the stream holds nothing more for this filter
                for msg in batch_msgs or []:
                    if msg.consumer_seq != self._next_delivery:
                        batch_msgs = None  # a delivery went missing
                        break
                    self._next_delivery += 1
                    if msg.stream_seq > end_seq:
                        return
                    yield msg
                    next_seq, resets = msg.stream_seq + 1, 0
                    if msg.num_pending == 0 or next_seq > end_seq:
                        return
                if batch_msgs is None:  # recreate the consumer from next_seq
                    resets += 1
                    if resets > MAX_RESETS:
                        raise RequestTimeoutError(
                            f"cannot read stream {self._stream!r} in order from {next_seq}: its "
                            f"consumer failed {resets} times; check the server's health",
                            stream=self._stream,
                            seq=next_seq,
                        )
                    self._close()
        finally:
            self._close()

    def _pull(self, request: PullRequest, next_seq: int) -> list[JsMessage] | None:
        """One pull request; None when the consumer is gone or the answer was lost."""
        try:
            raw = self._client.run(
                pull(self._client, self._stream, self._consumer, request),
                what=f"read stream {self._stream!r} in order from {next_seq}",
                stream=self._stream,
                consumer=self._consumer,
            )
        except (ConsumerNotFoundError, RequestTimeoutError):
            return None
        return [JsMessage.from_nats(m, self._client) for m in raw]

    def _open(self, start_seq: int) -> bool:
        """Creates the consumer at `start_seq`; False when it has nothing to deliver."""
        config = _filters(
            api.ConsumerConfig(
                deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=start_seq,
                ack_policy=api.AckPolicy.NONE,
                num_replicas=1,
                mem_storage=True,
                inactive_threshold=INACTIVE_THRESHOLD,
            ),
            self._subjects,
        )
        info = self._client.run(
            self._client.jsm.add_consumer(self._stream, config=config),
            what=f"start an ordered read of stream {self._stream!r} at {start_seq}",
            stream=self._stream,
        )
        self._consumer, self._next_delivery = info.name, 1
        if not info.num_pending:
            self._close()
            return False
        return True

    def _close(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is None or not self._client.is_connected:
            return
        with contextlib.suppress(JetStreamError, RuntimeError):  # RuntimeError: GC on the loop
            self._client.run(
                _delete_quietly(self._client, self._stream, consumer),
                what=f"delete ordered consumer {consumer!r}",
            )


async def _delete_quietly(client: Session, stream: str, consumer: str) -> None:
    with contextlib.suppress(nats.errors.Error, nats.js.errors.Error):
        await client.jsm.delete_consumer(stream, consumer)
