"""`ingest`: one run of an ingest, in the mode its stream's retention calls for.

- limits retention (the default): `engine.IngestRun` plans a range, reads it in parallel
  Spark tasks, commits it idempotently and resets the consumer past it; `until` bounds the
  range (a backfill piece);
- work-queue and interest retention, where acknowledged messages disappear:
  `durable.run_durable_ingest` consumes through the durable consumer, merges into Delta
  and acknowledges after the commit. Deliveries come in the consumer's order, so `until`
  does not apply there; the per-run limits do.
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
    until: int | None = None,
) -> IngestResult:
    """Runs the ingest once, exactly once into Delta, whatever the stream's retention.

    `until` is the last stream sequence the run may take (limits retention only).
    """
    retention = client.streams.info(spec.stream).spec.retention
    options = dict(checkpoints=checkpoints, run_id=run_id, clock=clock, hook=hook)
    if retention is Retention.LIMITS:
        return run_ingest(client, spark, spec, table_path, until=until, **options)
    return run_durable_ingest(client, spark, spec, table_path, **options)
