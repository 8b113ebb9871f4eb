"""`ingest`: one run of an ingest, in the mode its stream's retention calls for.

- limits retention (the default): `engine.IngestRun` plans a range, reads it in parallel
  Spark tasks, commits it idempotently and resets the consumer past it;
- work-queue and interest retention, where acknowledged messages disappear:
  `durable.run_durable_ingest` consumes through the durable consumer, merges into Delta
  and acknowledges after the commit.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from pipelines.ingest.durable import run_durable_ingest
from pipelines.ingest.engine import Hook, IngestResult, run_ingest
from pipelines.ingest.lease import Clock, utc_now
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
    clock: Clock = utc_now,
    hook: Hook | None = None,
) -> IngestResult:
    """Runs the ingest once, exactly once into Delta, whatever the stream's retention."""
    retention = client.streams.info(spec.stream).spec.retention
    run = run_ingest if retention is Retention.LIMITS else run_durable_ingest
    return run(
        client,
        spark,
        spec,
        table_path,
        checkpoints=checkpoints,
        run_id=run_id,
        clock=clock,
        hook=hook,
    )
