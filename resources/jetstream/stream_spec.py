"""A stream's declared shape (`StreamSpec`) and its state read back (`StreamState`).

Values are normalized to what the server stores, so `StreamSpec.from_nats` of a stream
created from a spec equals that spec (`topology.reconcile` compares them field by field).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from nats.js import api

from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.validation import validate_name, validate_subject


def wire_value(value: object, default: StrEnum) -> str:
    """The string of an enum field read back by nats-py (an Enum, a plain str, or None)."""
    if value is None:
        return default.value
    return str(getattr(value, "value", value))


def nanoseconds(seconds: float | None) -> int:
    """Seconds as whole nanoseconds for the wire, rounded (nats-py truncates: 0.3 -> 299999999)."""
    return 0 if seconds is None else round(seconds * 1_000_000_000)


def wire_seconds(seconds: float) -> float:
    """`seconds` at the nanosecond precision the wire keeps, so it reads back equal."""
    return nanoseconds(seconds) / 1_000_000_000


def unlimited(value: int) -> int:
    """A limit as the server stores it: zero and negatives all mean unlimited (-1)."""
    return -1 if value <= 0 else value


class Storage(StrEnum):
    FILE = "file"
    MEMORY = "memory"


class Retention(StrEnum):
    LIMITS = "limits"
    INTEREST = "interest"
    WORK_QUEUE = "workqueue"


class Discard(StrEnum):
    OLD = "old"
    NEW = "new"


class _WireStreamConfig(api.StreamConfig):
    """nats-py's StreamConfig with durations rounded, not truncated, to nanoseconds."""

    def as_dict(self) -> dict[str, object]:
        result = super().as_dict()
        result["max_age"] = nanoseconds(self.max_age)
        result["duplicate_window"] = nanoseconds(self.duplicate_window)
        return result


@dataclass(frozen=True)
class StreamSpec:
    """A stream as declared in code; `-1` (or 0) means unlimited, as on the wire.

    Values are normalized to what the server stores (limits <= 0 become -1, an empty
    description None, durations to whole nanoseconds), so `StreamSpec.from_nats(...)` of a
    stream created from a spec equals that spec.

    Examples:
        >>> StreamSpec(name="FILE_EVENTS", subjects=("files.>",), max_age=7 * 86400)
    """

    name: str
    subjects: tuple[str, ...]
    description: str | None = None
    storage: Storage = Storage.FILE
    retention: Retention = Retention.LIMITS
    max_msgs: int = -1
    max_bytes: int = -1
    max_age: float = 0  # seconds; 0 keeps messages forever
    max_msg_size: int = -1
    max_msgs_per_subject: int = -1
    discard: Discard = Discard.OLD
    duplicate_window: float | None = None  # seconds; None: 2 minutes, or max_age if shorter
    replicas: int = 1
    allow_direct: bool = True

    def __post_init__(self) -> None:
        validate_name("stream", self.name)
        subjects = (self.subjects,) if isinstance(self.subjects, str) else tuple(self.subjects)
        object.__setattr__(self, "subjects", subjects)
        if not self.subjects:
            raise InvalidArgumentError(f"stream {self.name!r} needs at least one subject")
        for subject in self.subjects:
            validate_subject(subject)
        for enum, attr in ((Storage, "storage"), (Retention, "retention"), (Discard, "discard")):
            object.__setattr__(self, attr, enum(getattr(self, attr)))
        for attr in ("max_msgs", "max_bytes", "max_msg_size", "max_msgs_per_subject"):
            object.__setattr__(self, attr, unlimited(getattr(self, attr)))
        object.__setattr__(self, "description", self.description or None)
        if not 1 <= self.replicas <= 5:
            raise InvalidArgumentError(
                f"stream {self.name!r}: replicas must be between 1 and 5, got {self.replicas!r}"
            )
        if self.max_age < 0 or (self.duplicate_window or 0) < 0:
            raise InvalidArgumentError(
                f"stream {self.name!r}: max_age and duplicate_window must not be negative, got "
                f"max_age={self.max_age!r}, duplicate_window={self.duplicate_window!r}"
            )
        window = wire_seconds(self.duplicate_window) if self.duplicate_window else None
        object.__setattr__(self, "duplicate_window", window)
        object.__setattr__(self, "max_age", wire_seconds(self.max_age))
        if window and self.max_age and window > self.max_age:
            raise InvalidArgumentError(
                f"stream {self.name!r}: duplicate_window ({window!r} s) must not exceed max_age "
                f"({self.max_age!r} s); shorten the window or leave it None"
            )

    def to_nats(self) -> api.StreamConfig:
        """The nats-py configuration for this spec (durations rounded to nanoseconds)."""
        return _WireStreamConfig(
            name=self.name,
            description=self.description,
            subjects=list(self.subjects),
            storage=api.StorageType(self.storage.value),
            retention=api.RetentionPolicy(self.retention.value),
            max_msgs=self.max_msgs,
            max_bytes=self.max_bytes,
            max_age=self.max_age,
            max_msg_size=self.max_msg_size,
            max_msgs_per_subject=self.max_msgs_per_subject,
            discard=api.DiscardPolicy(self.discard.value),
            duplicate_window=self.duplicate_window or 0,  # 0: the server's default
            num_replicas=self.replicas,
            allow_direct=self.allow_direct,
        )

    @classmethod
    def from_nats(cls, config: api.StreamConfig) -> StreamSpec:
        """The spec of a stream configuration read back from the server."""
        return cls(
            name=config.name or "",
            subjects=tuple(config.subjects or ()),
            description=config.description,
            storage=Storage(wire_value(config.storage, Storage.FILE)),
            retention=Retention(wire_value(config.retention, Retention.LIMITS)),
            max_msgs=config.max_msgs if config.max_msgs is not None else -1,
            max_bytes=config.max_bytes if config.max_bytes is not None else -1,
            max_age=config.max_age or 0,
            max_msg_size=config.max_msg_size if config.max_msg_size is not None else -1,
            max_msgs_per_subject=config.max_msgs_per_subject,
            discard=Discard(wire_value(config.discard, Discard.OLD)),
            duplicate_window=config.duplicate_window or None,
            replicas=config.num_replicas or 1,
            allow_direct=bool(config.allow_direct),
        )


@dataclass(frozen=True)
class StreamState:
    """A stream's configuration and counters at one moment."""

    name: str
    subjects: tuple[str, ...]
    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    consumer_count: int
    num_deleted: int
    spec: StreamSpec = field(repr=False)

    @classmethod
    def from_nats(cls, info: api.StreamInfo) -> StreamState:
        state = info.state
        return cls(
            name=info.config.name or "",
            subjects=tuple(info.config.subjects or ()),
            messages=state.messages,
            bytes=state.bytes,
            first_seq=state.first_seq,
            last_seq=state.last_seq,
            consumer_count=state.consumer_count,
            num_deleted=state.num_deleted or 0,
            spec=StreamSpec.from_nats(info.config),
        )


__all__ = [
    "Discard",
    "Retention",
    "Storage",
    "StreamSpec",
    "StreamState",
    "nanoseconds",
    "unlimited",
    "wire_seconds",
    "wire_value",
]
