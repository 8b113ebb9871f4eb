"""Stream and consumer state as Dagster metadata, so the UI shows (and plots) it."""

from __future__ import annotations

from dagster import MetadataValue

from resources.jetstream.consumers.state import ConsumerState
from resources.jetstream.streams.state import StreamState


def stream_metadata(state: StreamState) -> dict[str, MetadataValue]:
    """First and last sequence, message and byte counts of a stream."""
    return {
        "stream": MetadataValue.text(state.name),
        "stream_subjects": MetadataValue.text(", ".join(state.subjects)),
        "stream_messages": MetadataValue.int(state.messages),
        "stream_bytes": MetadataValue.int(state.bytes),
        "stream_first_seq": MetadataValue.int(state.first_seq),
        "stream_last_seq": MetadataValue.int(state.last_seq),
    }


def consumer_metadata(state: ConsumerState) -> dict[str, MetadataValue]:
    """Ack floor, pending and redelivery counts of a consumer (`consumer_lag` plots well)."""
    return {
        "consumer": MetadataValue.text(state.name),
        "consumer_ack_floor": MetadataValue.int(state.ack_floor_stream_seq),
        "consumer_delivered": MetadataValue.int(state.delivered_stream_seq),
        "consumer_lag": MetadataValue.int(state.num_pending),
        "consumer_ack_pending": MetadataValue.int(state.num_ack_pending),
        "consumer_redelivered": MetadataValue.int(state.num_redelivered),
    }
