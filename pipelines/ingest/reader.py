"""Reading a range of a stream in parallel Spark tasks, as Arrow record batches.

The driver never touches the messages: it builds a DataFrame of slice numbers, and each Spark
task (`mapInArrow`) opens its own NATS connection, reads its slice of `[start, end]` in order
with an ephemeral pull consumer, and yields bronze rows as Arrow record batches. On a cluster,
reading scales with the executors.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute
from pyspark.accumulators import Accumulator
from pyspark.sql import DataFrame, SparkSession

from pipelines.ingest.bronze import BRONZE_SCHEMA, messages_to_arrow
from resources.jetstream import ConnectionSettings, JetStreamClient


@dataclass(frozen=True)
class RangeRead:
    """What to read: a stream's range, split among `readers` tasks."""

    settings: ConnectionSettings
    stream: str
    filter_subjects: tuple[str, ...]
    start: int
    end: int
    readers: int
    pull_batch: int  # messages per pull request
    rows_per_batch: int  # rows per Arrow record batch handed to Spark
    run_id: str
    ingested_at: dt.datetime

    def slices(self) -> list[tuple[int, int]]:
        """`readers` contiguous, near-equal slices covering [start, end]."""
        total = self.end - self.start + 1
        count = max(1, min(self.readers, total))
        bounds = [self.start + total * i // count for i in range(count + 1)]
        return [(bounds[i], bounds[i + 1] - 1) for i in range(count)]


def read_slice(read: RangeRead, start: int, end: int) -> Iterator[pa.RecordBatch]:
    """Reads [start, end] of the stream (in a Spark task) as bronze record batches."""
    with JetStreamClient(read.settings) as js:
        messages = js.read_ordered(
            read.stream, start, end, filter_subjects=read.filter_subjects, batch=read.pull_batch
        )
        chunk = []
        for message in messages:
            chunk.append(message)
            if len(chunk) >= read.rows_per_batch:
                yield from _batches(chunk, read)
                chunk = []
        if chunk:
            yield from _batches(chunk, read)


def _batches(chunk: Sequence, read: RangeRead) -> Iterator[pa.RecordBatch]:
    table = messages_to_arrow(chunk, run_id=read.run_id, ingested_at=read.ingested_at)
    yield from table.to_batches()


@dataclass
class ReadCounters:
    """Messages and payload bytes the tasks read, valid once the DataFrame was written."""

    _messages: Accumulator
    _bytes: Accumulator

    @property
    def messages(self) -> int:
        return self._messages.value

    @property
    def bytes(self) -> int:
        return self._bytes.value


def read_range(spark: SparkSession, read: RangeRead) -> tuple[DataFrame, ReadCounters]:
    """A DataFrame of the range's bronze rows, read lazily by `len(read.slices())` tasks.

    The counters fill in as the tasks run (Spark accumulators), so read them after the
    DataFrame has been written.
    """
    slices = read.slices()
    counters = ReadCounters(spark.sparkContext.accumulator(0), spark.sparkContext.accumulator(0))

    def read_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column("id").to_pylist():
                start, end = slices[index]
                for rows in read_slice(read, start, end):
                    counters._messages.add(rows.num_rows)
                    counters._bytes.add(
                        pa.compute.sum(pa.compute.binary_length(rows.column("payload"))).as_py()
                        or 0
                    )
                    yield rows

    ids = spark.range(0, len(slices), 1, numPartitions=len(slices))
    return ids.mapInArrow(read_partition, BRONZE_SCHEMA), counters
