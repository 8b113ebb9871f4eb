"""Key-Value values: `KvEntry`, `KvOperation`, `KvStatus`, and decoding them from the wire.

An entry is one revision of a key; its operation comes from the `KV-Operation` header, or
from the marker reason the server (2.11+) puts on the tombstones it writes itself.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from nats.js.kv import KV_MARKER_REASON, KV_OP, KeyValue

from resources.backports import StrEnum
from resources.jetstream.streams.spec import Storage
from resources.jetstream.streams.state import StreamState

MARKER_OPS = {"MaxAge": "PURGE", "Purge": "PURGE", "Remove": "DEL"}  # server 2.11+ markers


class KvOperation(StrEnum):
    PUT = "PUT"
    DEL = "DEL"
    PURGE = "PURGE"


@dataclass(frozen=True)
class KvEntry:
    """One revision of a key: a value (`PUT`) or a tombstone (`DEL`, `PURGE`)."""

    bucket: str
    key: str
    value: bytes
    revision: int  # the stream sequence of this write
    created: dt.datetime  # UTC
    delta: int  # entries still pending after this one in a watch or history; 0 from get
    operation: KvOperation

    @classmethod
    def from_nats(cls, entry: KeyValue.Entry) -> KvEntry:
        return cls(
            bucket=entry.bucket,
            key=entry.key,
            value=entry.value or b"",
            revision=entry.revision or 0,
            created=entry.created or dt.datetime.fromtimestamp(0, dt.timezone.utc),
            delta=entry.delta or 0,
            operation=KvOperation(entry.operation or KvOperation.PUT),
        )


@dataclass(frozen=True)
class KvStatus:
    """A bucket's configuration and counters at one moment."""

    bucket: str
    values: int  # stored entries, tombstones and older revisions included
    history: int  # revisions kept per key
    ttl: float  # seconds; 0 keeps values forever
    bytes: int
    storage: Storage
    max_value_size: int  # -1 is unlimited
    max_bytes: int  # -1 is unlimited
    replicas: int
    description: str | None

    @classmethod
    def from_state(cls, bucket: str, state: StreamState) -> KvStatus:
        """From the state of the bucket's stream `KV_<bucket>`."""
        spec = state.spec
        return cls(
            bucket=bucket,
            values=state.messages,
            history=spec.max_msgs_per_subject,
            ttl=spec.max_age,
            bytes=state.bytes,
            storage=spec.storage,
            max_value_size=spec.max_msg_size,
            max_bytes=spec.max_bytes,
            replicas=spec.replicas,
            description=spec.description,
        )


def stored_operation(headers: Mapping[str, str]) -> str:
    """The operation of a stored message from its headers: "PUT" when they name none."""
    return headers.get(KV_OP) or MARKER_OPS.get(headers.get(KV_MARKER_REASON), "PUT")
