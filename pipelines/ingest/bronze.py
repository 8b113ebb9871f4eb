"""The bronze table: every message exactly as JetStream stored it, never parsed.

| column          | type                | what                                          |
|-----------------|---------------------|-----------------------------------------------|
| stream          | string              | the JetStream stream                          |
| seq             | long                | the stream sequence: (stream, seq) is the key |
| subject         | string              | the subject it was published on               |
| published       | timestamp (UTC)     | when the server stored it                     |
| published_date  | date                | partition column, the UTC date of `published` |
| headers         | map<string,string>  | NATS headers                                  |
| payload         | binary              | the bytes exactly as published                |
| msg_id          | string (nullable)   | the `Nats-Msg-Id` header, if any              |
| ingest_run_id   | string              | the Dagster run (or caller) that landed it    |
| ingested_at     | timestamp (UTC)     | when it was landed                            |
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    BinaryType,
    DateType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from resources.jetstream import JsMessage

PARTITION_COLUMNS = ("published_date",)

BRONZE_SCHEMA = StructType(
    [
        StructField("stream", StringType(), nullable=False),
        StructField("seq", LongType(), nullable=False),
        StructField("subject", StringType(), nullable=False),
        StructField("published", TimestampType(), nullable=False),
        StructField("published_date", DateType(), nullable=False),
        StructField("headers", MapType(StringType(), StringType()), nullable=True),
        StructField("payload", BinaryType(), nullable=False),
        StructField("msg_id", StringType(), nullable=True),
        StructField("ingest_run_id", StringType(), nullable=False),
        StructField("ingested_at", TimestampType(), nullable=False),
    ]
)

BRONZE_ARROW_SCHEMA = pa.schema(
    [
        pa.field("stream", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("subject", pa.string(), nullable=False),
        pa.field("published", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("published_date", pa.date32(), nullable=False),
        pa.field("headers", pa.map_(pa.string(), pa.string()), nullable=True),
        pa.field("payload", pa.binary(), nullable=False),
        pa.field("msg_id", pa.string(), nullable=True),
        pa.field("ingest_run_id", pa.string(), nullable=False),
        pa.field("ingested_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)


def messages_to_arrow(
    messages: Sequence[JsMessage], *, run_id: str, ingested_at: dt.datetime
) -> pa.Table:
    """Builds bronze rows, column by column, from delivered messages."""
    published = [m.timestamp.astimezone(dt.UTC) for m in messages]
    columns = {
        "stream": [m.stream for m in messages],
        "seq": [m.stream_seq for m in messages],
        "subject": [m.subject for m in messages],
        "published": published,
        "published_date": [p.date() for p in published],
        "headers": [list(m.headers.items()) or None for m in messages],
        "payload": [m.data for m in messages],
        "msg_id": [m.msg_id for m in messages],
        "ingest_run_id": [run_id] * len(messages),
        "ingested_at": [ingested_at] * len(messages),
    }
    return pa.table(columns, schema=BRONZE_ARROW_SCHEMA)


def table_version(spark: SparkSession, table_path: str) -> int | None:
    """The Delta table's current version, or None if there is no table yet."""
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, table_path):
        return None
    return DeltaTable.forPath(spark, table_path).history(1).collect()[0]["version"]


def max_landed_seq(spark: SparkSession, table_path: str, stream: str) -> int:
    """The highest sequence of `stream` in the bronze table (0 if none, or no table)."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    if not DeltaTable.isDeltaTable(spark, table_path):
        return 0
    frame = spark.read.format("delta").load(table_path).where(F.col("stream") == stream)
    return frame.agg(F.max("seq")).first()[0] or 0


@dataclass(frozen=True)
class CommitOutcome:
    """What an idempotent commit did: `written` is False when Delta skipped it as a repeat."""

    version: int | None
    written: bool


def commit_idempotently(
    frame: DataFrame, table_path: str, *, app_id: str, txn_version: int
) -> CommitOutcome:
    """Appends `frame` in one Delta commit tagged (app_id, txn_version).

    Delta records the pair in the table's log and skips any later write whose txn_version is
    not above the recorded one for that app_id, so committing the same planned range twice
    (after a crash, say) lands its rows once.
    """
    spark = frame.sparkSession
    before = table_version(spark, table_path)
    (
        frame.write.format("delta")
        .mode("append")
        .option("txnAppId", app_id)
        .option("txnVersion", txn_version)
        .partitionBy(*PARTITION_COLUMNS)
        .save(table_path)
    )
    after = table_version(spark, table_path)
    return CommitOutcome(version=after, written=after != before)


def replace_range(frame: DataFrame, table_path: str, *, stream: str, start: int, end: int) -> int:
    """Replaces the bronze rows of `stream` with seq in [start, end] by `frame` (a replay).

    Returns the new table version. Rows outside the range are untouched, so replaying a
    range twice gives the same table.
    """
    predicate = f"stream = '{stream}' AND seq BETWEEN {int(start)} AND {int(end)}"
    (
        frame.write.format("delta")
        .mode("overwrite")
        .option("replaceWhere", predicate)
        .partitionBy(*PARTITION_COLUMNS)
        .save(table_path)
    )
    version = table_version(frame.sparkSession, table_path)
    assert version is not None
    return version
