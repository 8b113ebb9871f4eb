"""A stream's declared shape: `StreamSpec` and its enums (the state read back is in `state.py`).

A field left None is not declared: on create the server's default applies, on update and in
`reconcile` the server's current value is kept (see `spec_merge`). A spec read back from the
server (`StreamSpec.from_json`) has every field filled in, normalized to what the server
stores, so a declared spec and the spec read back compare field by field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from resources.backports import StrEnum
from resources.jetstream.core.spec_merge import check_metadata, unchecked, user_metadata
from resources.jetstream.core.validation import validate_name, validate_subject
from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.streams.source import StreamSource


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


def from_nanoseconds(value: int | None) -> float:
    """Nanoseconds from the wire as seconds."""
    return (value or 0) / 1_000_000_000


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


class Compression(StrEnum):
    NONE = "none"
    S2 = "s2"


# Field -> (the JetStream API's name for it, how its value is written there).
_WIRE: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "subjects": ("subjects", list),
    "description": ("description", str),
    "storage": ("storage", str),
    "retention": ("retention", str),
    "max_msgs": ("max_msgs", int),
    "max_bytes": ("max_bytes", int),
    "max_age": ("max_age", nanoseconds),
    "max_msg_size": ("max_msg_size", int),
    "max_msgs_per_subject": ("max_msgs_per_subject", int),
    "discard": ("discard", str),
    "duplicate_window": ("duplicate_window", nanoseconds),
    "replicas": ("num_replicas", int),
    "allow_direct": ("allow_direct", bool),
    "allow_rollup": ("allow_rollup_hdrs", bool),
    "deny_delete": ("deny_delete", bool),
    "deny_purge": ("deny_purge", bool),
    "compression": ("compression", str),
    "mirror": ("mirror", lambda mirror: mirror.to_json()),
    "sources": ("sources", lambda sources: [s.to_json() for s in sources]),
    "metadata": ("metadata", dict),
}
# What this project creates when a field is not declared, where it differs from the server.
_CREATE_DEFAULTS = {"allow_direct": True}


@dataclass(frozen=True)
class StreamSpec:
    """A stream as declared in code; None leaves a setting to the server (see the module).

    Limits of `-1` (or 0) mean unlimited, as on the wire. A stream has subjects, or copies
    another stream as a `mirror`, or merges `sources` (with or without subjects of its own).

    Examples:
        >>> StreamSpec(name="FILE_EVENTS", subjects=("files.>",), max_age=7 * 86400)
        >>> StreamSpec("ORDERS_EU", mirror=StreamSource("ORDERS", filter_subject="orders.eu.>"))
        >>> StreamSpec("FILE_EVENTS", ("files.>",), replicas=3, metadata={"owner": "data"})
    """

    name: str
    subjects: tuple[str, ...] | None = None
    description: str | None = None
    storage: Storage | None = None  # file
    retention: Retention | None = None  # limits
    max_msgs: int | None = None
    max_bytes: int | None = None
    max_age: float | None = None  # seconds; 0 keeps messages forever
    max_msg_size: int | None = None
    max_msgs_per_subject: int | None = None
    discard: Discard | None = None  # old
    duplicate_window: float | None = None  # seconds; server: 2 minutes, or max_age if shorter
    replicas: int | None = None  # 1
    allow_direct: bool | None = None  # True when this project creates the stream
    allow_rollup: bool | None = None  # the Nats-Rollup header purges a subject or the stream
    deny_delete: bool | None = None  # once True, messages can never be deleted one by one
    deny_purge: bool | None = None  # once True, the stream can never be purged
    compression: Compression | None = None  # none; s2 for file storage
    mirror: StreamSource | None = None
    sources: tuple[StreamSource, ...] | None = None
    # keys are added or changed, never removed; not part of the hash (a dict)
    metadata: Mapping[str, str] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        validate_name("stream", self.name)
        where = f"stream {self.name!r}"
        if isinstance(self.subjects, str):
            self._set(subjects=(self.subjects,))
        elif self.subjects is not None:
            self._set(subjects=tuple(self.subjects))
        for subject in self.subjects or ():
            validate_subject(subject)
        if self.sources is not None:
            self._set(sources=tuple(self.sources))
        if not (self.subjects or self.mirror or self.sources):
            raise InvalidArgumentError(
                f"{where} needs at least one subject, or a mirror, or sources to copy from"
            )
        if self.mirror is not None and (self.subjects or self.sources):
            raise InvalidArgumentError(
                f"{where}: a mirror has no subjects or sources of its own; drop them, or use "
                "sources=(StreamSource(...),) to merge another stream into one with subjects"
            )
        for name, enum in (
            ("storage", Storage),
            ("retention", Retention),
            ("discard", Discard),
            ("compression", Compression),
        ):
            if getattr(self, name) is not None:
                self._set(**{name: enum(getattr(self, name))})
        for name in ("max_msgs", "max_bytes", "max_msg_size", "max_msgs_per_subject"):
            if getattr(self, name) is not None:
                self._set(**{name: unlimited(getattr(self, name))})
        self._set(description=self.description or None)
        self._set(metadata=check_metadata(where, self.metadata))
        if self.replicas is not None and not 1 <= self.replicas <= 5:
            raise InvalidArgumentError(
                f"{where}: replicas must be between 1 and 5, got {self.replicas!r}"
            )
        self._check_durations(where)

    def _check_durations(self, where: str) -> None:
        if (self.max_age or 0) < 0 or (self.duplicate_window or 0) < 0:
            raise InvalidArgumentError(
                f"{where}: max_age and duplicate_window must not be negative, got "
                f"max_age={self.max_age!r}, duplicate_window={self.duplicate_window!r}"
            )
        window = wire_seconds(self.duplicate_window) if self.duplicate_window else None
        self._set(duplicate_window=window)
        if self.max_age is not None:
            self._set(max_age=wire_seconds(self.max_age))
        if window and self.max_age and window > self.max_age:
            raise InvalidArgumentError(
                f"{where}: duplicate_window ({window!r} s) must not exceed max_age "
                f"({self.max_age!r} s); shorten the window or leave it None"
            )

    def _set(self, **values: object) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def to_json(self, only: Iterable[str] | None = None) -> dict[str, Any]:
        """The declared fields (or those named in `only`) as the JetStream API writes them."""
        names = [f.name for f in fields(self) if f.name in _WIRE] if only is None else only
        out = {}
        for name in names:
            value = getattr(self, name)
            if value is not None:
                key, encode = _WIRE[name]
                out[key] = encode(value)
        return out

    def create_json(self) -> dict[str, Any]:
        """The configuration that creates this stream: declared fields, the rest defaults."""
        return {"name": self.name, **_CREATE_DEFAULTS, **self.to_json()}

    @classmethod
    def from_json(cls, config: Mapping[str, Any]) -> StreamSpec:
        """The spec of a stream configuration the server reports, every field filled in.

        Not checked as a declaration would be: whatever the server accepted reads back.
        """
        mirror = config.get("mirror")
        return unchecked(
            cls,
            name=config.get("name", ""),
            subjects=tuple(config.get("subjects") or ()),
            description=config.get("description") or None,
            storage=Storage(config.get("storage") or Storage.FILE),
            retention=Retention(config.get("retention") or Retention.LIMITS),
            max_msgs=unlimited(config.get("max_msgs", -1)),
            max_bytes=unlimited(config.get("max_bytes", -1)),
            max_age=from_nanoseconds(config.get("max_age")),
            max_msg_size=unlimited(config.get("max_msg_size", -1)),
            max_msgs_per_subject=unlimited(config.get("max_msgs_per_subject", -1)),
            discard=Discard(config.get("discard") or Discard.OLD),
            duplicate_window=from_nanoseconds(config.get("duplicate_window")) or None,
            replicas=config.get("num_replicas") or 1,
            allow_direct=bool(config.get("allow_direct")),
            allow_rollup=bool(config.get("allow_rollup_hdrs")),
            deny_delete=bool(config.get("deny_delete")),
            deny_purge=bool(config.get("deny_purge")),
            compression=Compression(config.get("compression") or Compression.NONE),
            mirror=StreamSource.from_json(mirror) if mirror else None,
            sources=tuple(StreamSource.from_json(s) for s in config.get("sources") or ()),
            metadata=user_metadata(config.get("metadata")),
        )

    def refused_changes(self, changes: Mapping[str, tuple[Any, Any]]) -> list[str]:
        """Why the server would refuse `changes` (found -> declared) to this stream, if it would.

        `self` is the stream as the server reports it.
        """
        refusals = []
        if "storage" in changes:
            old, new = changes["storage"]
            refusals.append(
                f"storage cannot change on an existing stream ({old!r} -> {new!r}); create a "
                "new stream and copy the messages into it with sources"
            )
        old, new = changes.get("retention", (None, None))
        if Retention.WORK_QUEUE in (old, new):
            refusals.append(
                f"retention cannot change to or from 'workqueue' ({old!r} -> {new!r}); only "
                "'limits' <-> 'interest' can"
            )
        for name in ("deny_delete", "deny_purge"):
            if changes.get(name) == (True, False):
                refusals.append(f"{name} is set on the server and can never be turned off")
        if "mirror" in changes:
            refusals.append("a mirror's upstream cannot change; create a new mirror instead")
        if self.mirror is not None and changes.get("subjects", (None, ()))[1]:
            refusals.append("a mirror has no subjects of its own; leave subjects undeclared")
        return refusals


__all__ = [
    "Compression",
    "Discard",
    "Retention",
    "Storage",
    "StreamSpec",
    "from_nanoseconds",
    "nanoseconds",
    "unlimited",
    "wire_seconds",
    "wire_value",
]
