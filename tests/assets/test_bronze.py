"""The bronze asset, end to end: real nats-server, real Spark + Delta, a real Dagster instance."""

import datetime as dt
import logging

import pytest
from dagster import materialize
from dagster._core.storage.dagster_run import DagsterRun, DagsterRunStatus
from delta.tables import DeltaTable

from assets.bronze import build_bronze_asset, build_stream_asset_spec, dagster_run_state, land
from pipelines.file_trash.events import FILE_DELETED_SUBJECT, generate_file_deleted_events
from pipelines.ingest.errors import LeaseHeldError
from pipelines.ingest.lease import acquire_lease
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import StreamSpec, Topology, reconcile
from resources.lakehouse import LakehouseResource
from resources.spark import SparkResource

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)


@pytest.fixture
def ingest(js, unique_name) -> IngestSpec:
    """A fresh stream (capturing `<name>.files.>`) and its bronze ingest."""
    stream = StreamSpec(unique_name, (f"{unique_name}.files.>",))
    spec = IngestSpec(
        name=unique_name.lower(),
        stream=stream.name,
        durable="bronze",
        filter_subjects=(f"{unique_name}.files.>",),
        table=f"bronze/{unique_name.lower()}",
        readers=2,
        pull_batch=40,
    )
    reconcile(js, Topology(streams=(stream,), consumers=(spec.consumer_spec(),)))
    return spec


def publish_events(js, spec: IngestSpec, count: int, seed: int) -> list[bytes]:
    events = list(generate_file_deleted_events(count, now=NOW, seed=seed))
    subject = f"{spec.stream}.{FILE_DELETED_SUBJECT}"
    js.publish_batch([(subject, e.to_json(), {"Nats-Msg-Id": e.eventId}) for e in events])
    return [e.to_json() for e in events]


def materialize_bronze(spec, jetstream_resource, table_root, instance):
    stream = StreamSpec(spec.stream, spec.filter_subjects)
    return materialize(
        [build_stream_asset_spec(stream), build_bronze_asset(spec)],
        resources={
            "jetstream": jetstream_resource,
            "spark": SparkResource(),
            "lakehouse": LakehouseResource(root=str(table_root)),
        },
        instance=instance,
    )


def test_bronze_lands_every_published_message_once_and_moves_the_ack_floor(
    js, spark, ingest, jetstream_resource, table_root, dagster_instance
):
    payloads = publish_events(js, ingest, 500, seed=1)

    result = materialize_bronze(ingest, jetstream_resource, table_root, dagster_instance)

    assert result.success
    table = DeltaTable.forPath(spark, f"{table_root}/{ingest.table}").toDF()
    rows = table.select("stream", "seq", "subject", "payload", "msg_id").collect()
    assert sorted(r.seq for r in rows) == list(range(1, 501))
    assert {r.stream for r in rows} == {ingest.stream}
    assert sorted(bytes(r.payload) for r in rows) == sorted(payloads)
    assert all(r.msg_id for r in rows)
    consumer = js.consumers.info(ingest.stream, ingest.durable)
    assert consumer.ack_floor_stream_seq == js.streams.info(ingest.stream).last_seq == 500
    assert consumer.num_pending == 0


def test_bronze_reports_range_rows_and_lag_as_metadata(
    js, ingest, jetstream_resource, table_root, dagster_instance
):
    publish_events(js, ingest, 200, seed=2)

    result = materialize_bronze(ingest, jetstream_resource, table_root, dagster_instance)

    [event] = result.get_asset_materialization_events()
    metadata = {k: v.value for k, v in event.materialization.metadata.items()}
    assert metadata["messages"] == 200
    assert metadata["bytes"] > 200 * 250  # ~300-byte events
    assert (metadata["range_start"], metadata["range_end"]) == (1, 200)
    assert metadata["dagster/row_count"] == 200
    assert metadata["lag"] == 0
    assert metadata["readers"] == 2
    assert metadata["committed"] is True


def test_bronze_run_with_nothing_new_appends_nothing(
    js, spark, ingest, jetstream_resource, table_root, dagster_instance
):
    publish_events(js, ingest, 30, seed=3)
    materialize_bronze(ingest, jetstream_resource, table_root, dagster_instance)
    path = f"{table_root}/{ingest.table}"
    version_before = DeltaTable.forPath(spark, path).history(1).collect()[0]["version"]

    result = materialize_bronze(ingest, jetstream_resource, table_root, dagster_instance)

    assert result.success
    assert DeltaTable.forPath(spark, path).history(1).collect()[0]["version"] == version_before
    assert DeltaTable.forPath(spark, path).toDF().count() == 30


def test_bronze_stores_payloads_exactly_as_published_even_when_malformed(
    js, spark, ingest, jetstream_resource, table_root, dagster_instance
):
    subject = f"{ingest.stream}.files.deleted"
    raw = [b"{not json", b"", b"\xff\xfe binary", b'{"eventId": 1}']
    for payload in raw:
        js.publish(subject, payload, headers={"X-Test": "yes"})

    materialize_bronze(ingest, jetstream_resource, table_root, dagster_instance)

    rows = DeltaTable.forPath(spark, f"{table_root}/{ingest.table}").toDF().orderBy("seq").collect()
    assert [bytes(r.payload) for r in rows] == raw
    assert all(r.headers == {"X-Test": "yes"} for r in rows)


def test_a_run_behind_a_held_lease_stops_before_spark_saying_what_dagster_knows_of_the_holder(
    js, ingest, table_root, dagster_instance
):
    """A holder Dagster has as working: the run fails at once (a holder it has as over is
    waited out instead, at most the TTL: tests/pipelines/ingest/test_checkpoint_and_lease.py
    and tests/sensors/test_daemon_recovery.py)."""
    publish_events(js, ingest, 10, seed=3)
    working = DagsterRun(job_name="ingest", run_id="busy-run", status=DagsterRunStatus.STARTED)
    dagster_instance.add_run(working)
    bucket = js.create_key_value(ingest.checkpoint_bucket_spec())
    acquire_lease(bucket, stream=ingest.stream, consumer=ingest.durable, holder="busy-run", ttl=60)

    def no_spark():
        raise AssertionError("Spark was started behind a held lease")

    with pytest.raises(LeaseHeldError, match="Dagster has that run as STARTED: it is working"):
        land(
            client=js, session=no_spark, spec=ingest, path=f"{table_root}/{ingest.table}",
            run_id="next-run", until=None, log=logging.getLogger(__name__),
            run_state=dagster_run_state(dagster_instance),
        )  # fmt: skip
