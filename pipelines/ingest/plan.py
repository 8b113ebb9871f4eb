"""Planning a run's range, and finding the part of it the stream's limits removed.

Pure functions of the stream's state and the committed position, so they are unit-tested
without a server.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StreamPosition:
    """The parts of a stream's state that planning needs."""

    first_seq: int
    last_seq: int
    messages: int
    bytes: int

    @property
    def average_message_size(self) -> float:
        return self.bytes / self.messages if self.messages else 0.0


def plan_range(
    committed_end: int,
    stream: StreamPosition,
    *,
    max_messages: int,
    max_bytes: int,
    until: int | None = None,
) -> tuple[int, int] | None:
    """The next range to ingest: just after `committed_end`, bounded by the per-run limits.

    The byte bound uses the stream's average message size (the sizes of unread messages are
    not known before reading them). `until`, if given, is the last sequence this run may take
    (a backfill piece's end). Returns None when nothing is new (or nothing up to `until`).
    """
    start = committed_end + 1
    last = stream.last_seq if until is None else min(stream.last_seq, until)
    if last < start:
        return None
    span = max_messages
    if stream.average_message_size > 0:
        span = min(span, max(1, int(max_bytes // stream.average_message_size)))
    return start, min(last, start + span - 1)


def removed_by_limits(start: int, end: int, first_seq_after_read: int) -> tuple[int, int] | None:
    """The part of [start, end] that may have been removed before it was read, if any.

    Limits (max_age, max_msgs, max_bytes) remove messages from the head of a stream, so once
    the stream's first sequence has passed `start`, messages from `start` up to it may be gone.
    The check is conservative: it may name a range whose messages were read just in time.
    """
    if first_seq_after_read <= start:
        return None
    return start, min(end, first_seq_after_read - 1)
