"""The replay job, run through Dagster with a real server, Spark and Delta."""

import pytest
from dagster import DagsterRun, DagsterRunStatus
from delta.tables import DeltaTable

from pipelines.ingest.errors import LeaseHeldError
from pipelines.ingest.lease import acquire_lease
from pipelines.ingest.run import ingest
from pipelines.ingest.spec import IngestSpec
from pipelines.wiring.jobs import build_replay_job
from resources.jetstream import StreamSpec
from resources.lakehouse import LakehouseResource
from resources.spark import SparkResource


def test_replay_job_replaces_a_range_by_sequence_and_by_time_window(
    js, spark, unique_name, table_root, jetstream_resource, dagster_instance
):
    js.streams.add(StreamSpec(unique_name, (f"{unique_name}.>",)))
    spec = IngestSpec(name="t", stream=unique_name, durable="bronze", table="bronze/t")
    js.publish_batch([(f"{unique_name}.files.deleted", b"%d" % i, None) for i in range(40)])
    path = f"{table_root}/bronze/t"
    ingest(
        js,
        spark,
        spec,
        path,
        checkpoints=js.create_key_value(spec.checkpoint_bucket_spec()),
        run_id="live",
    )
    DeltaTable.forPath(spark, path).delete("seq > 30")
    resources = {
        "jetstream": jetstream_resource,
        "spark": SparkResource(),
        "lakehouse": LakehouseResource(root=str(table_root)),
    }
    job = build_replay_job(spec)

    by_seq = job.execute_in_process(
        run_config={"ops": {"replay_t_range": {"config": {"start_seq": 31, "end_seq": 35}}}},
        resources=resources,
        instance=dagster_instance,
    )
    start = js.streams.get_message(unique_name, 36).time.isoformat()
    end = js.streams.get_message(unique_name, 40).time.isoformat()
    by_time = job.execute_in_process(
        run_config={"ops": {"replay_t_range": {"config": {"start_time": start, "end_time": end}}}},
        resources=resources,
        instance=dagster_instance,
    )

    assert by_seq.success and by_time.success
    seqs = sorted(r.seq for r in DeltaTable.forPath(spark, path).toDF().collect())
    assert seqs == list(range(1, 40))  # 40 itself is at end_time, outside [start, end)
    [event] = [e for e in by_time.all_events if e.event_type_value == "ASSET_MATERIALIZATION"]
    assert event.asset_key.path == ["bronze", "t"]


class NoSpark(SparkResource):
    """A Spark resource that fails the test if the replay starts a session."""

    def get_session(self):
        raise AssertionError("the replay started Spark behind a held lease")


def test_replay_job_behind_a_working_run_s_lease_fails_before_spark_naming_the_holder(
    js, unique_name, table_root, jetstream_resource, dagster_instance
):
    js.streams.add(StreamSpec(unique_name, (f"{unique_name}.>",)))
    spec = IngestSpec(name="t", stream=unique_name, durable="bronze", table="bronze/t")
    js.publish_batch([(f"{unique_name}.files.deleted", b"%d" % i, None) for i in range(5)])
    dagster_instance.add_run(
        DagsterRun(job_name="ingest_t", run_id="busy-run", status=DagsterRunStatus.STARTED)
    )
    checkpoints = js.create_key_value(spec.checkpoint_bucket_spec())
    acquire_lease(checkpoints, stream=unique_name, consumer="bronze", holder="busy-run", ttl=60)
    config = {"start_seq": 1, "end_seq": 5, "lease_wait": 0}

    with pytest.raises(LeaseHeldError) as raised:
        build_replay_job(spec).execute_in_process(
            run_config={"ops": {"replay_t_range": {"config": config}}},
            resources={
                "jetstream": jetstream_resource,
                "spark": NoSpark(),
                "lakehouse": LakehouseResource(root=str(table_root)),
            },
            instance=dagster_instance,
        )

    assert (raised.value.holder, raised.value.bucket) == ("busy-run", checkpoints.name)
    message = str(raised.value)
    assert f"ingesting {unique_name}/bronze" in message and "this replay stops" in message
    assert "Dagster has that run as STARTED: it is working" in message
    assert not (table_root / "bronze" / "t").exists()
