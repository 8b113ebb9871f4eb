"""A consumer's declared shape (`ConsumerSpec`) and its state read back (`ConsumerState`).

`ConsumerSpec` rejects only what the server rejects too, so that `ConsumerSpec.from_nats`
of any consumer on the server constructs; values are normalized to what the server stores,
so the read-back spec of a consumer created from a spec equals that spec.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from enum import StrEnum

from nats.js import api

from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.stream_spec import nanoseconds, unlimited, wire_seconds, wire_value
from resources.jetstream.validation import (
    validate_aware_datetime,
    validate_name,
    validate_seq,
    validate_subject,
)


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


class _WireConsumerConfig(api.ConsumerConfig):
    """nats-py's ConsumerConfig with durations rounded, not truncated, to nanoseconds."""

    def as_dict(self) -> dict[str, object]:
        result = super().as_dict()
        result["ack_wait"] = nanoseconds(self.ack_wait)
        result["idle_heartbeat"] = nanoseconds(self.idle_heartbeat)
        if self.backoff:
            result["backoff"] = [nanoseconds(step) for step in self.backoff]
        return result


@dataclass(frozen=True)
class ConsumerSpec:
    """A durable consumer as declared in code.

    A consumer with `deliver_subject` is a push consumer; without, a pull consumer. A field
    left None takes the server's default and is not compared by `topology.reconcile`.

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
    opt_start_time: dt.datetime | None = None  # timezone-aware
    ack_policy: AckPolicy = AckPolicy.EXPLICIT
    ack_wait: float | None = None  # seconds; None: 30, or backoff[0] when backoff is set
    max_deliver: int = -1  # -1: unlimited
    backoff: tuple[float, ...] = ()  # seconds, one per redelivery
    max_ack_pending: int | None = None  # None: 1000 (with acks); -1: unlimited
    max_waiting: int | None = None  # pull only; None: 512
    deliver_subject: str | None = None
    deliver_group: str | None = None
    flow_control: bool = False
    idle_heartbeat: float | None = None  # seconds; push only

    def __post_init__(self) -> None:
        validate_name("stream", self.stream)
        validate_name("consumer", self.durable)
        where = f"consumer {self.durable!r} on stream {self.stream!r}"
        filters = self.filter_subjects
        filters = (filters,) if isinstance(filters, str) else tuple(filters)
        for subject in filters:
            validate_subject(subject)
        self._set(
            filter_subjects=filters,
            description=self.description or None,
            deliver_policy=DeliverPolicy(self.deliver_policy),
            ack_policy=AckPolicy(self.ack_policy),
            backoff=tuple(wire_seconds(step) for step in self.backoff),
            max_deliver=unlimited(self.max_deliver),
        )
        self._check_start(where)
        if self.ack_wait is not None:
            if self.ack_wait <= 0:
                raise InvalidArgumentError(f"{where}: ack_wait must be positive or None")
            self._set(ack_wait=wire_seconds(self.ack_wait))
        if self.max_ack_pending is not None:
            if self.max_ack_pending == 0:
                raise InvalidArgumentError(
                    f"{where}: max_ack_pending must be positive, -1 (unlimited) or None (1000)"
                )
            self._set(max_ack_pending=max(self.max_ack_pending, -1))
        self._check_backoff(where)
        self._check_push(where)

    def _set(self, **values: object) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def _check_start(self, where: str) -> None:
        policy = self.deliver_policy
        if (policy is DeliverPolicy.BY_START_SEQUENCE) != (self.opt_start_seq is not None):
            raise InvalidArgumentError(
                f"{where}: opt_start_seq goes with deliver_policy='by_start_sequence' (and only)"
            )
        if self.opt_start_seq is not None:
            validate_seq(f"{where}: opt_start_seq", self.opt_start_seq)
        if (policy is DeliverPolicy.BY_START_TIME) != (self.opt_start_time is not None):
            raise InvalidArgumentError(
                f"{where}: opt_start_time goes with deliver_policy='by_start_time' (and only)"
            )
        if self.opt_start_time is not None:
            start = validate_aware_datetime(f"{where}: opt_start_time", self.opt_start_time)
            self._set(opt_start_time=start)
        if policy is DeliverPolicy.LAST_PER_SUBJECT and not self.filter_subjects:
            raise InvalidArgumentError(
                f"{where}: deliver_policy='last_per_subject' needs filter_subjects"
            )

    def _check_backoff(self, where: str) -> None:
        if any(step <= 0 for step in self.backoff):
            raise InvalidArgumentError(f"{where}: backoff steps must be positive seconds")
        if self.backoff and self.max_deliver != -1 and len(self.backoff) > self.max_deliver:
            raise InvalidArgumentError(
                f"{where}: backoff has more steps ({len(self.backoff)}) than max_deliver "
                f"({self.max_deliver}); shorten it or raise max_deliver"
            )
        if self.backoff and self.ack_wait is not None and self.ack_wait != self.backoff[0]:
            raise InvalidArgumentError(
                f"{where}: with backoff the server waits backoff[0] ({self.backoff[0]!r} s) for "
                f"the first ack, not ack_wait ({self.ack_wait!r} s); leave ack_wait None"
            )

    def _check_push(self, where: str) -> None:
        if self.deliver_subject is not None:
            validate_subject(self.deliver_subject, wildcards=False)
        if self.deliver_group is not None and (
            not self.deliver_group or any(c.isspace() for c in self.deliver_group)
        ):
            raise InvalidArgumentError(
                f"{where}: invalid deliver_group {self.deliver_group!r} (a queue group name)"
            )
        if self.is_push and self.max_waiting is not None:
            raise InvalidArgumentError(f"{where}: max_waiting is for pull consumers only")
        if self.max_waiting is not None:
            validate_seq(f"{where}: max_waiting", self.max_waiting)
        if not self.is_push and (self.flow_control or self.idle_heartbeat is not None):
            raise InvalidArgumentError(
                f"{where}: flow_control and idle_heartbeat need a deliver_subject (push consumer)"
            )
        if self.idle_heartbeat is not None:
            if self.idle_heartbeat <= 0:
                raise InvalidArgumentError(f"{where}: idle_heartbeat must be positive seconds")
            self._set(idle_heartbeat=wire_seconds(self.idle_heartbeat))
        if self.flow_control and not self.idle_heartbeat:
            raise InvalidArgumentError(f"{where}: flow_control needs an idle_heartbeat")

    @property
    def is_push(self) -> bool:
        return self.deliver_subject is not None

    def to_nats(self) -> api.ConsumerConfig:
        """The nats-py configuration for this spec (durations rounded to nanoseconds)."""
        filters = list(self.filter_subjects)
        return _WireConsumerConfig(
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
    def from_nats(
        cls, stream: str, config: api.ConsumerConfig, name: str | None = None
    ) -> ConsumerSpec:
        """The spec of a consumer configuration read back from the server.

        Args:
            stream: the consumer's stream.
            config: the configuration the server reports.
            name: the consumer's name, for ephemeral consumers whose config has none.
        """
        filters = config.filter_subjects or (
            [config.filter_subject] if config.filter_subject else []
        )
        return cls(
            stream=stream,
            durable=config.durable_name or config.name or name or "",
            filter_subjects=tuple(filters),
            description=config.description,
            deliver_policy=DeliverPolicy(wire_value(config.deliver_policy, DeliverPolicy.ALL)),
            opt_start_seq=config.opt_start_seq,
            opt_start_time=config.opt_start_time,
            ack_policy=AckPolicy(wire_value(config.ack_policy, AckPolicy.EXPLICIT)),
            ack_wait=config.ack_wait or None,
            max_deliver=config.max_deliver if config.max_deliver is not None else -1,
            backoff=tuple(config.backoff or ()),
            max_ack_pending=config.max_ack_pending or None,
            max_waiting=config.max_waiting or None,
            deliver_subject=config.deliver_subject,
            deliver_group=config.deliver_group,
            flow_control=bool(config.flow_control),
            idle_heartbeat=config.idle_heartbeat or None,
        )


@dataclass(frozen=True)
class ConsumerState:
    """A consumer's position and counters at one moment.

    `delivered_stream_seq` is the last stream sequence delivered (0: none yet);
    `ack_floor_stream_seq` is the stream sequence up to which everything is acknowledged;
    `num_pending` is how many stream messages matching the filter lie beyond `delivered`;
    `paused` says whether deliveries are paused, and `pause_until` until when (UTC).
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
    pause_until: dt.datetime | None = None

    @classmethod
    def from_nats(cls, info: api.ConsumerInfo) -> ConsumerState:
        delivered = info.delivered or api.SequenceInfo(consumer_seq=0, stream_seq=0)
        ack_floor = info.ack_floor or api.SequenceInfo(consumer_seq=0, stream_seq=0)
        paused = bool(info.paused)
        until = info.config.pause_until if paused else None
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
            paused=paused,
            spec=ConsumerSpec.from_nats(info.stream_name, info.config, name=info.name),
            pause_until=api.Base._parse_utc_iso(until) if until else None,
        )


__all__ = ["AckPolicy", "ConsumerSpec", "ConsumerState", "DeliverPolicy"]
