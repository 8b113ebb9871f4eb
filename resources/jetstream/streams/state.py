"""A stream's state read back from the server: `StreamState` (`client.streams.info`).

The configuration as the server reported it, its declared shape (`spec`) and its counters.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from resources.jetstream.streams.source import parse_timestamp
from resources.jetstream.streams.spec import StreamSpec


@dataclass(frozen=True)
class StreamState:
    """A stream's configuration and counters at one moment.

    `first_time` and `last_time` are when the first and last stored messages were stored
    (None for an empty stream). `config` is the configuration exactly as the server reported
    it (JSON), including the settings `spec` does not model.
    """

    name: str
    subjects: tuple[str, ...]
    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    consumer_count: int
    num_deleted: int
    spec: StreamSpec = field(repr=False)
    config: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    first_time: dt.datetime | None = None
    last_time: dt.datetime | None = None

    @classmethod
    def from_json(cls, info: Mapping[str, Any]) -> StreamState:
        """The state of a `STREAM.INFO` answer (or one item of `STREAM.LIST`)."""
        config, state = info.get("config") or {}, info.get("state") or {}
        return cls(
            name=config.get("name", ""),
            subjects=tuple(config.get("subjects") or ()),
            messages=state.get("messages", 0),
            bytes=state.get("bytes", 0),
            first_seq=state.get("first_seq", 0),
            last_seq=state.get("last_seq", 0),
            consumer_count=state.get("consumer_count", 0),
            num_deleted=state.get("num_deleted") or 0,
            spec=StreamSpec.from_json(config),
            config=config,
            first_time=parse_timestamp(state.get("first_ts")) if state.get("messages") else None,
            last_time=parse_timestamp(state.get("last_ts")) if state.get("messages") else None,
        )
