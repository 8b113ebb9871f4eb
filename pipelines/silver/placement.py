"""The silver stage's guarantee, measured: each bronze row in exactly one silver table or the
quarantine.

`placement` counts, over a range of a stream's bronze sequences, the bronze rows that no
table holds (`missing`), the ones two or more tables hold (`doubled`) and the table rows that
come from no bronze row (`orphans`), in one Spark job. A retry or a rebuild reports it for
the range it judged (`pipelines.wiring.rejudge_job`); the tests check it after every step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.lakehouse.delta_tables import table_exists


@dataclass(frozen=True)
class Placement:
    """Where a range of bronze rows is."""

    bronze_rows: int
    missing: int  # bronze rows in no table
    doubled: int  # bronze rows in two tables or more
    orphans: int  # table rows of the range from no bronze row

    @property
    def exact(self) -> bool:
        return self.missing == self.doubled == self.orphans == 0


def _seqs(frame: DataFrame, stream: str, first: int, last: int) -> DataFrame:
    return frame.where(
        (F.col("stream") == stream) & F.col("seq").between(int(first), int(last))
    ).select("seq")


def placement(
    spark: SparkSession,
    *,
    stream: str,
    bronze_path: str,
    table_paths: Mapping[str, str],
    first: int,
    last: int,
) -> Placement:
    """Counts how the bronze rows of `stream` with `first` <= seq <= `last` are placed.

    Args:
        spark: the session.
        stream: the stream.
        bronze_path: its bronze table.
        table_paths: every silver table and the quarantine (a missing table holds nothing).
        first: the range's first seq.
        last: its last seq (silver's watermark, for everything processed).
    """
    held = None
    for path in table_paths.values():
        if not table_exists(spark, path):
            continue
        seqs = _seqs(spark.read.format("delta").load(path), stream, first, last)
        held = seqs if held is None else held.unionAll(seqs)
    bronze = _seqs(spark.read.format("delta").load(bronze_path), stream, first, last)
    bronze = bronze.distinct().withColumn("_bronze", F.lit(1))
    if held is None:
        held = spark.createDataFrame([], "seq bigint")
    counts = held.groupBy("seq").agg(F.count(F.lit(1)).alias("_held"))
    joined = bronze.join(counts, "seq", "full_outer")
    row = joined.agg(
        F.count(F.col("_bronze")).alias("bronze"),
        F.count_if(F.col("_bronze").isNotNull() & F.col("_held").isNull()).alias("missing"),
        F.count_if(F.col("_held") > 1).alias("doubled"),
        F.count_if(F.col("_bronze").isNull()).alias("orphans"),
    ).first()
    return Placement(int(row.bronze), int(row.missing), int(row.doubled), int(row.orphans))
