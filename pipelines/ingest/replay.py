"""Replays: re-ingest a past range into the bronze table, without moving the live consumer.

A replay reads what the stream holds for a sequence range (or a time window resolved to
one) with the same parallel readers as an ingest run, and replaces that range's rows in the
bronze table in one Delta commit (`replaceWhere stream = S AND seq BETWEEN a AND b`).
Replaying a range twice gives the same table, and rows outside the range are untouched.
The durable consumer and the checkpoint are not involved, so a replay can run beside the
live ingest; a Delta conflict with a concurrent commit is retried.

What "what the stream holds" means: a message deleted from the stream (by its limits, or
on purpose, e.g. a secure erase) is also removed from bronze by a replay of its range.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass

from delta.exceptions import ConcurrentAppendException, ConcurrentDeleteReadException
from pyspark.sql import SparkSession

from pipelines.ingest.bronze import replace_range
from pipelines.ingest.errors import DataLossError
from pipelines.ingest.lease import Clock, utc_now
from pipelines.ingest.reader import RangeRead, read_range
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import JetStreamClient
from resources.jetstream.errors import InvalidArgumentError

log = logging.getLogger(__name__)

CONFLICT_ATTEMPTS = 3


@dataclass(frozen=True)
class ReplayResult:
    """What a replay replaced."""

    start: int  # the first sequence replaced (the request's, or the stream's first if later)
    end: int
    requested_start: int
    messages: int
    bytes: int
    delta_version: int
    duration: float  # seconds


def resolve_time_window(
    client: JetStreamClient, stream: str, start: dt.datetime, end: dt.datetime
) -> tuple[int, int] | None:
    """The sequences of the messages the stream stored in [start, end), or None if none.

    Raises:
        InvalidArgumentError: the window is empty or its times have no time zone.
    """
    if start.tzinfo is None or end.tzinfo is None or end <= start:
        raise InvalidArgumentError(
            f"invalid time window {start!r} .. {end!r}: use timezone-aware times, start < end"
        )
    first = client.streams.first_seq_at(stream, start)
    if first is None:
        return None
    after = client.streams.first_seq_at(stream, end)
    last = after - 1 if after is not None else client.streams.info(stream).last_seq
    return (first, last) if last >= first else None


def replay_range(
    client: JetStreamClient,
    spark: SparkSession,
    spec: IngestSpec,
    table_path: str,
    *,
    start: int,
    end: int,
    run_id: str,
    clock: Clock = utc_now,
) -> ReplayResult:
    """Re-ingests stream sequences [start, end] into the bronze table, replacing that range.

    Args:
        client: a connected JetStream client.
        spark: the SparkSession with Delta.
        spec: the ingest whose stream, filters and table the replay uses.
        table_path: where the bronze Delta table lives.
        start: the first sequence to replay (>= 1).
        end: the last sequence to replay (at most the stream's last sequence).
        run_id: recorded on the replayed rows as `ingest_run_id`.
        clock: the source of `ingested_at`.

    Raises:
        InvalidArgumentError: a bad range (checked before reading anything).
        DataLossError: the stream no longer holds any message of the range.
    """
    if not 1 <= start <= end:
        raise InvalidArgumentError(
            f"replay of {spec.stream!r}: invalid range {start!r}-{end!r} (need 1 <= start <= end)"
        )
    started = time.monotonic()
    stream = client.streams.info(spec.stream)
    if end > stream.last_seq:
        raise InvalidArgumentError(
            f"replay of {spec.stream!r}: range end {end} is past the stream's last sequence "
            f"{stream.last_seq}; replay only what has been published"
        )
    first = max(start, stream.first_seq)
    if first > end:
        raise DataLossError(
            f"stream {spec.stream!r} no longer holds any of {start}-{end} (its first sequence is "
            f"{stream.first_seq}); nothing was replaced",
            stream=spec.stream,
            consumer=spec.durable,
            start=start,
            end=end,
        )
    if first > start:
        log.warning(
            "stream %r no longer holds %s-%s; replaying %s-%s",
            spec.stream,
            start,
            first - 1,
            first,
            end,
        )
    for attempt in range(1, CONFLICT_ATTEMPTS + 1):
        frame, counters = read_range(
            spark,
            RangeRead(
                settings=client.settings,
                stream=spec.stream,
                filter_subjects=spec.filter_subjects,
                start=first,
                end=end,
                readers=spec.readers,
                pull_batch=spec.pull_batch,
                rows_per_batch=spec.rows_per_batch,
                run_id=run_id,
                ingested_at=clock(),
            ),
        )
        try:
            version = replace_range(frame, table_path, stream=spec.stream, start=first, end=end)
            break
        except (ConcurrentAppendException, ConcurrentDeleteReadException):
            if attempt == CONFLICT_ATTEMPTS:
                raise
            log.warning("replay of %s-%s met a concurrent Delta commit; retrying", first, end)
    return ReplayResult(
        start=first,
        end=end,
        requested_start=start,
        messages=counters.messages,
        bytes=counters.bytes,
        delta_version=version,
        duration=time.monotonic() - started,
    )
