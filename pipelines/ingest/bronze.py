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

import pyarrow as pa
from pyspark.sql import SparkSession
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


def append_to_bronze(spark: SparkSession, table_path: str, rows: pa.Table) -> int:
    """Appends Arrow rows to the bronze Delta table (creating it) and returns its new version."""
    from delta.tables import DeltaTable

    frame = spark.createDataFrame(rows, schema=BRONZE_SCHEMA)
    frame.write.format("delta").mode("append").partitionBy(*PARTITION_COLUMNS).save(table_path)
    return DeltaTable.forPath(spark, table_path).history(1).collect()[0]["version"]
