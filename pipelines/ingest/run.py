"""`ingest`: one run of an ingest, in the mode its stream's retention calls for.

- limits retention (the default): `engine.IngestRun` plans a range, reads it in parallel
  Spark tasks, commits it idempotently and resets the consumer past it; `options.until`
  bounds the range (a backfill piece);
- work-queue and interest retention, where acknowledged messages disappear:
  `durable.run_durable_ingest` consumes through the durable consumer, merges into Delta
  and acknowledges after the commit. Deliveries come in the consumer's order, so
  `options.until` does not apply there; the per-run limits do.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from pipelines.ingest.durable import run_durable_ingest
from pipelines.ingest.engine import IngestResult, run_ingest
from pipelines.ingest.options import DEFAULT_RUN_OPTIONS, IngestRunOptions
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import JetStreamClient, KeyValueBucket, Retention


def ingest(
    client: JetStreamClient,
    spark: SparkSession,
    spec: IngestSpec,
    table_path: str,
    *,
    checkpoints: KeyValueBucket,
    run_id: str,
    options: IngestRunOptions = DEFAULT_RUN_OPTIONS,
) -> IngestResult:
    """Runs the ingest once, exactly once into Delta, whatever the stream's retention.

    Args:
        client: a connected JetStream client (the driver's).
        spark: the SparkSession with Delta.
        spec: the ingest.
        table_path: where its bronze Delta table lives.
        checkpoints: the KV bucket for checkpoints and leases.
        run_id: recorded on rows, in the checkpoint and as the lease holder.
        options: the clock, a step hook and `until`, the last stream sequence the run may
            take (limits retention only); see `IngestRunOptions`.

    Returns:
        What the run landed, and where the consumer stands afterwards.
    """
    retention = client.streams.info(spec.stream).spec.retention
    run = run_ingest if retention is Retention.LIMITS else run_durable_ingest
    return run(
        client, spark, spec, table_path, checkpoints=checkpoints, run_id=run_id, options=options
    )
