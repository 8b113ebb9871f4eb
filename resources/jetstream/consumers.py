"""Consumers: their declared shape (`ConsumerSpec`), their state, and the management calls."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from nats.js import api

from resources.jetstream.errors import (
    ConsumerNotFoundError,
    InvalidArgumentError,
    StreamNotFoundError,
)
from resources.jetstream.streams import validate_name, validate_subject, wire_value

if TYPE_CHECKING:
    from resources.jetstream.client import JetStreamClient


class DeliverPolicy(StrEnum):
    ALL = "all"
    LAST = "last"
    NEW = "new"
    BY_START_SEQUENCE = "by_start_sequence"
    BY_START_TIME = "by_start_time"
    LAST_PER_SUBJECT = "last_per_subject"


class AckPolicy(StrEnum):
    EXPLICIT = "explicit"
    ALL = "all"
    NONE = "none"


@dataclass(frozen=True)
class ConsumerSpec:
    """A durable consumer as declared in code.

    A consumer with `deliver_subject` is a push consumer; without, a pull consumer.

    Examples:
        >>> ConsumerSpec(stream="FILE_EVENTS", durable="lakehouse-bronze",
        ...              filter_subjects=("files.>",), max_ack_pending=20_000)
    """

    stream: str
    durable: str
    filter_subjects: tuple[str, ...] = ()
    description: str | None = None
    deliver_policy: DeliverPolicy = DeliverPolicy.ALL
    opt_start_seq: int | None = None
    opt_start_time: dt.datetime | None = None
    ack_policy: AckPolicy = AckPolicy.EXPLICIT
    ack_wait: float = 30  # seconds
    max_deliver: int = -1
    backoff: tuple[float, ...] = ()  # seconds, one per redelivery
    max_ack_pending: int = 1000
    max_waiting: int | None = None
    deliver_subject: str | None = None
    deliver_group: str | None = None
    flow_control: bool = False
    idle_heartbeat: float | None = None  # seconds

    def __post_init__(self) -> None:
        validate_name("stream", self.stream)
        validate_name("consumer", self.durable)
        if isinstance(self.filter_subjects, str):
            object.__setattr__(self, "filter_subjects", (self.filter_subjects,))
        for subject in self.filter_subjects:
            validate_subject(subject)
        object.__setattr__(self, "deliver_policy", DeliverPolicy(self.deliver_policy))
        object.__setattr__(self, "ack_policy", AckPolicy(self.ack_policy))
        object.__setattr__(self, "backoff", tuple(self.backoff))
        where = f"consumer {self.durable!r} on stream {self.stream!r}"
        if (self.deliver_policy is DeliverPolicy.BY_START_SEQUENCE) != (
            self.opt_start_seq is not None
        ):
            raise InvalidArgumentError(
                f"{where}: opt_start_seq goes with deliver_policy='by_start_sequence' (and only)"
            )
        if (self.deliver_policy is DeliverPolicy.BY_START_TIME) != (
            self.opt_start_time is not None
        ):
            raise InvalidArgumentError(
                f"{where}: opt_start_time goes with deliver_policy='by_start_time' (and only)"
            )
        if self.ack_wait <= 0 or self.max_ack_pending == 0:
            raise InvalidArgumentError(
                f"{where}: ack_wait must be positive and max_ack_pending non-zero"
            )
        if self.backoff and self.max_deliver != -1 and len(self.backoff) >= self.max_deliver:
            raise InvalidArgumentError(
                f"{where}: backoff needs fewer steps ({len(self.backoff)}) than max_deliver "
                f"({self.max_deliver})"
            )
        push_only = self.deliver_group or self.flow_control
        if push_only and not self.deliver_subject:
            raise InvalidArgumentError(
                f"{where}: deliver_group and flow_control need a deliver_subject (push consumer)"
            )
        if self.flow_control and not self.idle_heartbeat:
            raise InvalidArgumentError(f"{where}: flow_control needs an idle_heartbeat")

    @property
    def is_push(self) -> bool:
        return self.deliver_subject is not None

    def to_nats(self) -> api.ConsumerConfig:
        filters = list(self.filter_subjects)
        return api.ConsumerConfig(
            durable_name=self.durable,
            name=self.durable,
            description=self.description,
            deliver_policy=api.DeliverPolicy(self.deliver_policy.value),
            opt_start_seq=self.opt_start_seq,
            opt_start_time=self.opt_start_time,
            ack_policy=api.AckPolicy(self.ack_policy.value),
            ack_wait=self.ack_wait,
            max_deliver=self.max_deliver,
            backoff=list(self.backoff) or None,
            filter_subject=filters[0] if len(filters) == 1 else None,
            filter_subjects=filters if len(filters) > 1 else None,
            max_ack_pending=self.max_ack_pending,
            max_waiting=self.max_waiting,
            deliver_subject=self.deliver_subject,
            deliver_group=self.deliver_group,
            flow_control=self.flow_control or None,
            idle_heartbeat=self.idle_heartbeat,
        )

    @classmethod
    def from_nats(cls, stream: str, config: api.ConsumerConfig) -> ConsumerSpec:
        filters = config.filter_subjects or (
            [config.filter_subject] if config.filter_subject else []
        )
        return cls(
            stream=stream,
            durable=config.durable_name or config.name or "",
            filter_subjects=tuple(filters),
            description=config.description,
            deliver_policy=DeliverPolicy(wire_value(config.deliver_policy, DeliverPolicy.ALL)),
            opt_start_seq=config.opt_start_seq,
            opt_start_time=config.opt_start_time,
            ack_policy=AckPolicy(wire_value(config.ack_policy, AckPolicy.EXPLICIT)),
            ack_wait=config.ack_wait or 30,
            max_deliver=config.max_deliver if config.max_deliver is not None else -1,
            backoff=tuple(config.backoff or ()),
            max_ack_pending=config.max_ack_pending or 1000,
            max_waiting=config.max_waiting,
            deliver_subject=config.deliver_subject,
            deliver_group=config.deliver_group,
            flow_control=bool(config.flow_control),
            idle_heartbeat=config.idle_heartbeat,
        )


@dataclass(frozen=True)
class ConsumerState:
    """A consumer's position and counters at one moment.

    `ack_floor_stream_seq` is the stream sequence below which everything is acknowledged;
    `num_pending` is how many stream messages matching the filter lie beyond `delivered`.
    """

    stream: str
    name: str
    delivered_stream_seq: int
    delivered_consumer_seq: int
    ack_floor_stream_seq: int
    ack_floor_consumer_seq: int
    num_pending: int
    num_ack_pending: int
    num_redelivered: int
    num_waiting: int
    paused: bool
    spec: ConsumerSpec = field(repr=False)

    @classmethod
    def from_nats(cls, info: api.ConsumerInfo) -> ConsumerState:
        delivered = info.delivered or api.SequenceInfo(consumer_seq=0, stream_seq=0)
        ack_floor = info.ack_floor or api.SequenceInfo(consumer_seq=0, stream_seq=0)
        return cls(
            stream=info.stream_name,
            name=info.name,
            delivered_stream_seq=delivered.stream_seq,
            delivered_consumer_seq=delivered.consumer_seq,
            ack_floor_stream_seq=ack_floor.stream_seq,
            ack_floor_consumer_seq=ack_floor.consumer_seq,
            num_pending=info.num_pending or 0,
            num_ack_pending=info.num_ack_pending or 0,
            num_redelivered=info.num_redelivered or 0,
            num_waiting=info.num_waiting or 0,
            paused=bool(info.paused),
            spec=ConsumerSpec.from_nats(info.stream_name, info.config),
        )


class Consumers:
    """Consumer management: `client.consumers`."""

    def __init__(self, client: JetStreamClient) -> None:
        self._client = client

    def add(self, spec: ConsumerSpec) -> ConsumerState:
        """Creates the durable consumer (or returns it, if it exists with the same config)."""
        info = self._client.run(
            self._client.jsm.add_consumer(spec.stream, config=spec.to_nats()),
            what=f"add consumer {spec.durable!r} to stream {spec.stream!r}",
            stream=spec.stream,
            consumer=spec.durable,
        )
        return ConsumerState.from_nats(info)

    def update(self, spec: ConsumerSpec) -> ConsumerState:
        """Changes an existing consumer's editable settings (the server refuses others)."""
        return self.add(spec)

    def info(self, stream: str, consumer: str) -> ConsumerState:
        """Returns the consumer's position and counters."""
        validate_name("stream", stream)
        validate_name("consumer", consumer)
        info = self._client.run(
            self._client.jsm.consumer_info(stream, consumer),
            what=f"read consumer {consumer!r} of stream {stream!r}",
            stream=stream,
            consumer=consumer,
        )
        return ConsumerState.from_nats(info)

    def exists(self, stream: str, consumer: str) -> bool:
        """Whether the consumer exists (False also when the stream does not)."""
        try:
            self.info(stream, consumer)
        except (ConsumerNotFoundError, StreamNotFoundError):
            return False
        return True

    def names(self, stream: str) -> list[str]:
        """The names of every consumer of `stream` (all pages)."""
        validate_name("stream", stream)
        names: list[str] = []
        while True:
            page = self._client.run(
                self._client.jsm._api_request(
                    f"{self._client.jsm._prefix}.CONSUMER.NAMES.{stream}",
                    json.dumps({"offset": len(names)}).encode(),
                    timeout=self._client.settings.request_timeout,
                ),
                what=f"list consumers of stream {stream!r}",
                stream=stream,
            )
            names.extend(page.get("consumers") or [])
            if not page.get("consumers") or len(names) >= page.get("total", 0):
                return names

    def delete(self, stream: str, consumer: str) -> None:
        """Deletes the consumer and its state."""
        validate_name("stream", stream)
        validate_name("consumer", consumer)
        self._client.run(
            self._client.jsm.delete_consumer(stream, consumer),
            what=f"delete consumer {consumer!r} of stream {stream!r}",
            stream=stream,
            consumer=consumer,
        )
