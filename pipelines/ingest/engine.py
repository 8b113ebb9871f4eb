"""The exactly-once ingest run: plan, record, read, commit, advance, mark.

One run of an `IngestSpec`, as in Spark Structured Streaming's Kafka-to-Delta path:

1. take the ingest's lease (a KV key; another run of the same ingest fails fast or waits, a
   replay of its table is waited for), kept renewed in the background while the run works;
2. load the checkpoint; if it holds a planned range, an earlier run died: finish that range;
3. otherwise plan the next range, from just after the committed position to the stream's last
   sequence, bounded by the per-run limits, and record it (KV compare-and-set) before reading;
4. read exactly that range in parallel Spark tasks and append it to the bronze table in one
   Delta commit tagged (txnAppId=`<stream>:<durable>`, txnVersion=range end): Delta skips a
   repeat of the same range, so a range lands once however often it is committed;
5. move the durable consumer to the range end (consumer reset: its ack floor becomes the end
   and num_pending the remaining lag);
6. mark the checkpoint committed (compare-and-set), then release the lease.

A crash between any two steps leaves the planned range in the checkpoint; the next run
finishes it and nothing is lost or written twice. docs/semantics.md walks through each case.

Fencing: a run whose lease was taken over must not move anything. The checkpoint writes are
compare-and-sets on the revision the run read; the Delta commit is a no-op for a range at
or below one already committed (txnVersion); the consumer move is the one write nothing
else fences, so the lease is renewed right before it (`LeaseKeeper.fence`), and before the
Spark job, so that a run that lost its lease stops before it reads. Replays of the table take
the same lease (`replay.py`), so no other driver commits to the table while the run does: on
S3, Delta's default LogStore is safe only with one committing driver (docs/deploy.md).
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, replace

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from pipelines.ingest.bronze import (
    CommitOutcome,
    commit_idempotently,
    max_landed_seq,
)
from pipelines.ingest.checkpoint import Checkpoint, CheckpointStore, SeqRange
from pipelines.ingest.errors import DataLossError, RangeWriteError, spark_failure_reason
from pipelines.ingest.lease import REPLAY_WAIT, Clock, Lease, LeaseKeeper, acquire_lease
from pipelines.ingest.options import DEFAULT_RUN_OPTIONS, IngestRunOptions
from pipelines.ingest.plan import StreamPosition, plan_range, removed_by_limits
from pipelines.ingest.reader import RangeRead, read_range
from pipelines.ingest.spec import IngestSpec, OnDataLoss
from pipelines.lakehouse.delta_tables import table_version
from resources.jetstream import DeliverPolicy, JetStreamClient, KeyValueBucket, StreamState
from resources.jetstream.errors import ConsumerNotFoundError

log = logging.getLogger(__name__)

# The points between steps, in order; `options.hook(step)` is called at each (tests crash there).
STEPS = ("planned", "committed", "consumer_advanced", "checkpoint_marked")


@dataclass(frozen=True)
class IngestResult:
    """What one ingest run did, and where the consumer stands afterwards."""

    start: int | None  # the range this run landed (None: nothing new)
    end: int | None
    messages: int
    bytes: int
    delta_version: int | None
    written: bool  # False when Delta skipped the commit as a repeat of a committed range
    recovered_from: str | None  # the run whose planned range this run finished, if any
    gap: tuple[int, int] | None  # a range the stream's limits removed before it was read
    ack_floor: int
    lag: int
    stream_last_seq: int
    readers: int
    duration: float  # seconds


def ensure_consumer(client: JetStreamClient, spec: IngestSpec) -> None:
    """Creates the ingest's durable consumer if it is missing (the stream must exist)."""
    try:
        client.consumers.info(spec.stream, spec.durable)
    except ConsumerNotFoundError:
        client.consumers.add(spec.consumer_spec())


def take_lease(checkpoints: KeyValueBucket, spec: IngestSpec, run_id: str, clock: Clock) -> Lease:
    """Takes the ingest's lease for `run_id`, waiting up to `spec.lease_wait` seconds for
    another run of the ingest, and up to `lease.REPLAY_WAIT` for a replay of its table."""
    return acquire_lease(
        checkpoints,
        stream=spec.stream,
        consumer=spec.durable,
        holder=run_id,
        ttl=spec.lease_ttl,
        wait=spec.lease_wait,
        clock=clock,
        replay_wait=REPLAY_WAIT,
    )


def initial_checkpoint(
    client: JetStreamClient, spec: IngestSpec, stream: StreamState, *, landed: int = 0
) -> Checkpoint:
    """The checkpoint of an ingest that never ran: the consumer's current position.

    An existing consumer is adopted at its ack floor; one that has delivered nothing starts
    where its deliver policy points (the stream's first message for `all`). `landed`, the
    highest sequence the bronze table already holds for the stream, is a floor: if the
    checkpoint and the consumer were both lost, nothing already landed is planned again.
    """
    consumer = client.consumers.info(spec.stream, spec.durable)
    position = consumer.ack_floor_stream_seq
    if position == 0 and consumer.delivered_stream_seq == 0:
        policy = consumer.spec.deliver_policy
        if policy is DeliverPolicy.BY_START_SEQUENCE and consumer.spec.opt_start_seq:
            position = consumer.spec.opt_start_seq - 1
        elif policy in (DeliverPolicy.NEW, DeliverPolicy.LAST):
            position = stream.last_seq - (policy is DeliverPolicy.LAST)
        else:
            position = max(0, stream.first_seq - 1)
    return Checkpoint(
        stream=spec.stream, consumer=spec.durable, committed_end=max(position, landed)
    )


class IngestRun:
    """One run of an ingest. Build it, then call `run()`.

    Args:
        client: a connected JetStream client (the driver's).
        spark: the SparkSession with Delta.
        spec: the ingest.
        table_path: where its bronze Delta table lives.
        checkpoints: the KV bucket for checkpoints and leases.
        run_id: recorded on rows, in the checkpoint and as the lease holder.
        options: the clock, a hook called with each name in `STEPS` as the run passes it,
            and `until`, the last sequence this run may take (see `IngestRunOptions`).
    """

    def __init__(
        self,
        client: JetStreamClient,
        spark: SparkSession,
        spec: IngestSpec,
        table_path: str,
        *,
        checkpoints: KeyValueBucket,
        run_id: str,
        options: IngestRunOptions = DEFAULT_RUN_OPTIONS,
    ) -> None:
        self.client = client
        self.spark = spark
        self.spec = spec
        self.table_path = table_path
        self.store = CheckpointStore(checkpoints)
        self.checkpoints = checkpoints
        self.run_id = run_id
        self.clock = options.clock
        self.hook = options.hook or (lambda step: None)
        self.until = options.until

    def run(self) -> IngestResult:
        """Lands the next range (or finishes an interrupted one) exactly once."""
        started = time.monotonic()
        spec = self.spec
        ensure_consumer(self.client, spec)
        lease = take_lease(self.checkpoints, spec, self.run_id, self.clock)
        keeper = LeaseKeeper(lease, clock=self.clock)
        keeper.start()
        try:
            stream = self.client.streams.info(spec.stream)
            checkpoint = self.store.load(spec.stream, spec.durable)
            if checkpoint is None:
                checkpoint = initial_checkpoint(
                    self.client,
                    spec,
                    stream,
                    landed=max_landed_seq(self.spark, self.table_path, spec.stream),
                )
            elif checkpoint.planned is None:
                checkpoint = self._caught_up_with_the_table(checkpoint)
            recovered_from = checkpoint.planned.run_id if checkpoint.planned else None
            if checkpoint.planned is not None:
                planned = checkpoint.planned
                log.info(
                    "finishing range %s-%s planned by run %s",
                    planned.start,
                    planned.end,
                    planned.run_id,
                )
            else:
                bounds = plan_range(
                    checkpoint.committed_end,
                    StreamPosition(
                        stream.first_seq, stream.last_seq, stream.messages, stream.bytes
                    ),
                    max_messages=spec.max_messages,
                    max_bytes=spec.max_bytes,
                    until=self.until,
                )
                if bounds is None:
                    return self._result(started, None, 0, 0, None, False, None, None)
                planned = SeqRange.new(*bounds, self.run_id, self.clock())
                keeper.check()
                checkpoint = self.store.save(checkpoint.with_plan(planned))
            self.hook("planned")
            keeper.fence()

            outcome, messages, size = self._read_and_commit(
                planned, stream, recovering=recovered_from is not None
            )
            self.hook("committed")

            gap = removed_by_limits(
                planned.start, planned.end, self.client.streams.info(spec.stream).first_seq
            )
            if gap is not None and spec.on_data_loss is OnDataLoss.FAIL:
                raise self._data_loss(gap, committed=outcome.written)
            keeper.fence()
            self.client.consumers.reset(spec.stream, spec.durable, planned.end + 1)
            self.hook("consumer_advanced")
            gap_range = SeqRange.new(*gap, self.run_id, self.clock()) if gap else None
            keeper.check()
            self.store.save(
                checkpoint.with_commit(
                    planned, outcome.version, gap_range, now=self.clock(), by=self.run_id
                )
            )
            self.hook("checkpoint_marked")
            return self._result(
                started,
                planned,
                messages,
                size,
                outcome.version,
                outcome.written,
                recovered_from,
                gap,
            )
        finally:
            release_failed = keeper.release()
            running = sys.exc_info()[1]
            if release_failed is not None and running is not None:
                running.add_note(f"(the lease was not released either: {release_failed})")

    def _caught_up_with_the_table(self, checkpoint: Checkpoint) -> Checkpoint:
        """The checkpoint, moved up to the table's last landed sequence if it fell behind.

        The consumer moves only after its range is in Delta, so a consumer whose ack floor is
        past the checkpoint's committed end (with no range planned) means the checkpoint lost
        writes: a KV bucket that lost acknowledged writes (nats-server's lazy fsync and a power
        loss), or one restored from an old backup. Planning from it would land again what the
        table holds; the table's highest sequence of the stream is the truth then. The check
        costs one consumer info per run; the table is read only when the two disagree.
        """
        spec = self.spec
        consumer = self.client.consumers.info(spec.stream, spec.durable)
        if consumer.ack_floor_stream_seq <= checkpoint.committed_end:
            return checkpoint
        landed = max_landed_seq(self.spark, self.table_path, spec.stream)
        if landed <= checkpoint.committed_end:
            return checkpoint
        log.warning(
            "checkpoint of %s/%s is behind its table (committed end %s, consumer ack floor %s, "
            "table holds up to %s): planning from %s",
            spec.stream,
            spec.durable,
            checkpoint.committed_end,
            consumer.ack_floor_stream_seq,
            landed,
            landed,
        )
        return replace(checkpoint, committed_end=landed)

    def _read_and_commit(
        self, planned: SeqRange, stream: StreamState, *, recovering: bool
    ) -> tuple[CommitOutcome, int, int]:
        """Reads what the stream still holds of `planned` and commits it idempotently.

        Returns the commit's outcome, and the messages and payload bytes read.
        """
        spec = self.spec
        gap = removed_by_limits(planned.start, planned.end, stream.first_seq)
        if gap is not None and spec.on_data_loss is OnDataLoss.FAIL:
            # An earlier run of this range may have committed what it read before failing.
            raise self._data_loss(gap, committed=None if recovering else False)
        first = max(planned.start, stream.first_seq)
        if first > planned.end:  # the whole range is gone (and skipping was asked for)
            return CommitOutcome(table_version(self.spark, self.table_path), False), 0, 0
        frame, counters = read_range(
            self.spark,
            RangeRead(
                settings=self.client.settings,
                stream=spec.stream,
                filter_subjects=spec.filter_subjects,
                start=first,
                end=planned.end,
                readers=spec.readers,
                pull_batch=spec.pull_batch,
                rows_per_batch=spec.rows_per_batch,
                run_id=self.run_id,
                ingested_at=self.clock(),
            ),
        )
        try:
            outcome = commit_idempotently(
                frame, self.table_path, app_id=spec.app_id, txn_version=planned.end
            )
        except (Py4JJavaError, PySparkException) as error:
            raise RangeWriteError(
                f"landing messages {first}-{planned.end} of stream {spec.stream!r} (consumer "
                f"{spec.durable!r}) in table {self.table_path!r} failed: "
                f"{spark_failure_reason(error)}. The consumer and checkpoint did not move: the "
                "next run retries the range (a commit that did land is recognised and not "
                "repeated). Fix the cause above first",
                stream=spec.stream,
                consumer=spec.durable,
                start=first,
                end=planned.end,
                table=self.table_path,
            ) from error
        return outcome, counters.messages, counters.bytes

    def _data_loss(self, gap: tuple[int, int], *, committed: bool | None) -> DataLossError:
        """The error for a gap; `committed` says whether the rest of the range is in Delta
        (None: an earlier run of the range may have committed it)."""
        spec = self.spec
        where = {
            True: "The rest of the range is committed; the consumer and checkpoint did not move.",
            False: "Nothing was written and nothing moved.",
            None: "An earlier run may have committed the rest of the range; the consumer and "
            "checkpoint did not move.",
        }[committed]
        return DataLossError(
            f"stream {spec.stream!r} no longer holds messages {gap[0]}-{gap[1]} that consumer "
            f"{spec.durable!r} had not ingested (removed by the stream's limits: max_age, "
            f"max_msgs or max_bytes). {where} To go on without them, set the ingest's "
            "on_data_loss='skip' (the gap is recorded in the checkpoint and the run's metadata), "
            "or raise the stream's limits so it cannot happen again",
            stream=spec.stream,
            consumer=spec.durable,
            start=gap[0],
            end=gap[1],
        )

    def _result(self, started, planned, messages, size, version, written, recovered, gap):
        consumer = self.client.consumers.info(self.spec.stream, self.spec.durable)
        return IngestResult(
            start=planned.start if planned else None,
            end=planned.end if planned else None,
            messages=messages,
            bytes=size,
            delta_version=version,
            written=written,
            recovered_from=recovered,
            gap=gap,
            ack_floor=consumer.ack_floor_stream_seq,
            lag=consumer.num_pending,
            stream_last_seq=self.client.streams.info(self.spec.stream).last_seq,
            readers=self.spec.readers,
            duration=time.monotonic() - started,
        )


def run_ingest(
    client: JetStreamClient,
    spark: SparkSession,
    spec: IngestSpec,
    table_path: str,
    *,
    checkpoints: KeyValueBucket,
    run_id: str,
    options: IngestRunOptions = DEFAULT_RUN_OPTIONS,
) -> IngestResult:
    """Runs one exactly-once ingest (see `IngestRun`)."""
    return IngestRun(
        client, spark, spec, table_path, checkpoints=checkpoints, run_id=run_id, options=options
    ).run()
