"""An ingest run that keeps going while its stream does (issue 35, docs/automation.md).

A stream sensor's run lands a range in bronze and takes it to silver in the same run
(`silver_in_ingest_run`). Without more, the next batch waits for that run to end, for the
sensor's next tick, for the run queue, for a new process to load the code location, for a
Spark session and for Great Expectations to import: about half of what a batch took from
publish to silver (docs/performance.md). A run tagged `jsl/follow: <seconds>` (`FOLLOW_TAG`,
which the sensor sets when the stream's component declares `follow_seconds`) goes on
instead: once its first batch is in silver, the silver step lands the ingest's next range
in bronze (`assets.bronze.land`, the bronze asset's own code) and runs the silver stage on
it, batch after batch, in the same process and Spark session.

Each further batch is reported as the first: an `AssetMaterialization` of bronze and of
every silver table, with `batch_of_run` in its metadata, and an `AssetCheckEvaluation` per
selected check, pointing at the table's materialisation it judged, so gold's automation
reads the checks of each batch as it reads a run's (a failed blocking check is recorded
before the materialisations: `batch_events`). Dagster keeps one check status per run, so a
check's history shows the last batch of each run; every batch's verdicts are also in its
materialisations' events and in its stored reports.

Exactly once, as before: each batch is one ingest (its lease, its planned range, one
idempotent Delta commit, then the consumer moves) and one silver stage run (its watermark,
insert-only merges). A crash between any two steps leaves what a crash of a one-batch run
leaves there, and the next run finishes it.

The loop stops when the stream has nothing past the ingest's committed position (it does
not wait: the sensor launches the next run when messages come), when the time is up (no
batch starts after it; the one under way finishes), or
after a batch that failed a blocking check (the step then fails, as a run of that batch
would, and nothing downstream runs on it).
"""

from __future__ import annotations

import math

from dagster import (
    AssetCheckEvaluation,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    MaterializeResult,
    MetadataValue,
)

# Internal to Dagster: what an `AssetCheckResult` yielded by an asset records on its own.
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)

# Seconds a run keeps taking new batches after its first; the stream sensor sets it.
FOLLOW_TAG = "jsl/follow"


class FollowTagError(ValueError):
    """A run's `jsl/follow` tag is not a number of seconds."""


def follow_seconds(context: AssetExecutionContext, bronze_key: AssetKey) -> float:
    """How long this run keeps taking batches after its first: its `jsl/follow` tag's
    seconds, when the run landed `bronze_key` itself (else 0: a silver-only run does not
    land bronze).

    Raises:
        FollowTagError: the tag is not a number of seconds, 0 or more.
    """
    value = context.run.tags.get(FOLLOW_TAG)
    if value is None:
        return 0.0
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not (seconds >= 0 and math.isfinite(seconds)):  # NaN and inf too
        raise FollowTagError(
            f"run tag {FOLLOW_TAG}={value!r} is not a number of seconds: give the seconds "
            "the run keeps taking new batches (0 or more), or leave the tag out"
        )
    if not seconds:
        return 0.0
    latest = context.instance.get_latest_materialization_event(bronze_key)
    if latest is None or latest.run_id != context.run.run_id:
        context.log.warning(
            f"run tag {FOLLOW_TAG}={value!r}: this run did not land "
            f"{bronze_key.to_user_string()}, so it takes one batch"
        )
        return 0.0
    return seconds


def batch_materialization(result: MaterializeResult, batch: int) -> AssetMaterialization:
    """A further batch's materialisation of `result`'s table, numbered."""
    metadata = {**(result.metadata or {}), "batch_of_run": MetadataValue.int(batch)}
    return AssetMaterialization(asset_key=result.asset_key, metadata=metadata)


def batch_events(
    context: AssetExecutionContext, results: list[MaterializeResult | AssetCheckResult], batch: int
):
    """A further batch's events, in the order Dagster must record them: the blocking checks
    that failed, then each table's materialisation, then the other checks.

    Dagster keeps one check status per run, and reads a check of the same run as the verdict
    on the table's newest materialisation. Recorded after the batch's materialisation, a
    failed blocking check would leave the previous batch's "passed" standing for a moment,
    and gold's automation could take the batch then. Recorded first, it holds gold from the
    start; its evaluation names no materialisation (the batch's is not recorded yet).
    """
    failed = [r for r in results if isinstance(r, AssetCheckResult) and _blocks(r)]
    for result in failed:
        yield batch_check(context, result, on_latest=False)
    for result in results:
        if isinstance(result, MaterializeResult):
            yield batch_materialization(result, batch)
    for result in results:
        if isinstance(result, AssetCheckResult) and result not in failed:
            yield batch_check(context, result)


def _blocks(result: AssetCheckResult) -> bool:
    return not result.passed and result.severity == AssetCheckSeverity.ERROR


def batch_check(
    context: AssetExecutionContext, result: AssetCheckResult, *, on_latest: bool = True
) -> AssetCheckEvaluation:
    """A further batch's evaluation of `result`'s check, on the latest materialisation of its
    table (the batch's, reported just before; none when `on_latest` is false): what Dagster
    records for a check result an asset yields. Blocking when it is an error (the stage's
    checks are errors exactly when blocking)."""
    latest = []
    if on_latest:
        latest = context.instance.fetch_materializations(result.asset_key, limit=1).records
    target = None
    if latest:
        record = latest[0]
        target = AssetCheckEvaluationTargetMaterializationData(
            storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
        )
    blocking = result.severity == AssetCheckSeverity.ERROR
    return AssetCheckEvaluation(
        asset_key=result.asset_key,
        check_name=result.check_name,
        passed=result.passed,
        metadata=result.metadata,
        target_materialization_data=target,
        severity=result.severity,
        description=result.description,
        blocking=blocking,
    )


def failed_blocking(results: list[MaterializeResult | AssetCheckResult]) -> list[str]:
    """The names of the blocking checks among `results` that failed."""
    return [
        f"{r.asset_key.to_user_string()}:{r.check_name}"
        for r in results
        if isinstance(r, AssetCheckResult) and _blocks(r)
    ]
