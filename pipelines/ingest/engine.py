"""The ingest run: pull pending messages, commit them to bronze, then acknowledge them.

This is the first, at-least-once slice: every message is acknowledged only after the Delta
commit that holds it, so a crash loses nothing; a crash between the commit and the acks can
land a message twice (it is redelivered). The exactly-once engine (planned ranges, KV
checkpoints, idempotent commits) replaces this loop.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import SparkSession

from pipelines.ingest.bronze import append_to_bronze, messages_to_arrow
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import JetStreamClient, JsMessage
from resources.jetstream.errors import ConsumerNotFoundError

FETCH_EXPIRES = 0.5  # seconds a pull waits for messages before the run ends


@dataclass(frozen=True)
class IngestResult:
    """What one ingest run did, and where the consumer stands afterwards."""

    messages: int
    bytes: int
    first_seq: int | None
    last_seq: int | None
    delta_version: int | None
    commits: int
    ack_floor: int
    lag: int
    stream_last_seq: int
    duration: float  # seconds


def ensure_consumer(client: JetStreamClient, spec: IngestSpec) -> None:
    """Creates the ingest's durable consumer if it is missing (the stream must exist)."""
    try:
        client.consumers.info(spec.stream, spec.durable)
    except ConsumerNotFoundError:
        client.consumers.add(spec.consumer_spec())


def ingest_pending(
    client: JetStreamClient,
    spark: SparkSession,
    spec: IngestSpec,
    table_path: str,
    *,
    run_id: str,
    clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    on_commit: Callable[[int, int], None] | None = None,
) -> IngestResult:
    """Lands up to `spec.max_messages` pending messages in the bronze table.

    Args:
        client: a connected JetStream client.
        spark: the SparkSession with Delta.
        spec: the ingest.
        table_path: where the bronze Delta table lives.
        run_id: recorded on every row as `ingest_run_id`.
        clock: the source of `ingested_at`.
        on_commit: called as `on_commit(messages_so_far, delta_version)` after each commit,
            for progress reporting.
    """
    started = time.monotonic()
    ensure_consumer(client, spec)
    taken = size = commits = 0
    first_seq = last_seq = version = None
    drained = False
    while not drained and taken < spec.max_messages:
        chunk = _pull_chunk(client, spec, limit=min(spec.commit_every, spec.max_messages - taken))
        drained = not chunk or chunk[-1].num_pending == 0
        if not chunk:
            break
        version = append_to_bronze(
            spark, table_path, messages_to_arrow(chunk, run_id=run_id, ingested_at=clock())
        )
        _acknowledge(chunk)
        commits += 1
        taken += len(chunk)
        size += sum(len(m.data) for m in chunk)
        first_seq = chunk[0].stream_seq if first_seq is None else first_seq
        last_seq = chunk[-1].stream_seq
        if on_commit is not None:
            on_commit(taken, version)
    consumer = client.consumers.info(spec.stream, spec.durable)
    return IngestResult(
        messages=taken,
        bytes=size,
        first_seq=first_seq,
        last_seq=last_seq,
        delta_version=version,
        commits=commits,
        ack_floor=consumer.ack_floor_stream_seq,
        lag=consumer.num_pending + consumer.num_ack_pending,
        stream_last_seq=client.streams.info(spec.stream).last_seq,
        duration=time.monotonic() - started,
    )


def _pull_chunk(client: JetStreamClient, spec: IngestSpec, *, limit: int) -> list[JsMessage]:
    chunk: list[JsMessage] = []
    while len(chunk) < limit:
        batch = client.fetch(
            spec.stream,
            spec.durable,
            batch=min(spec.fetch_batch, limit - len(chunk)),
            expires=FETCH_EXPIRES,
        )
        chunk.extend(batch)
        if not batch or batch[-1].num_pending == 0:
            break
    return chunk


def _acknowledge(messages: list[JsMessage]) -> None:
    """Acks every message; the last one synchronously, so the ack floor has moved on return."""
    for message in messages[:-1]:
        message.ack()
    messages[-1].ack_sync()
