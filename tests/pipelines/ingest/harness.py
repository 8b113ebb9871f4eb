"""What the exactly-once tests share: a fresh stream and its ingest, crash hooks, the verdict.

`assert_landed_exactly_once` is the one definition of "exactly once" these tests hold the
engine to: the bronze table holds each published (stream, seq) once and nothing else, the
durable consumer's ack floor is the stream's last sequence with nothing pending, and the
checkpoint is committed there with no range left planned.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from pipelines.file_trash.events import FILE_DELETED_SUBJECT, generate_file_deleted_events
from pipelines.ingest.checkpoint import Checkpoint, CheckpointStore
from pipelines.ingest.engine import IngestResult, run_ingest
from pipelines.ingest.options import Hook, IngestRunOptions
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import JetStreamClient, KeyValueBucket, StreamSpec

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)


class InjectedCrash(RuntimeError):
    """Raised by a test's hook to stop a run between two of its steps."""


def crash_at(step: str) -> Hook:
    """A hook that raises `InjectedCrash` when the run reaches `step`."""

    def hook(reached: str) -> None:
        if reached == step:
            raise InjectedCrash(f"injected crash at {step!r}")

    return hook


@dataclass(frozen=True)
class Ingest:
    """A test's ingest: its spec, bronze table and checkpoint bucket."""

    spec: IngestSpec
    path: str
    checkpoints: KeyValueBucket

    def run(
        self,
        js: JetStreamClient,
        spark: SparkSession,
        run_id: str,
        *,
        hook: Hook | None = None,
        **spec_changes: Any,
    ) -> IngestResult:
        """One `run_ingest` of this ingest, with `spec_changes` applied to its spec."""
        spec = replace(self.spec, **spec_changes) if spec_changes else self.spec
        return run_ingest(
            js,
            spark,
            spec,
            self.path,
            checkpoints=self.checkpoints,
            run_id=run_id,
            options=IngestRunOptions(hook=hook),
        )

    def checkpoint(self) -> Checkpoint | None:
        return CheckpointStore(self.checkpoints).load(self.spec.stream, self.spec.durable)


def make_ingest(
    js: JetStreamClient,
    name: str,
    table_root: Path | str,
    *,
    stream: dict[str, Any] | None = None,
    **spec: Any,
) -> Ingest:
    """Creates stream `name` (capturing `<name>.files.>`) and returns an ingest of it.

    Args:
        js: the client.
        name: the stream's name (unique per test).
        table_root: where the bronze table goes (a folder, or an `s3a://` URI).
        stream: extra `StreamSpec` fields (limits, duplicate window).
        **spec: `IngestSpec` fields over the small test defaults.
    """
    js.streams.add(StreamSpec(name, (f"{name}.files.>",), **(stream or {})))
    fields = {
        "name": name.lower(),
        "stream": name,
        "durable": "bronze",
        "table": "bronze/events",
        "readers": 2,
        "pull_batch": 25,
        **spec,
    }
    ingest_spec = IngestSpec(**fields)
    return Ingest(
        spec=ingest_spec,
        path=f"{str(table_root).rstrip('/')}/{ingest_spec.table}",
        checkpoints=js.create_key_value(ingest_spec.checkpoint_bucket_spec()),
    )


def publish_events(
    js: JetStreamClient,
    stream: str,
    count: int,
    *,
    seed: int,
    subject: str = FILE_DELETED_SUBJECT,
) -> list[int]:
    """Publishes `count` FileDeletedEvents on `<stream>.<subject>`; returns their sequences."""
    events = generate_file_deleted_events(count, now=NOW, seed=seed)
    acks = js.publish_batch(
        [(f"{stream}.{subject}", e.to_json(), {"Nats-Msg-Id": e.eventId}) for e in events]
    )
    return [ack.seq for ack in acks]


def bronze_keys(spark: SparkSession, path: str) -> list[tuple[str, int]]:
    """Every (stream, seq) row of the bronze table, duplicates kept."""
    rows = spark.read.format("delta").load(path).select("stream", "seq").collect()
    return [(row.stream, row.seq) for row in rows]


def assert_landed_exactly_once(
    js: JetStreamClient, spark: SparkSession, ingest: Ingest, published: Sequence[int]
) -> None:
    """Asserts that `published` landed once each, and the consumer and checkpoint are at the end."""
    spec = ingest.spec
    keys = bronze_keys(spark, ingest.path)
    assert len(keys) == len(set(keys)), "a (stream, seq) landed twice"
    assert {stream for stream, _ in keys} <= {spec.stream}
    assert sorted(seq for _, seq in keys) == sorted(published)

    last_seq = js.streams.info(spec.stream).last_seq
    consumer = js.consumers.info(spec.stream, spec.durable)
    assert consumer.ack_floor_stream_seq == last_seq
    assert consumer.num_pending == 0

    checkpoint = ingest.checkpoint()
    assert checkpoint is not None
    assert checkpoint.committed_end == last_seq
    assert checkpoint.planned is None
