"""The silver stage: bronze rows it has not processed yet -> typed, validated silver rows.

One run, usable without Dagster (`assets/silver.py` is a thin wrapper):

1. load the stage's watermark (the highest bronze sequence processed) from the KV bucket;
2. take the bronze rows after it, from one pinned version of the bronze table;
3. parse, route by eventType, de-duplicate and check them (`silver.route_bronze`, pure),
   against the rows already in silver whose (event type, eventId) is among the batch's (a
   semi-join on the batch's keys: the only ones that can collide, read once);
4. validate each event type's candidate rows with Great Expectations (the asset checks);
5. merge valid rows into `silver/file_deleted` and `silver/file_trashed`, and rejected rows
   with the rules they broke into `silver/quarantine`, each keyed on the bronze row
   (stream, seq) with an insert-only MERGE bounded to the batch's seqs (Delta skips the
   files of other seqs by their statistics);
6. move the watermark to the batch's last sequence (compare-and-set), recording the batch's
   first sequence and each check's verdict.

A run with nothing after the watermark writes nothing and moves nothing; it still returns the
watermark, whose recorded verdicts are those of the batch the silver tables last took in
(`recorded_verdicts`): what silver holds is unchanged, so that verdict still describes it.

A crash before step 6 makes the next run process the same bronze rows again; the merges
insert nothing twice, so the tables end up the same. Every bronze row lands in exactly one
of the three tables: nothing is dropped.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.delta_tables import (
    MergeOutcome,
    merge_new_rows,
    read_table,
    table_version,
)
from pipelines.file_trash import expectations, silver
from pipelines.file_trash.rules import FILE_DELETED_EVENT, FILE_TRASHED_EVENT, TRASH_RETENTION
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.watermarks import Watermark, WatermarkStore
from resources.quality import QualitySuite, ValidationReport

Validate = Callable[[DataFrame, QualitySuite], ValidationReport]

STAGE = "silver.file_events"
FILE_DELETED = FILE_DELETED_EVENT
FILE_TRASHED = FILE_TRASHED_EVENT
# Batches of up to this many bronze rows broadcast their event keys to the semi-join that
# reads silver's existing keys (~100 bytes a key); larger ones (a first run over a long
# stream, a replay) leave the join strategy to Spark.
BROADCAST_MAX_ROWS = 2_000_000


@dataclass(frozen=True)
class SilverPaths:
    """Where the stage reads and writes."""

    bronze: str
    file_deleted: str
    file_trashed: str
    quarantine: str
    bronze_table: str = "bronze/file_events"  # recorded on quarantined rows


@dataclass(frozen=True)
class SilverResult:
    """What one silver run did."""

    bronze_start: int | None  # the bronze sequences processed (None: nothing new)
    bronze_end: int | None
    bronze_version: int | None
    rows_in: int
    file_deleted: MergeOutcome
    file_trashed: MergeOutcome
    quarantine: MergeOutcome
    quarantined_by_rule: dict[str, int] = field(default_factory=dict)
    reports: dict[str, ValidationReport] = field(default_factory=dict)  # by event type
    watermark: Watermark | None = None  # as saved; as loaded when there was nothing new

    @property
    def processed(self) -> bool:
        return self.bronze_start is not None


def suites(now: dt.datetime) -> dict[str, QualitySuite]:
    """The Great Expectations suite of each event type's silver candidates."""
    return {
        FILE_DELETED: expectations.file_deleted_suite(now=now),
        FILE_TRASHED: expectations.file_trashed_suite(),
    }


def check_verdicts(reports: dict[str, ValidationReport]) -> dict[str, dict[str, bool]]:
    """Whether each check passed, by event type and check name (what the watermark records)."""
    return {
        event: {outcome.name: outcome.success for outcome in report.outcomes}
        for event, report in reports.items()
    }


def recorded_verdicts(watermark: Watermark) -> dict[str, dict[str, bool]] | None:
    """The check verdicts of the batch that last moved `watermark`, by event type and check.

    None when it records none: the stage never processed a batch, or the watermark was saved
    before verdicts were recorded.
    """
    verdicts = watermark.details.get("checks")
    if not isinstance(verdicts, dict):
        return None
    return {
        str(event): {str(name): bool(passed) for name, passed in checks.items()}
        for event, checks in verdicts.items()
        if isinstance(checks, dict)
    }


def existing_keys(
    spark: SparkSession, paths: SilverPaths, *, among: DataFrame | None = None
) -> DataFrame:
    """(event_type, event_id, stream, seq) of rows already in silver, quarantine included.

    `route_bronze` judges eventId uniqueness against these, so an event seen in an earlier
    run is a duplicate now too, while a bronze row processed again is not its own duplicate.

    Args:
        spark: the session.
        paths: the silver tables.
        among: (event_type, event_id) keys (`silver.event_keys` of the batch): only rows with
            one of them are returned, through a semi-join (broadcast `among` when it is
            small), so what the batch's de-duplication shuffles and sorts is set by the
            batch, not by the tables' size (their key columns are still scanned). None:
            every row.

    Returns:
        The keys, as `route_bronze` takes them in `existing`.
    """
    columns = ("event_type", "event_id", "stream", "seq")
    frames = [
        read_table(spark, paths.file_deleted, silver.SILVER_FILE_DELETED_SCHEMA),
        read_table(spark, paths.file_trashed, silver.SILVER_FILE_TRASHED_SCHEMA),
        read_table(spark, paths.quarantine, silver.QUARANTINE_SCHEMA).where(
            F.col("event_id").isNotNull()
        ),
    ]
    keys = frames[0].select(*columns)
    for frame in frames[1:]:
        keys = keys.unionByName(frame.select(*columns))
    if among is None:
        return keys
    return keys.join(among, ["event_type", "event_id"], "left_semi").select(*columns)


def run_silver(
    spark: SparkSession,
    paths: SilverPaths,
    *,
    watermarks: WatermarkStore,
    validate: Validate,
    stream: str,
    now: dt.datetime,
    run_id: str,
    retention: dt.timedelta = TRASH_RETENTION,
) -> SilverResult:
    """Processes the bronze rows the stage has not processed yet.

    Args:
        spark: the session.
        paths: the bronze table and the silver tables.
        watermarks: the KV store of stage watermarks.
        validate: runs a quality suite on a frame (`DataQualityResource.validate_dataframe`).
        stream: the stream whose bronze rows to process.
        now: the clock (processed_at, quarantined_at, and the "not in the future" rule).
        run_id: recorded on every row written.
        retention: how long a deleted file stays in the trash (expires_at).

    Returns:
        What was read, written, quarantined and validated.
    """
    watermark = watermarks.load(STAGE)
    bronze_version = table_version(spark, paths.bronze)
    nothing = MergeOutcome(0, None)
    if bronze_version is None:
        return SilverResult(None, None, None, 0, nothing, nothing, nothing, watermark=watermark)
    rows = (
        spark.read.format("delta")
        .option("versionAsOf", bronze_version)
        .load(paths.bronze)
        .where((F.col("stream") == stream) & (F.col("seq") > watermark.position))
        .select(*BRONZE_SCHEMA.fieldNames())
    )
    cached: list[DataFrame] = []

    def cache(frame: DataFrame) -> DataFrame:
        cached.append(frame.cache())
        return frame

    rows = cache(rows)
    try:
        bounds = rows.agg(F.min("seq"), F.max("seq"), F.count("*")).first()
        if not bounds[2]:
            return SilverResult(
                None, None, bronze_version, 0, nothing, nothing, nothing, watermark=watermark
            )
        # Only the rows of silver whose key is among the batch's can make a batch row a
        # duplicate; they are read once (cached), not once per output of the batch.
        among = silver.event_keys(rows)
        if bounds[2] <= BROADCAST_MAX_ROWS:
            among = F.broadcast(among)
        existing = cache(existing_keys(spark, paths, among=among))
        batch = silver.route_bronze(
            rows,
            existing=existing,
            now=now,
            run_id=run_id,
            source_table=paths.bronze_table,
            retention=retention,
        )
        # The candidates are cached once, validated, and then give the valid rows (exactly how
        # `route_bronze` defines them), so the batch is not parsed and routed again per output.
        candidates = {event: cache(frame) for event, frame in batch.candidates.items()}
        reports = {
            event: validate(candidates[event], suite) for event, suite in suites(now).items()
        }
        valid = {
            event: frame.where(F.size("failed_rules") == 0) for event, frame in candidates.items()
        }
        quarantine = cache(batch.quarantine)
        by_rule = {
            row["rule"]: row["rows"]
            for row in quarantine.select(F.explode("failed_rules").alias("rule"))
            .groupBy("rule")
            .agg(F.count("*").alias("rows"))
            .collect()
        }
        seqs = (bounds[0], bounds[1])
        outcomes = (
            merge_new_rows(
                spark,
                valid[FILE_DELETED],
                paths.file_deleted,
                silver.SILVER_FILE_DELETED_SCHEMA,
                seqs=seqs,
            ),
            merge_new_rows(
                spark,
                valid[FILE_TRASHED],
                paths.file_trashed,
                silver.SILVER_FILE_TRASHED_SCHEMA,
                seqs=seqs,
            ),
            merge_new_rows(
                spark, quarantine, paths.quarantine, silver.QUARANTINE_SCHEMA, seqs=seqs
            ),
        )
        saved = watermarks.save(
            watermark.advanced(
                bounds[1],
                run_id=run_id,
                now=now,
                bronze_version=bronze_version,
                bronze_start=bounds[0],
                checks=check_verdicts(reports),
            )
        )
        return SilverResult(
            bounds[0],
            bounds[1],
            bronze_version,
            bounds[2],
            *outcomes,
            quarantined_by_rule=by_rule,
            reports=reports,
            watermark=saved,
        )
    finally:
        for frame in cached:
            frame.unpersist()
