"""A consumer's state read back from the server: `ConsumerState` (`client.consumers.info`).

Its position (delivered, acknowledged), counters, pause, and its declared shape (`spec`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from resources.jetstream.consumers.spec import ConsumerSpec
from resources.jetstream.streams.source import parse_timestamp


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
    config: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, info: Mapping[str, Any]) -> ConsumerState:
        """The state of a `CONSUMER.INFO` answer (or one item of `CONSUMER.LIST`)."""
        config = info.get("config") or {}
        delivered = info.get("delivered") or {}
        ack_floor = info.get("ack_floor") or {}
        paused = bool(info.get("paused"))
        stream = info.get("stream_name", "")
        return cls(
            stream=stream,
            name=info.get("name", ""),
            delivered_stream_seq=delivered.get("stream_seq", 0),
            delivered_consumer_seq=delivered.get("consumer_seq", 0),
            ack_floor_stream_seq=ack_floor.get("stream_seq", 0),
            ack_floor_consumer_seq=ack_floor.get("consumer_seq", 0),
            num_pending=info.get("num_pending") or 0,
            num_ack_pending=info.get("num_ack_pending") or 0,
            num_redelivered=info.get("num_redelivered") or 0,
            num_waiting=info.get("num_waiting") or 0,
            paused=paused,
            spec=ConsumerSpec.from_json(stream, config, name=info.get("name")),
            pause_until=parse_timestamp(config.get("pause_until")) if paused else None,
            config=config,
        )
