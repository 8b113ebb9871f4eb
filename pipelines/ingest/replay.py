"""Replays: re-ingest a past range into the bronze table, without moving the live consumer.

A replay reads what the stream holds for a sequence range (or a time window resolved to
one) with the same parallel readers as an ingest run, and replaces that range's rows in the
bronze table in one Delta commit (`replaceWhere stream = S AND seq BETWEEN a AND b`).
Replaying a range twice gives the same table, and rows outside the range are untouched.
The durable consumer and the checkpoint are not involved.

A replay writes the ingest's bronze table, so it takes the ingest's lease (`lease.py`, held
as a replay) for its read and commit, renewing it right before the commit, and releases it
at the end: no run of the ingest, and no other replay, commits to the table meanwhile (on
S3, Delta's default LogStore is safe only with one committing driver: docs/deploy.md). A
replay started while a run holds the lease waits for it, up to `lease_wait` (default
`lease.REPLAY_WAIT`), and then stops with `LeaseHeldError` before reading or writing
anything; an ingest run started while a replay holds it waits for the replay likewise. A
Delta conflict with a writer that takes no lease is retried (maintenance takes it too).

What "what the stream holds" means: a message deleted from the stream (by its limits, or
on purpose, e.g. a secure erase) is also removed from bronze by a replay of its range.
"""

from __future__ import annotations

import datetime as dt
import logging
import sys
import time
from dataclasses import dataclass

from delta.exceptions import ConcurrentAppendException, ConcurrentDeleteReadException
from pyspark.sql import SparkSession

from pipelines.ingest.bronze import replace_range
from pipelines.ingest.errors import DataLossError
from pipelines.ingest.lease import REPLAY, REPLAY_WAIT, Clock, LeaseKeeper, acquire_lease, utc_now
from pipelines.ingest.reader import RangeRead, read_range
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import JetStreamClient, KeyValueBucket
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
    checkpoints: KeyValueBucket | None = None,
    lease_wait: float = REPLAY_WAIT,
) -> ReplayResult:
    """Re-ingests stream sequences [start, end] into the bronze table, replacing that range,
    while holding the ingest's lease.

    Args:
        client: a connected JetStream client.
        spark: the SparkSession with Delta.
        spec: the ingest whose stream, filters, table and lease the replay uses.
        table_path: where the bronze Delta table lives.
        start: the first sequence to replay (>= 1).
        end: the last sequence to replay (at most the stream's last sequence).
        run_id: recorded on the replayed rows as `ingest_run_id`, and the lease's holder.
        clock: the source of `ingested_at` and of the lease's times.
        checkpoints: the ingest's checkpoint bucket, which holds its lease (None: opened,
            or created, from `spec`).
        lease_wait: seconds to wait for the lease while a run of the ingest or another
            replay holds it; 0 fails at once.

    Raises:
        InvalidArgumentError: a bad range or wait (checked before reading anything).
        DataLossError: the stream no longer holds any message of the range.
        LeaseHeldError: another run or replay held the lease for all of `lease_wait`;
            nothing was read or written.
        LeaseLostError: the lease lapsed before the commit and another run took it; nothing
            was written.
    """
    if not 1 <= start <= end:
        raise InvalidArgumentError(
            f"replay of {spec.stream!r}: invalid range {start!r}-{end!r} (need 1 <= start <= end)"
        )
    if lease_wait < 0:
        raise InvalidArgumentError(
            f"replay of {spec.stream!r}: lease_wait must be 0 or more seconds, got {lease_wait!r}"
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
    if checkpoints is None:
        checkpoints = client.create_key_value(spec.checkpoint_bucket_spec())
    lease = acquire_lease(
        checkpoints,
        stream=spec.stream,
        consumer=spec.durable,
        holder=run_id,
        ttl=spec.lease_ttl,
        wait=lease_wait,
        clock=clock,
        work=REPLAY,
    )
    keeper = LeaseKeeper(lease, clock=clock).start()
    try:
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
            keeper.fence()  # held for a whole TTL from here, renewed while Spark writes
            try:
                version = replace_range(frame, table_path, stream=spec.stream, start=first, end=end)
                break
            except (ConcurrentAppendException, ConcurrentDeleteReadException):
                if attempt == CONFLICT_ATTEMPTS:
                    raise
                log.warning(
                    "replay of %s-%s met a concurrent Delta commit (a writer without the "
                    "lease, e.g. OPTIMIZE); retrying",
                    first,
                    end,
                )
    finally:
        release_failed = keeper.release()
        running = sys.exc_info()[1]
        if release_failed is not None and running is not None:
            running.add_note(f"(the lease was not released either: {release_failed})")
    return ReplayResult(
        start=first,
        end=end,
        requested_start=start,
        messages=counters.messages,
        bytes=counters.bytes,
        delta_version=version,
        duration=time.monotonic() - started,
    )
