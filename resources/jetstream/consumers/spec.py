"""A consumer's declared shape: `ConsumerSpec` and its enums (the state read back: `state.py`).

A field left None is not declared: on create the server's default applies, on update and in
`reconcile` the server's current value is kept (see `spec_merge`). `ConsumerSpec` rejects
only what the server rejects too; values are normalized to what the server stores, so the
spec read back (`ConsumerSpec.from_json`, every field filled in) of a consumer created from
a spec matches that spec in every declared field.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from resources.backports import StrEnum
from resources.jetstream.core.spec_merge import check_metadata, unchecked, user_metadata
from resources.jetstream.core.validation import (
    validate_aware_datetime,
    validate_name,
    validate_seq,
    validate_subject,
)
from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.streams.source import parse_timestamp, utc_timestamp
from resources.jetstream.streams.spec import (
    from_nanoseconds,
    nanoseconds,
    unlimited,
    wire_seconds,
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


def _filters(subjects: tuple[str, ...]) -> dict[str, Any]:
    """Filters as the API writes them: one in `filter_subject`, several in `filter_subjects`."""
    if len(subjects) == 1:
        return {"filter_subject": subjects[0], "filter_subjects": None}
    return {"filter_subject": "", "filter_subjects": list(subjects) or None}


# Field -> how its value is written to the JetStream API (a dict of wire fields).
_WIRE: dict[str, Callable[[Any], dict[str, Any]]] = {
    "filter_subjects": _filters,
    "description": lambda v: {"description": v},
    "deliver_policy": lambda v: {"deliver_policy": str(v)},
    "opt_start_seq": lambda v: {"opt_start_seq": v},
    "opt_start_time": lambda v: {"opt_start_time": utc_timestamp(v)},
    "ack_policy": lambda v: {"ack_policy": str(v)},
    "ack_wait": lambda v: {"ack_wait": nanoseconds(v)},
    "max_deliver": lambda v: {"max_deliver": v},
    "backoff": lambda v: {"backoff": [nanoseconds(step) for step in v] or None},
    "max_ack_pending": lambda v: {"max_ack_pending": v},
    "max_waiting": lambda v: {"max_waiting": v},
    "deliver_subject": lambda v: {"deliver_subject": v},
    "deliver_group": lambda v: {"deliver_group": v},
    "flow_control": lambda v: {"flow_control": v},
    "idle_heartbeat": lambda v: {"idle_heartbeat": nanoseconds(v)},
    "metadata": lambda v: {"metadata": dict(v)},
}
# What this project creates when a field is not declared.
_CREATE_DEFAULTS = {"deliver_policy": "all", "ack_policy": "explicit"}
# Fields the server never lets an update change (the second group: of push consumers).
_FIXED = ("deliver_policy", "opt_start_seq", "opt_start_time", "ack_policy", "max_waiting")
_FIXED_PUSH = ("flow_control", "idle_heartbeat")


@dataclass(frozen=True)
class ConsumerSpec:
    """A durable consumer as declared in code; None leaves a setting to the server.

    A consumer with `deliver_subject` is a push consumer; without, a pull consumer. A field
    left None takes the server's default on create, and is kept as the server has it by
    `update` and `topology.plan.reconcile`.

    Examples:
        >>> ConsumerSpec(stream="FILE_EVENTS", durable="lakehouse-bronze",
        ...              filter_subjects=("files.>",), max_ack_pending=20_000)
    """

    stream: str
    durable: str
    filter_subjects: tuple[str, ...] | None = None  # (): every subject of the stream
    description: str | None = None
    deliver_policy: DeliverPolicy | None = None  # all
    opt_start_seq: int | None = None
    opt_start_time: dt.datetime | None = None  # timezone-aware
    ack_policy: AckPolicy | None = None  # explicit
    ack_wait: float | None = None  # seconds; server: 30, or backoff[0] when backoff is set
    max_deliver: int | None = None  # -1: unlimited
    backoff: tuple[float, ...] | None = None  # seconds, one per redelivery
    max_ack_pending: int | None = None  # server: 1000 (with acks); -1: unlimited
    max_waiting: int | None = None  # pull only; server: 512
    deliver_subject: str | None = None
    deliver_group: str | None = None
    flow_control: bool | None = None
    idle_heartbeat: float | None = None  # seconds; push only
    # keys are added or changed, never removed; not part of the hash (a dict)
    metadata: Mapping[str, str] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        validate_name("stream", self.stream)
        validate_name("consumer", self.durable)
        where = f"consumer {self.durable!r} on stream {self.stream!r}"
        filters = self.filter_subjects
        if filters is not None:
            filters = (filters,) if isinstance(filters, str) else tuple(filters)
            for subject in filters:
                validate_subject(subject)
        self._set(
            filter_subjects=filters,
            description=self.description or None,
            metadata=check_metadata(where, self.metadata),
        )
        if self.deliver_policy is not None:
            self._set(deliver_policy=DeliverPolicy(self.deliver_policy))
        if self.ack_policy is not None:
            self._set(ack_policy=AckPolicy(self.ack_policy))
        if self.backoff is not None:
            self._set(backoff=tuple(wire_seconds(step) for step in self.backoff))
        if self.max_deliver is not None:
            self._set(max_deliver=unlimited(self.max_deliver))
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
        if any(step <= 0 for step in self.backoff or ()):
            raise InvalidArgumentError(f"{where}: backoff steps must be positive seconds")
        limited = self.max_deliver not in (None, -1)
        if self.backoff and limited and len(self.backoff) > self.max_deliver:
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

    def to_json(self, only: Iterable[str] | None = None) -> dict[str, Any]:
        """The declared fields (or those named in `only`) as the JetStream API writes them."""
        names = [f.name for f in fields(self) if f.name in _WIRE] if only is None else only
        out: dict[str, Any] = {}
        for name in names:
            value = getattr(self, name)
            if value is not None:
                out.update(_WIRE[name](value))
        return out

    def create_json(self) -> dict[str, Any]:
        """The configuration that creates this consumer: declared fields, the rest defaults."""
        names = {"durable_name": self.durable, "name": self.durable}
        return {**names, **_CREATE_DEFAULTS, **self.to_json()}

    @classmethod
    def from_json(
        cls, stream: str, config: Mapping[str, Any], name: str | None = None
    ) -> ConsumerSpec:
        """The spec of a consumer configuration the server reports, every field filled in.

        Not checked as a declaration would be: whatever the server accepted reads back.

        Args:
            stream: the consumer's stream.
            config: the configuration JSON the server reports.
            name: the consumer's name, for ephemeral consumers whose config has none.
        """
        filters = config.get("filter_subjects") or (
            [config["filter_subject"]] if config.get("filter_subject") else []
        )
        return unchecked(
            cls,
            stream=stream,
            durable=config.get("durable_name") or config.get("name") or name or "",
            filter_subjects=tuple(filters),
            description=config.get("description") or None,
            deliver_policy=DeliverPolicy(config.get("deliver_policy") or DeliverPolicy.ALL),
            opt_start_seq=config.get("opt_start_seq") or None,
            opt_start_time=parse_timestamp(config.get("opt_start_time")),
            ack_policy=AckPolicy(config.get("ack_policy") or AckPolicy.NONE),
            ack_wait=from_nanoseconds(config.get("ack_wait")) or None,
            max_deliver=unlimited(config.get("max_deliver") or -1),
            backoff=tuple(from_nanoseconds(step) for step in config.get("backoff") or ()),
            max_ack_pending=config.get("max_ack_pending") or None,
            max_waiting=config.get("max_waiting") or None,
            deliver_subject=config.get("deliver_subject") or None,
            deliver_group=config.get("deliver_group") or None,
            flow_control=bool(config.get("flow_control")),
            idle_heartbeat=from_nanoseconds(config.get("idle_heartbeat")) or None,
            metadata=user_metadata(config.get("metadata")),
        )

    def refused_changes(self, changes: Mapping[str, tuple[Any, Any]]) -> list[str]:
        """Why the server would refuse `changes` (found -> declared) to this consumer, if so.

        `self` is the consumer as the server reports it.
        """
        refusals = [
            f"{name} cannot change on an existing consumer ({old!r} -> {new!r}); delete and "
            "re-create it, or declare a new consumer"
            for name, (old, new) in changes.items()
            if name in _FIXED or (name in _FIXED_PUSH and self.is_push)
        ]
        if "deliver_subject" in changes and not self.is_push:
            refusals.append(
                "a pull consumer cannot become a push consumer (deliver_subject); declare a "
                "new consumer"
            )
        return refusals


__all__ = ["AckPolicy", "ConsumerSpec", "DeliverPolicy"]
