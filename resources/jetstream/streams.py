"""Streams: their declared shape (`StreamSpec`), their state, and the management calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from nats.js import api

from resources.jetstream.errors import InvalidArgumentError, StreamNotFoundError

if TYPE_CHECKING:
    from resources.jetstream.client import JetStreamClient

_FORBIDDEN_IN_NAMES = frozenset(" \t\r\n.*>/\\")


def validate_name(kind: str, name: str) -> str:
    """Checks a stream, consumer or bucket name before any I/O.

    Raises:
        InvalidArgumentError: if the name is empty or holds whitespace, '.', '*', '>' or a
            path separator.
    """
    if not isinstance(name, str) or not name or _FORBIDDEN_IN_NAMES & set(name):
        raise InvalidArgumentError(
            f"invalid {kind} name {name!r}: use letters, digits, '-' and '_' "
            "(no spaces, '.', '*', '>' or path separators)"
        )
    return name


def validate_subject(subject: str, *, wildcards: bool = True) -> str:
    """Checks a subject (or a subject filter when `wildcards`) before any I/O."""
    tokens = subject.split(".") if isinstance(subject, str) else [""]
    bad = not subject or any(not t or " " in t for t in tokens)
    if not wildcards:
        bad = bad or any(t in ("*", ">") for t in tokens)
    bad = bad or any(t == ">" for t in tokens[:-1])
    if bad:
        raise InvalidArgumentError(
            f"invalid subject {subject!r}: use dot-separated tokens like 'files.deleted'"
            + (", with '*' for one token and a final '>' for the rest" if wildcards else "")
        )
    return subject


def wire_value(value: object, default: StrEnum) -> str:
    """The string of an enum field read back by nats-py (an Enum, a plain str, or None)."""
    if value is None:
        return default.value
    return str(getattr(value, "value", value))


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


@dataclass(frozen=True)
class StreamSpec:
    """A stream as declared in code; `-1` / `0` mean unlimited, as on the wire.

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
    duplicate_window: float = 120  # seconds
    replicas: int = 1
    allow_direct: bool = True

    def __post_init__(self) -> None:
        validate_name("stream", self.name)
        if isinstance(self.subjects, str):
            object.__setattr__(self, "subjects", (self.subjects,))
        if not self.subjects:
            raise InvalidArgumentError(f"stream {self.name!r} needs at least one subject")
        for subject in self.subjects:
            validate_subject(subject)
        for enum, attr in ((Storage, "storage"), (Retention, "retention"), (Discard, "discard")):
            object.__setattr__(self, attr, enum(getattr(self, attr)))
        if not 1 <= self.replicas <= 5:
            raise InvalidArgumentError(
                f"stream {self.name!r}: replicas must be between 1 and 5, got {self.replicas!r}"
            )
        if self.max_age < 0 or self.duplicate_window < 0:
            raise InvalidArgumentError(
                f"stream {self.name!r}: max_age and duplicate_window must not be negative"
            )

    def to_nats(self) -> api.StreamConfig:
        return api.StreamConfig(
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
            duplicate_window=self.duplicate_window,
            num_replicas=self.replicas,
            allow_direct=self.allow_direct,
        )

    @classmethod
    def from_nats(cls, config: api.StreamConfig) -> StreamSpec:
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
            duplicate_window=config.duplicate_window or 0,
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


class Streams:
    """Stream management: `client.streams`."""

    def __init__(self, client: JetStreamClient) -> None:
        self._client = client

    def add(self, spec: StreamSpec) -> StreamState:
        """Creates the stream; if it exists with the same config, returns it unchanged."""
        return self._call(
            f"add stream {spec.name!r}", spec.name, self._jsm.add_stream(spec.to_nats())
        )

    def update(self, spec: StreamSpec) -> StreamState:
        """Changes an existing stream's configuration (e.g. adds a subject)."""
        return self._call(
            f"update stream {spec.name!r}", spec.name, self._jsm.update_stream(spec.to_nats())
        )

    def info(self, name: str) -> StreamState:
        """Returns the stream's configuration and state."""
        validate_name("stream", name)
        return self._call(f"read stream {name!r}", name, self._jsm.stream_info(name))

    def exists(self, name: str) -> bool:
        """Whether the stream exists."""
        try:
            self.info(name)
        except StreamNotFoundError:
            return False
        return True

    def delete(self, name: str) -> None:
        """Deletes the stream, its messages and its consumers."""
        validate_name("stream", name)
        self._client.run(self._jsm.delete_stream(name), what=f"delete stream {name!r}", stream=name)

    def _call(self, what: str, name: str, coro) -> StreamState:
        info = self._client.run(coro, what=what, stream=name)
        return StreamState.from_nats(info)

    @property
    def _jsm(self):
        return self._client.jsm


__all__ = [
    "Discard",
    "Retention",
    "Storage",
    "StreamSpec",
    "StreamState",
    "Streams",
    "validate_name",
    "validate_subject",
]
