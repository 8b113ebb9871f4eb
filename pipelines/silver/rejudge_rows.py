"""Which rows a rejudge judges (S), and where they were: read at the intent's pinned versions.

A retry's S is the quarantine rows the selection names; a rebuild's, the bronze rows of its
range (with `event_types`: of those types under the old contract, where the row is, or under
the current one, as parsed now). Rows after the stage's watermark are never in S. A resumed
intent adds every row a table holds now and did not at its pinned version: what the
interrupted run wrote, so it is judged again even if the contract changed since.

Every frame here reads a table at a fixed version (`versionAsOf`), so computing it again
after a write gives the same rows.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType, StructType

from pipelines.contract import Contract
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.lakehouse.delta_tables import table_version
from pipelines.silver.layout import EVENT_TYPE
from pipelines.silver.parse import parse_events
from pipelines.silver.rejudge_intent import Intent, Selection
from pipelines.silver.stage import QUARANTINE

KEY = ["stream", "seq"]
_KEYS = "stream string, seq bigint"
_LOCATED = "stream string, seq bigint, path string, event_type string, failed_rules array<string>"


@dataclass(frozen=True)
class Table:
    """A table a rejudge reads and may write."""

    target: str  # the event type's name, or QUARANTINE
    path: str
    schema: StructType | None  # None: not a table of the current contract (only deleted from)
    pinned: int | None  # its version in the intent (None: created since)


def read_at(spark: SparkSession, path: str, version: int) -> DataFrame:
    """The Delta table at `path` as of `version`."""
    return spark.read.format("delta").option("versionAsOf", version).load(path)


def scope(intent: Intent) -> Column:
    """The rows an intent may touch: its stream, seq <= upto, within the selection's seqs."""
    sel = intent.selection
    found = (F.col("stream") == intent.stream) & (F.col("seq") <= intent.upto)
    if sel.first_seq is not None:
        found = found & (F.col("seq") >= sel.first_seq)
    if sel.last_seq is not None:
        found = found & (F.col("seq") <= sel.last_seq)
    return found


def published(sel: Selection, *, partitions: bool = False) -> Column:
    """The selection's `published` bounds (with `partitions`, bronze's `published_date`
    too, so that Delta prunes the days outside them)."""
    found = F.lit(True)
    if sel.since is not None:
        found = found & (F.col("published") >= F.lit(sel.since))
        if partitions:
            day = sel.since.astimezone(dt.timezone.utc).date()
            found = found & (F.col("published_date") >= F.lit(day))
    if sel.until is not None:
        found = found & (F.col("published") < F.lit(sel.until))
        if partitions:
            day = sel.until.astimezone(dt.timezone.utc).date()
            found = found & (F.col("published_date") <= F.lit(day))
    return found


def located(spark: SparkSession, tables: list[Table], where: Column) -> DataFrame:
    """Where each row matching `where` was at the pinned versions: stream, seq, path,
    event_type (the quarantine's column, or the silver table's type) and failed_rules (the
    quarantine's; null in silver)."""
    found = spark.createDataFrame([], _LOCATED)
    for table in tables:
        if table.pinned is None:
            continue
        rows = read_at(spark, table.path, table.pinned).where(where)
        if table.target == QUARANTINE:
            kind, rules = F.col("event_type"), F.col("failed_rules")
        else:
            kind, rules = F.lit(table.target), F.lit(None).cast(ArrayType(StringType()))
        found = found.unionByName(
            rows.select(
                *KEY,
                F.lit(table.path).alias("path"),
                kind.alias("event_type"),
                rules.alias("failed_rules"),
            )
        )
    return found


def located_now(spark: SparkSession, tables: list[Table], where: Column) -> DataFrame:
    """`located`, at the versions the tables have now (each read at that version)."""
    now = []
    for table in tables:
        version = table_version(spark, table.path)
        if version is not None:
            now.append(replace(table, pinned=version))
    return located(spark, now, where)


def _selected(
    spark: SparkSession,
    contract: Contract,
    intent: Intent,
    tables: list[Table],
    bronze: DataFrame,
    was: DataFrame,
) -> DataFrame | None:
    """The keys the selection names; None: every row of `bronze` in its `published` bounds."""
    sel = intent.selection
    if sel.quarantined_only:
        keys = spark.createDataFrame([], _KEYS)
        for table in tables:
            if table.target != QUARANTINE or table.schema is None or table.pinned is None:
                continue
            rows = read_at(spark, table.path, table.pinned).where(scope(intent) & published(sel))
            if sel.rules:
                wanted = F.array(*(F.lit(rule) for rule in sel.rules))
                rows = rows.where(F.arrays_overlap("failed_rules", wanted))
            if sel.event_types:
                rows = rows.where(F.col("event_type").isin(*sel.event_types))
            keys = keys.unionByName(rows.select(*KEY))
        return keys
    if not sel.event_types:
        return None
    old = was.where(F.col("event_type").isin(*sel.event_types)).select(*KEY).distinct()
    parsed = parse_events(bronze.where(published(sel, partitions=True)), contract)
    parsed = parsed.join(old.withColumn("_old", F.lit(True)), KEY, "left")
    return parsed.where(F.col(EVENT_TYPE).isin(*sel.event_types) | F.col("_old")).select(*KEY)


def rows_to_judge(
    spark: SparkSession,
    contract: Contract,
    intent: Intent,
    tables: list[Table],
    bronze_path: str,
    *,
    resume: bool,
) -> tuple[DataFrame, DataFrame, DataFrame | None]:
    """The bronze rows of S (bronze's columns), and where every row in the intent's scope
    was at the pinned versions and, if resumed, where it is now (`located`; None: as it
    was, since nothing has written a row in scope since)."""
    where = scope(intent)
    bronze = read_at(spark, bronze_path, intent.bronze_version).where(where)
    bronze = bronze.select(*BRONZE_SCHEMA.fieldNames())
    was = located(spark, tables, where)
    keys = _selected(spark, contract, intent, tables, bronze, was)
    in_bounds = bronze.where(published(intent.selection, partitions=True))
    if not resume:
        rows = in_bounds if keys is None else bronze.join(keys, KEY, "left_semi")
        return rows, was, None
    now = located_now(spark, tables, where)
    if keys is None:
        keys = in_bounds.select(*KEY)
    # What the interrupted run wrote: rows a table holds now and did not at its pinned version.
    written = now.select(*KEY, "path").join(was.select(*KEY, "path"), [*KEY, "path"], "left_anti")
    keys = keys.unionByName(written.select(*KEY))
    return bronze.join(keys, KEY, "left_semi"), was, now
