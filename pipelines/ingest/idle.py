"""Whether an ingest has anything to land, decided without Spark.

A run of an ingest with nothing new needs neither a lease nor a SparkSession: what it would
find is in the stream's state, the durable consumer's and the KV checkpoint. On a limits
stream the run lands nothing when

- the checkpoint exists and holds no planned range (a planned range is a run that stopped
  part-way, perhaps after its Delta commit and before the consumer moved: that range must
  be finished, docs/semantics.md), and
- the stream's last sequence (bounded by the run's `until`) is not past the committed end,
  and the consumer's ack floor is not either (an ack floor past it means the checkpoint
  lost writes, which the engine repairs from the table).

An ingest that never committed (no checkpoint) lands nothing when its bronze table does not
exist yet and the stream holds nothing past the consumer's starting position. On a
work-queue or interest stream the run lands nothing when the consumer has nothing pending
and nothing delivered unacknowledged. In every other case `nothing_to_land` returns None
and the run goes through `run.ingest` as before.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pipelines.ingest.checkpoint import Checkpoint, CheckpointStore
from pipelines.ingest.engine import IngestResult, initial_checkpoint
from pipelines.ingest.spec import IngestSpec
from pipelines.lakehouse.delta_log import TableFiles
from pipelines.lakehouse.nothing_new import CannotTell, NothingNew, table_files
from resources.jetstream import (
    ConsumerState,
    JetStreamClient,
    KeyValueBucket,
    Retention,
    StreamState,
)
from resources.jetstream.errors import ConsumerNotFoundError


@dataclass(frozen=True)
class IdleIngest:
    """An ingest run that lands nothing: where things stand, found without Spark.

    Attributes:
        result: what `run.ingest` would have returned (no range, nothing written).
        finding: the positions compared.
        rows: the bronze table's rows, from its Delta log (None: no table, or not counted).
    """

    result: IngestResult
    finding: NothingNew
    rows: int | None


def nothing_to_land(
    client: JetStreamClient,
    spec: IngestSpec,
    table_path: str,
    *,
    checkpoints: KeyValueBucket,
    until: int | None = None,
) -> IdleIngest | None:
    """What a run of the ingest would find when it has nothing to land; None when it has
    something, or when that cannot be known without Spark (run `run.ingest` then).

    Args:
        client: a connected JetStream client.
        spec: the ingest.
        table_path: its bronze Delta table.
        checkpoints: the KV bucket holding its checkpoint.
        until: the last stream sequence the run may take (as `IngestRunOptions.until`).
    """
    started = time.monotonic()
    stream = client.streams.info(spec.stream)
    try:
        consumer = client.consumers.info(spec.stream, spec.durable)
    except ConsumerNotFoundError:
        return None  # the run creates it
    try:
        if stream.spec.retention is Retention.LIMITS:
            found = _limits(client, spec, table_path, stream, consumer, checkpoints, until)
        else:
            found = _durable(spec, consumer)
        if found is None:
            return None
        files = table_files(table_path)
    except CannotTell:
        return None
    return _idle(spec, stream, consumer, found, files, time.monotonic() - started)


def _limits(
    client: JetStreamClient,
    spec: IngestSpec,
    table_path: str,
    stream: StreamState,
    consumer: ConsumerState,
    checkpoints: KeyValueBucket,
    until: int | None,
) -> NothingNew | None:
    """The finding on a limits stream, or None when a range is pending or messages wait."""
    checkpoint = CheckpointStore(checkpoints).load(spec.stream, spec.durable)
    if checkpoint is None:
        checkpoint = _first_checkpoint(client, spec, table_path, stream)
        if checkpoint is None:
            return None
        source = "the consumer's starting position (no checkpoint yet)"
    elif checkpoint.planned is not None:
        return None  # an interrupted run's range: finish it
    else:
        source = "checkpoint committed end"
    last = stream.last_seq if until is None else min(stream.last_seq, until)
    committed = checkpoint.committed_end
    if last > committed or consumer.ack_floor_stream_seq > committed:
        return None
    bound = "" if until is None else f" (this run's end_seq {until})"
    return NothingNew(
        spec.table,
        (
            ("stream_last_seq", stream.last_seq),
            ("checkpoint_committed_end", committed),
            ("ack_floor", consumer.ack_floor_stream_seq),
        ),
        f"stream {spec.stream!r} last seq {stream.last_seq}{bound}, {source} {committed}, "
        f"no range pending; consumer {spec.durable!r} ack floor "
        f"{consumer.ack_floor_stream_seq}",
    )


def _first_checkpoint(
    client: JetStreamClient, spec: IngestSpec, table_path: str, stream: StreamState
) -> Checkpoint | None:
    """Where an ingest that never committed starts, when its bronze table does not exist yet
    (None when it does: the run floors the start at the table's rows, which takes Spark)."""
    if table_files(table_path) is not None:
        return None
    return initial_checkpoint(client, spec, stream)


def _durable(spec: IngestSpec, consumer: ConsumerState) -> NothingNew | None:
    """The finding on a work-queue or interest stream: nothing pending, nothing unacked."""
    if consumer.num_pending or consumer.num_ack_pending:
        return None
    return NothingNew(
        spec.table,
        (
            ("num_pending", consumer.num_pending),
            ("num_ack_pending", consumer.num_ack_pending),
            ("ack_floor", consumer.ack_floor_stream_seq),
        ),
        f"consumer {spec.durable!r} of stream {spec.stream!r} has nothing pending and nothing "
        f"unacknowledged (ack floor {consumer.ack_floor_stream_seq})",
    )


def _idle(
    spec: IngestSpec,
    stream: StreamState,
    consumer: ConsumerState,
    finding: NothingNew,
    files: TableFiles | None,
    duration: float,
) -> IdleIngest:
    """The `IdleIngest` of a run that lands nothing, as `run.ingest` would report it."""
    durable = stream.spec.retention is not Retention.LIMITS
    result = IngestResult(
        start=None,
        end=None,
        messages=0,
        bytes=0,
        delta_version=None if files is None else files.version,
        written=False,
        recovered_from=None,
        gap=None,
        ack_floor=consumer.ack_floor_stream_seq,
        lag=consumer.num_pending + (consumer.num_ack_pending if durable else 0),
        stream_last_seq=stream.last_seq,
        readers=1 if durable else spec.readers,
        duration=duration,
    )
    return IdleIngest(result, finding, None if files is None else files.rows)
