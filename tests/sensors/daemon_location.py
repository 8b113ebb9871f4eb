"""The code location `test_daemon.py` starts a real dagster-daemon on: one ingest and its sensor.

Read from the environment the test sets: `JSL_TEST_NATS_URL` (the session's nats-server),
`JSL_TEST_STREAM` (a stream the test created, with a durable consumer `bronze`) and
`JSL_TEST_TABLE_ROOT` (where the bronze table goes).
"""

import os

from dagster import (
    AssetSelection,
    DefaultSensorStatus,
    Definitions,
    define_asset_job,
    in_process_executor,
)

from assets.bronze import build_bronze_asset, build_stream_asset_spec
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import JetStreamResource, StreamSpec
from resources.lakehouse import LakehouseResource
from resources.spark import SparkResource
from sensors.stream import build_stream_sensor
from sensors.stream_options import StreamSensorOptions

STREAM = os.environ["JSL_TEST_STREAM"]

INGEST = IngestSpec(
    name=STREAM.lower(),
    stream=STREAM,
    durable="bronze",
    table=f"bronze/{STREAM.lower()}",
    readers=1,
    pull_batch=50,
    checkpoint_bucket=f"ckpt_{STREAM}",
)

bronze = build_bronze_asset(INGEST)
# In-process: one Python process and one Spark JVM per run, light on a small machine.
ingest_job = define_asset_job(
    f"ingest_{INGEST.name}",
    selection=AssetSelection.assets(bronze),
    executor_def=in_process_executor,
)

defs = Definitions(
    assets=[build_stream_asset_spec(StreamSpec(STREAM, (f"{STREAM}.files.>",))), bronze],
    jobs=[ingest_job],
    sensors=[
        build_stream_sensor(
            spec=INGEST,
            job=ingest_job,
            options=StreamSensorOptions(
                minimum_interval_seconds=1, default_status=DefaultSensorStatus.RUNNING
            ),
        )
    ],
    resources={
        "jetstream": JetStreamResource(servers=os.environ["JSL_TEST_NATS_URL"]),
        "spark": SparkResource(),
        "lakehouse": LakehouseResource(root=os.environ["JSL_TEST_TABLE_ROOT"]),
    },
)
