"""Ingest from work-queue and interest streams, where an acknowledged message disappears.

Such a stream cannot be re-read by sequence once acknowledged, and its consumer cannot be
reset past unacknowledged messages, so the run consumes through the durable consumer itself:

1. take the ingest's lease (the one its replays take too), kept renewed while the run works;
2. fetch up to `max_messages` from the durable consumer (they stay unacknowledged);
3. renew the lease (so no other writer of the table commits meanwhile), then merge them into
   the bronze table in one Delta commit, inserting only (stream, seq) pairs the table does
   not hold yet: a message redelivered after a crash lands once;
4. acknowledge them (the last one synchronously) - only now may the stream delete them;
5. record the committed position in the checkpoint (compare-and-set) and release the lease.

A crash before step 4 leaves the messages unacknowledged: the server redelivers them after
`ack_wait`, and step 3 absorbs the ones already committed.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pyarrow as pa
from pyspark.sql import SparkSession

from pipelines.ingest.bronze import BRONZE_SCHEMA, PARTITION_COLUMNS, BronzeColumns
from pipelines.ingest.checkpoint import Checkpoint, CheckpointStore
from pipelines.ingest.engine import IngestResult, ensure_consumer, take_lease
from pipelines.ingest.lease import Clock, LeaseKeeper
from pipelines.ingest.options import DEFAULT_RUN_OPTIONS, IngestRunOptions
from pipelines.ingest.spec import IngestSpec
from pipelines.lakehouse.delta_tables import merge_insert_only, table_exists
from pipelines.lakehouse.delta_tables import table_version as delta_version
from resources.jetstream import JetStreamClient, JsMessage, KeyValueBucket

FETCH_EXPIRES = 1.0  # seconds a pull waits when the consumer has nothing


def run_durable_ingest(
    client: JetStreamClient,
    spark: SparkSession,
    spec: IngestSpec,
    table_path: str,
    *,
    checkpoints: KeyValueBucket,
    run_id: str,
    options: IngestRunOptions = DEFAULT_RUN_OPTIONS,
) -> IngestResult:
    """Lands what the durable consumer delivers, acknowledging only after the Delta commit.

    `options.until` does not apply: deliveries come in the consumer's order, not by sequence.
    """
    clock, hook = options.clock, options.hook or (lambda step: None)
    started = time.monotonic()
    ensure_consumer(client, spec)
    keeper = LeaseKeeper(take_lease(checkpoints, spec, run_id, clock), clock=clock).start()
    try:
        messages = _fetch(client, spec)
        version, written = delta_version(spark, table_path), False
        if messages:
            keeper.fence()
            version, written = _merge(spark, table_path, messages, run_id, clock), True
            hook("committed")
            for message in messages[:-1]:
                message.ack()
            messages[-1].ack_sync()
            hook("acknowledged")
            store = CheckpointStore(checkpoints)
            checkpoint = store.load(spec.stream, spec.durable) or Checkpoint(
                stream=spec.stream, consumer=spec.durable
            )
            end = max(checkpoint.committed_end, max(m.stream_seq for m in messages))
            store.save(
                replace(
                    checkpoint,
                    committed_end=end,
                    committed_version=version,
                    committed_run_id=run_id,
                    committed_at=clock().isoformat(),
                    recovered_by=None,  # redelivery, not a planned range, recovers here
                )
            )
            hook("checkpoint_marked")
        consumer = client.consumers.info(spec.stream, spec.durable)
        return IngestResult(
            start=min((m.stream_seq for m in messages), default=None),
            end=max((m.stream_seq for m in messages), default=None),
            messages=len({m.stream_seq for m in messages}),
            bytes=sum(len(m.data) for m in messages),
            delta_version=version,
            written=written,
            recovered_from=None,
            gap=None,
            ack_floor=consumer.ack_floor_stream_seq,
            lag=consumer.num_pending + consumer.num_ack_pending,
            stream_last_seq=client.streams.info(spec.stream).last_seq,
            readers=1,
            duration=time.monotonic() - started,
        )
    finally:
        keeper.release()


def _fetch(client: JetStreamClient, spec: IngestSpec) -> list[JsMessage]:
    """Up to `spec.max_messages` messages, stopping when a pull comes back empty.

    (A message's `num_pending` cannot tell when to stop: redeliveries arrive with 0.)
    """
    messages: list[JsMessage] = []
    while len(messages) < spec.max_messages:
        batch = client.fetch(
            spec.stream,
            spec.durable,
            batch=min(spec.pull_batch, spec.max_messages - len(messages)),
            expires=FETCH_EXPIRES,
        )
        if not batch:
            break
        messages.extend(batch)
    return messages


def _merge(
    spark: SparkSession, table_path: str, messages: list[JsMessage], run_id: str, clock: Clock
) -> int:
    """Inserts the messages whose (stream, seq) the table lacks; returns the table version."""
    unique = list({m.stream_seq: m for m in messages}.values())  # a redelivery within the batch
    batch = BronzeColumns.from_messages(unique).to_arrow(unique[0].stream, run_id, clock())
    rows = spark.createDataFrame(pa.Table.from_batches([batch]), schema=BRONZE_SCHEMA)
    if not table_exists(spark, table_path):
        rows.write.format("delta").partitionBy(*PARTITION_COLUMNS).save(table_path)
    else:
        low, high = min(m.stream_seq for m in unique), max(m.stream_seq for m in unique)
        merge_insert_only(
            spark,
            rows,
            table_path,
            f"t.stream = s.stream AND t.seq = s.seq AND t.seq BETWEEN {low} AND {high}",
        )
    version = delta_version(spark, table_path)
    assert version is not None
    return version
