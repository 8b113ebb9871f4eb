"""What the sensor tests share: a fresh stream with its ingest, publishing, a sensor context."""

from __future__ import annotations

import datetime as dt

import pytest
from dagster import DagsterRunStatus, build_sensor_context, job, op
from dagster._core.remote_origin import (
    RegisteredCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)

from pipelines.ingest.spec import IngestSpec
from resources.jetstream import JetStreamClient, StreamSpec, Topology, reconcile

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)


@pytest.fixture
def ingest(js: JetStreamClient, unique_name: str) -> IngestSpec:
    """A fresh stream (capturing `<name>.files.>`), its durable consumer and its own buckets."""
    stream = StreamSpec(unique_name, (f"{unique_name}.files.>",))
    spec = IngestSpec(
        name=unique_name.lower(),
        stream=unique_name,
        durable="bronze",
        table=f"bronze/{unique_name.lower()}",
        readers=2,
        pull_batch=25,
        checkpoint_bucket=f"ckpt_{unique_name}",
    )
    reconcile(js, Topology(streams=(stream,), consumers=(spec.consumer_spec(),)))
    return spec


def publish(js: JetStreamClient, spec: IngestSpec, count: int) -> list[int]:
    """Publishes `count` small messages on the ingest's stream; returns their sequences."""
    subject = f"{spec.stream}.files.deleted"
    acks = js.publish_batch([(subject, f'{{"n": {i}}}'.encode()) for i in range(count)])
    return [ack.seq for ack in acks]


def context_for(instance, jetstream_resource, cursor: str | None = None):
    """A sensor context on `instance` with the `jetstream` resource."""
    return build_sensor_context(
        cursor=cursor, instance=instance, resources={"jetstream": jetstream_resource}
    )


@op
def noop() -> None:
    """Does nothing: runs of it only stand for runs with the tags they carry."""


@job
def placeholder():
    noop()


def record_run(instance, tags: dict[str, str], status: DagsterRunStatus):
    """A run on `instance` with `tags` in `status` (a queued, running or failed ingest run)."""
    # Queued runs must say where their job lives (the daemon would load it from there).
    origin = RemoteJobOrigin(
        RemoteRepositoryOrigin(RegisteredCodeLocationOrigin("tests"), "__repository__"),
        "placeholder",
    )
    return instance.create_run_for_job(
        placeholder, status=status, tags=tags, remote_job_origin=origin
    )
