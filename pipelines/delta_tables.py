"""Delta Lake writes the silver and gold stages share: idempotent merges, tagged overwrites,
and table maintenance (OPTIMIZE, VACUUM).

Silver tables are keyed on the bronze row they came from, (stream, seq), and written with an
insert-only MERGE, so processing a bronze range twice leaves the same rows. Gold tables are
recomputed and overwritten; each overwrite carries the inputs it was computed from in the
commit's `userMetadata`, so a run can tell that nothing changed and skip the write.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

SOURCE_KEY = ("stream", "seq")


def table_exists(spark: SparkSession, path: str) -> bool:
    """Whether a Delta table exists at `path`."""
    from delta.tables import DeltaTable

    return DeltaTable.isDeltaTable(spark, path)


def table_version(spark: SparkSession, path: str) -> int | None:
    """The table's current version, or None if there is no table yet."""
    from delta.tables import DeltaTable

    if not table_exists(spark, path):
        return None
    return DeltaTable.forPath(spark, path).history(1).collect()[0]["version"]


def read_table(spark: SparkSession, path: str, schema: StructType) -> DataFrame:
    """The table at `path`, or an empty frame of `schema` if it does not exist yet."""
    if not table_exists(spark, path):
        return spark.createDataFrame([], schema)
    return spark.read.format("delta").load(path)


def ensure_table(
    spark: SparkSession, path: str, schema: StructType, *, partition_by: Sequence[str] = ()
) -> None:
    """Creates an empty Delta table of `schema` at `path` unless one exists."""
    if table_exists(spark, path):
        return
    writer = spark.createDataFrame([], schema).write.format("delta")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.mode("ignore").save(path)


@dataclass(frozen=True)
class MergeOutcome:
    """What an insert-only merge did."""

    inserted: int
    version: int | None  # the table's version afterwards (None: nothing was written)


def merge_new_rows(
    spark: SparkSession,
    rows: DataFrame,
    path: str,
    schema: StructType,
    *,
    keys: Sequence[str] = SOURCE_KEY,
) -> MergeOutcome:
    """Inserts the rows whose `keys` the table lacks; rows already there stay as they are.

    The table is created (empty, from `schema`) if it is missing, so it exists after the
    first run even when that run had no rows for it; otherwise an empty `rows` writes nothing.

    Args:
        spark: the session.
        rows: rows with the table's columns.
        path: the Delta table.
        schema: the table's schema (used to create it).
        keys: the columns identifying a row.

    Returns:
        The number of rows inserted and the table's version after the merge.
    """
    from delta.tables import DeltaTable

    ensure_table(spark, path, schema)
    if rows.isEmpty():
        return MergeOutcome(0, table_version(spark, path))
    condition = " AND ".join(f"t.`{key}` = s.`{key}`" for key in keys)
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(rows.select(*schema.fieldNames()).alias("s"), condition)
        .whenNotMatchedInsertAll()
        .execute()
    )
    last = DeltaTable.forPath(spark, path).history(1).collect()[0]
    metrics = last["operationMetrics"] or {}
    return MergeOutcome(int(metrics.get("numTargetRowsInserted", 0)), last["version"])


def last_commit_metadata(spark: SparkSession, path: str) -> dict[str, Any] | None:
    """The JSON `userMetadata` of the table's last commit, or None (no table, or none set)."""
    from delta.tables import DeltaTable

    if not table_exists(spark, path):
        return None
    value = DeltaTable.forPath(spark, path).history(1).collect()[0]["userMetadata"]
    if not value:
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def overwrite_tagged(rows: DataFrame, path: str, metadata: dict[str, Any]) -> None:
    """Replaces the table's content with `rows`, recording `metadata` in the commit."""
    (
        rows.write.format("delta")
        .mode("overwrite")
        .option("overwriteSchema", "true")
        .option("userMetadata", json.dumps(metadata, sort_keys=True))
        .save(path)
    )


def optimize(spark: SparkSession, path: str) -> dict[str, Any]:
    """Compacts the table's small files (Delta OPTIMIZE); returns Delta's metrics."""
    from delta.tables import DeltaTable

    metrics = DeltaTable.forPath(spark, path).optimize().executeCompaction().collect()
    return metrics[0]["metrics"].asDict(recursive=True) if metrics else {}


def vacuum(spark: SparkSession, path: str, *, retention_hours: float) -> int:
    """Deletes files no version within `retention_hours` needs (Delta VACUUM).

    Delta refuses a retention under 7 days (168 hours) unless its safety check is turned off
    in the session; this function never turns it off. Returns the table's version.
    """
    from delta.tables import DeltaTable

    DeltaTable.forPath(spark, path).vacuum(retention_hours)
    version = table_version(spark, path)
    assert version is not None
    return version
