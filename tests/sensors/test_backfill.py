"""Sensor-triggered backfills: a backlog becomes range pieces, each exactly-once in any order.

Real nats-server, real Spark + Delta, a real (ephemeral) Dagster instance: the sensor builds
the pieces, the bronze asset runs them with their run config and tags, shuffled.
"""

from dataclasses import replace

from dagster import AssetSelection, RunsFilter, SensorResult, define_asset_job, materialize

from assets.bronze import build_bronze_asset, build_stream_asset_spec
from resources.jetstream import StreamSpec
from resources.lakehouse import LakehouseResource
from resources.spark import SparkResource
from sensors.stream import build_stream_sensor
from sensors.stream_options import StreamSensorOptions
from tests.pipelines.ingest.harness import Ingest, assert_landed_exactly_once, publish_events
from tests.sensors.conftest import NOW, context_for


def test_backfill_pieces_run_in_shuffled_order_land_every_message_exactly_once(
    js, spark, ingest, jetstream_resource, table_root, dagster_instance
):
    spec = replace(ingest, max_messages=20)
    published = publish_events(js, spec.stream, 95, seed=6)
    bronze = build_bronze_asset(spec)
    assets = [build_stream_asset_spec(StreamSpec(spec.stream, (f"{spec.stream}.files.>",))), bronze]
    resources = {
        "jetstream": jetstream_resource,
        "spark": SparkResource(),
        "lakehouse": LakehouseResource(root=str(table_root)),
    }
    job = define_asset_job("ingest", selection=AssetSelection.assets(bronze))
    sensor = build_stream_sensor(spec=spec, job=job, options=StreamSensorOptions(clock=lambda: NOW))

    def tick(cursor):
        with context_for(dagster_instance, jetstream_resource, cursor) as context:
            result = sensor(context)
        assert isinstance(result, SensorResult)
        return result

    def execute(requests):
        for request in requests:
            run = materialize(
                assets,
                run_config=request.run_config,
                tags=request.tags,
                resources=resources,
                instance=dagster_instance,
            )
            assert run.success

    backfill = tick(None)
    pieces = backfill.run_requests
    assert [r.tags["jsl/range"] for r in pieces] == ["1-20", "21-40", "41-60", "61-80", "81-95"]
    # The run queue starts pieces in order, but retries and re-executions need not.
    shuffled = [pieces[i] for i in (3, 1, 4, 0, 2)]

    execute(shuffled)

    ingest_id = f"{spec.stream}:bronze"
    one_backfill = RunsFilter(tags={"jsl/backfill": f"{ingest_id}:1-95"})
    assert len(dagster_instance.get_runs(one_backfill)) == 5
    path = f"{table_root}/{spec.table}"
    seqs = [row.seq for row in spark.read.format("delta").load(path).select("seq").collect()]
    assert len(seqs) == len(set(seqs)), "a piece run out of order landed a message twice"
    # 61-80 ran first and took 1-20 (a run lands from the committed position, at most
    # max_messages, up to its end); 21-40 took 21-40; 81-95 took 41-60; 1-20, 41-60: nothing.
    assert sorted(seqs) == list(range(1, 61))

    # The next tick requests the rest. Finished runs already used the plain keys of these
    # ranges (Dagster would skip a repeated key), so the re-requests carry an attempt number.
    rest = tick(backfill.cursor)
    assert [r.run_key for r in rest.run_requests] == [
        f"{ingest_id}:61-80:attempt-2",
        f"{ingest_id}:81-95:attempt-2",
    ]
    execute(rest.run_requests)
    assert tick(rest.cursor).skip_reason.skip_message.startswith("nothing new")

    checkpoints = js.key_value(spec.checkpoint_bucket)
    assert_landed_exactly_once(js, spark, Ingest(spec, path, checkpoints), published)
