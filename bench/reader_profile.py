"""Where path (c)'s time goes, for `bench/ingest.py --profile`.

- `profile_reader`: one reader in the driver, no Spark: the engine's `read_slice` and the
  prototype below, timed on the same range, and `read_slice` under cProfile (the calling
  thread, and the JetStream client's event loop thread).
- `PipelinedArrowReader`: a prototype reader, NOT the engine's: pull requests pipelined into a
  callback subscription on a loop in the calling thread, bronze columns built straight from
  the raw nats-py messages (sequence and timestamp parsed from the reply subject, dates
  computed by Arrow). It is the reference for what a reader without per-message objects and
  without a thread hand-off can reach.
- `profile_spark_write`: Spark's share alone, with prebuilt bronze batches and no NATS.
- `prototype_end_to_end`: the prototype reader in the same mapInArrow + Delta write as (c).
"""

from __future__ import annotations

import asyncio
import cProfile
import datetime as dt
import io
import json
import pstats
import sys
import threading
import time
from collections.abc import Iterator

import nats
import pyarrow as pa
import pyarrow.compute as pc
from nats.js import api

from pipelines.ingest.bronze import BRONZE_ARROW_SCHEMA, BRONZE_SCHEMA
from pipelines.ingest.reader import RangeRead, read_slice
from pipelines.ingest.spec import IngestSpec

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)
PROFILE_EVENTS = 100_000  # messages the in-process profiles read at most


def _top(profiler: cProfile.Profile, limit: int = 20) -> str:
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(limit)
    return out.getvalue()


def profile_reader(settings, url: str, stream: str, subject: str, count: int) -> dict:
    """One reader in the driver, without Spark: how fast it reads and where its time goes.

    Times the engine's `read_slice` and the prototype reader on the same range, then runs
    `read_slice` under cProfile: one profile for the calling thread, one for the threads it
    starts (the JetStream client's event loop, where nats-py parses each message).
    """
    end = min(count, PROFILE_EVENTS)
    read = RangeRead(
        settings=settings,
        stream=stream,
        filter_subjects=(subject,),
        start=1,
        end=end,
        readers=1,
        pull_batch=IngestSpec.pull_batch,
        rows_per_batch=IngestSpec.rows_per_batch,
        run_id="profile",
        ingested_at=NOW,
    )
    started = time.monotonic()
    rows = sum(b.num_rows for b in read_slice(read, 1, end))
    engine = time.monotonic() - started
    started = time.monotonic()
    prototype = PipelinedArrowReader(url, stream, subject, 1, end, run_id="profile")
    proto_rows = sum(b.num_rows for b in prototype)
    proto = time.monotonic() - started
    if {rows, proto_rows} != {end}:
        raise RuntimeError(f"profile read {rows} / {proto_rows} messages of {end}")

    caller, spawned = cProfile.Profile(), cProfile.Profile()

    def enable_in_new_thread(frame, event, arg) -> None:
        spawned.enable()  # replaces this hook in the new thread with cProfile's

    threading.setprofile(enable_in_new_thread)
    caller.enable()
    try:
        for _ in read_slice(read, 1, end):
            pass
    finally:
        caller.disable()
        threading.setprofile(None)
    return {
        "messages": end,
        "read_slice_msgs_per_s": round(end / engine),
        "prototype_reader_msgs_per_s": round(end / proto),
        "cprofile_caller_thread": _top(caller),
        "cprofile_loop_thread": _top(spawned),
    }


class PipelinedArrowReader:
    """Prototype: reads [start, end] of a dense stream as bronze record batches.

    Pull requests of `batch` messages, `in_flight` of them outstanding, into a callback
    subscription; no JsMessage, no datetime per message. Runs its own event loop in the
    calling thread (a Spark task), so no thread hand-off per pull.
    """

    def __init__(
        self,
        url: str,
        stream: str,
        subject: str,
        start: int,
        end: int,
        *,
        run_id: str,
        batch: int = 10_000,
        in_flight: int = 2,
        rows_per_batch: int = 10_000,
    ) -> None:
        self.url, self.stream, self.subject = url, stream, subject
        self.start, self.total = start, end - start + 1
        self.run_id, self.batch, self.in_flight = run_id, batch, in_flight
        self.rows_per_batch = rows_per_batch
        self._requested = self._received = 0
        self._replies: list[str] = []
        self._subjects: list[str] = []
        self._data: list[bytes] = []
        self._headers: list[dict | None] = []
        self._ready: asyncio.Future | None = None

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._open())
            while self._received < self.total or self._replies:
                loop.run_until_complete(self._fill())
                yield self._to_arrow()
        finally:
            loop.run_until_complete(self._nc.close())
            loop.close()

    async def _open(self) -> None:
        self._nc = await nats.connect(self.url)
        config = api.ConsumerConfig(
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=self.start,
            ack_policy=api.AckPolicy.NONE,
            filter_subject=self.subject,
            mem_storage=True,
            num_replicas=1,
            inactive_threshold=30.0,
        )
        info = await self._nc.jetstream()._jsm.add_consumer(self.stream, config=config)
        self._next = f"$JS.API.CONSUMER.MSG.NEXT.{self.stream}.{info.name}"
        self._inbox = self._nc.new_inbox()
        await self._nc.subscribe(
            self._inbox, cb=self._on_message, pending_msgs_limit=0, pending_bytes_limit=0
        )
        for _ in range(self.in_flight):
            await self._request()

    async def _request(self) -> None:
        size = min(self.batch, self.total - self._requested)
        if size > 0:
            self._requested += size
            body = json.dumps({"batch": size, "expires": 60_000_000_000}).encode()
            await self._nc.publish(self._next, body, reply=self._inbox)

    async def _on_message(self, msg) -> None:
        if not msg.reply:  # a status (408 when a request expires): nothing to store
            return
        self._replies.append(msg.reply)
        self._subjects.append(msg.subject)
        self._data.append(msg.data)
        self._headers.append(msg.headers)
        self._received += 1
        if self._received % self.batch == 0:
            await self._request()
        full = len(self._replies) >= self.rows_per_batch or self._received >= self.total
        if full and self._ready is not None and not self._ready.done():
            self._ready.set_result(None)

    async def _fill(self) -> None:
        if len(self._replies) >= self.rows_per_batch or self._received >= self.total:
            return
        self._ready = asyncio.get_running_loop().create_future()
        await asyncio.wait_for(self._ready, timeout=60)

    def _to_arrow(self) -> pa.RecordBatch:
        replies, self._replies = self._replies, []
        subjects, self._subjects = self._subjects, []
        data, self._data = self._data, []
        headers, self._headers = self._headers, []
        n = len(replies)
        # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending> (v1 reply)
        tokens = [r.split(".") for r in replies]
        shift = 0 if len(tokens[0]) == 9 else 2  # v2 adds <domain>.<account hash>
        seq = pa.array([int(t[5 + shift]) for t in tokens], pa.int64())
        nanos = pa.array([int(t[7 + shift]) for t in tokens], pa.int64())
        published = pc.cast(
            nanos.cast(pa.timestamp("ns", tz="UTC")), pa.timestamp("us", tz="UTC"), safe=False
        )
        now = dt.datetime.now(dt.timezone.utc)
        columns = [
            pa.repeat(pa.scalar(self.stream), n),
            seq,
            pa.array(subjects, pa.string()),
            published,
            pc.cast(published, pa.date32()),
            pa.array([list(h.items()) if h else None for h in headers], BRONZE_MAP),
            pa.array(data, pa.binary()),
            pa.array([h.get("Nats-Msg-Id") if h else None for h in headers], pa.string()),
            pa.repeat(pa.scalar(self.run_id), n),
            pa.repeat(pa.scalar(now, pa.timestamp("us", tz="UTC")), n),
        ]
        return pa.RecordBatch.from_arrays(columns, schema=BRONZE_ARROW_SCHEMA)


BRONZE_MAP = BRONZE_ARROW_SCHEMA.field("headers").type


def _register_for_workers() -> None:
    """Ships this module by value to Spark's Python workers (bench/ is not importable there)."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])


def prototype_end_to_end(
    spark, url: str, stream: str, subject: str, path: str, count: int, readers: int
) -> dict:
    """The prototype reader in (c)'s Spark shape: `readers` mapInArrow tasks, one Delta append."""
    _register_for_workers()
    slices = [(1 + count * i // readers, count * (i + 1) // readers) for i in range(readers)]

    def read_partition(batches):
        for batch in batches:
            for index in batch.column("id").to_pylist():
                lo, hi = slices[index]
                yield from PipelinedArrowReader(url, stream, subject, lo, hi, run_id="proto")

    frame = spark.range(0, readers, 1, numPartitions=readers).mapInArrow(
        read_partition, BRONZE_SCHEMA
    )
    started = time.monotonic()
    frame.write.format("delta").mode("append").partitionBy("published_date").save(path)
    wall = time.monotonic() - started
    return {"messages": count, "write_wall_s": round(wall, 3), "msgs_per_s": round(count / wall)}


def profile_spark_write(spark, path: str, count: int, readers: int) -> dict:
    """Spark's share alone: mapInArrow tasks yielding one prebuilt bronze batch, no NATS."""
    _register_for_workers()
    rows = 10_000

    def batches(ids):
        template = {
            "stream": pa.repeat(pa.scalar("S"), rows),
            "subject": pa.repeat(pa.scalar("S.files.deleted"), rows),
            "published": pa.repeat(pa.scalar(NOW, pa.timestamp("us", tz="UTC")), rows),
            "published_date": pa.repeat(pa.scalar(NOW.date(), pa.date32()), rows),
            "headers": pa.array([[("Nats-Msg-Id", "x" * 36)]] * rows, BRONZE_MAP),
            "payload": pa.repeat(pa.scalar(b"x" * 300, pa.binary()), rows),
            "msg_id": pa.repeat(pa.scalar("x" * 36), rows),
            "ingest_run_id": pa.repeat(pa.scalar("profile"), rows),
            "ingested_at": pa.repeat(pa.scalar(NOW, pa.timestamp("us", tz="UTC")), rows),
        }
        for batch in ids:
            for index in batch.column("id").to_pylist():
                lo, hi = count * index // readers, count * (index + 1) // readers
                for first in range(lo, hi, rows):
                    n = min(rows, hi - first)
                    columns = {k: v.slice(0, n) for k, v in template.items()}
                    columns["seq"] = pa.array(range(first + 1, first + n + 1), pa.int64())
                    yield pa.RecordBatch.from_pydict(columns, schema=BRONZE_ARROW_SCHEMA)

    frame = spark.range(0, readers, 1, numPartitions=readers).mapInArrow(batches, BRONZE_SCHEMA)
    started = time.monotonic()
    frame.write.format("delta").mode("append").partitionBy("published_date").save(path)
    wall = time.monotonic() - started
    return {"messages": count, "write_wall_s": round(wall, 3), "msgs_per_s": round(count / wall)}
