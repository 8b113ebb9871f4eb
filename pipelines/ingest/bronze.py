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
from dataclasses import dataclass, field, fields

import pyarrow as pa
import pyarrow.compute as pc
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

from pipelines.lakehouse.delta_tables import table_exists, table_version
from resources.jetstream import JsMessage

PARTITION_COLUMNS = ("published_date",)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)

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


@dataclass
class BronzeColumns:
    """Bronze columns of messages of one stream, appended to message by message.

    The one place bronze record batches are built: the parallel readers fill it straight
    from delivery metadata, `from_messages` from delivered `JsMessage`s.
    """

    seq: list[int] = field(default_factory=list)
    subject: list[str | bytes] = field(default_factory=list)  # bytes are UTF-8
    published_ns: list[int] = field(default_factory=list)  # nanoseconds since the epoch, UTC
    headers: list[dict[str, str] | None] = field(default_factory=list)
    payload: list[bytes] = field(default_factory=list)
    msg_id: list[str | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.seq)

    @classmethod
    def from_messages(cls, messages: Sequence[JsMessage]) -> BronzeColumns:
        """The columns of delivered messages (all of one stream)."""
        columns = cls()
        for m in messages:
            columns.seq.append(m.stream_seq)
            columns.subject.append(m.subject)
            columns.published_ns.append(
                (m.timestamp - EPOCH) // dt.timedelta(microseconds=1) * 1000
            )
            columns.headers.append(dict(m.headers) or None)
            columns.payload.append(m.data)
            columns.msg_id.append(m.msg_id)
        return columns

    def split(self, rows: int) -> tuple[BronzeColumns, BronzeColumns]:
        """The first `rows` messages, and the rest."""
        if len(self.seq) <= rows:
            return self, BronzeColumns()
        columns = {f.name: getattr(self, f.name) for f in fields(self)}
        head = BronzeColumns(**{name: values[:rows] for name, values in columns.items()})
        return head, BronzeColumns(**{name: values[rows:] for name, values in columns.items()})

    def to_arrow(self, stream: str, run_id: str, ingested_at: dt.datetime) -> pa.RecordBatch:
        """The columns as one bronze record batch, stamped with the run and landing time."""
        count = len(self.seq)
        published = pa.array(self.published_ns, pa.int64()).cast(pa.timestamp("ns", tz="UTC"))
        published = pc.cast(published, pa.timestamp("us", tz="UTC"), safe=False)
        columns = {
            "stream": pa.array([stream] * count, pa.string()),
            "seq": pa.array(self.seq, pa.int64()),
            "subject": pa.array(self.subject, pa.string()),
            "published": published,
            "published_date": pc.cast(published, pa.date32()),
            "headers": pa.array(self.headers, BRONZE_ARROW_SCHEMA.field("headers").type),
            "payload": pa.array(self.payload, pa.binary()),
            "msg_id": pa.array(self.msg_id, pa.string()),
            "ingest_run_id": pa.array([run_id] * count, pa.string()),
            "ingested_at": pa.array([ingested_at] * count, pa.timestamp("us", tz="UTC")),
        }
        return pa.RecordBatch.from_arrays(
            [columns[f.name] for f in BRONZE_ARROW_SCHEMA], schema=BRONZE_ARROW_SCHEMA
        )


def max_landed_seq(spark: SparkSession, table_path: str, stream: str) -> int:
    """The highest sequence of `stream` in the bronze table (0 if none, or no table)."""
    from pyspark.sql import functions as F

    if not table_exists(spark, table_path):
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
