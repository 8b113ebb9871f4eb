"""The code location `test_daemon.py` starts a real dagster-daemon on: one ingest and its sensor.

Read from the environment the test sets: `JSL_TEST_NATS_URL` (the session's nats-server),
`JSL_TEST_STREAM` (a stream the test created, with a durable consumer `bronze`) and
`JSL_TEST_TABLE_ROOT` (where the bronze table goes). Optional: `JSL_TEST_LEASE_TTL` (the
ingest's lease TTL, default 30 s), `JSL_TEST_SENSOR_INTERVAL` (seconds between the sensor's
ticks, default 1) and `JSL_TEST_KILL_ARMED`, a file: while it exists, the next
run to plan a range deletes it and SIGKILLs its own process there (`test_daemon_recovery.py`).
"""

import os
import signal
from dataclasses import replace

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
from sensors.stream import INGEST_TAG, build_stream_sensor
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
    lease_ttl=float(os.environ.get("JSL_TEST_LEASE_TTL", "30")),
)

ARMED = os.environ.get("JSL_TEST_KILL_ARMED")
if ARMED:
    import assets.bronze

    plain_ingest = assets.bronze.ingest

    def ingest_that_may_die(*args, options, **kwargs):
        """`ingest`, killed for real (SIGKILL: no finally, no lease release) once it has
        planned its range, if the armed file exists."""

        def hook(step: str) -> None:
            if step == "planned" and os.path.exists(ARMED):
                os.remove(ARMED)
                os.kill(os.getpid(), signal.SIGKILL)

        return plain_ingest(*args, options=replace(options, hook=hook), **kwargs)

    assets.bronze.ingest = ingest_that_may_die

bronze = build_bronze_asset(INGEST)
# In-process: one Python process and one Spark JVM per run, light on a small machine.
ingest_job = define_asset_job(
    f"ingest_{INGEST.name}",
    selection=AssetSelection.assets(bronze),
    executor_def=in_process_executor,
    tags={INGEST_TAG: INGEST.app_id},  # as the project's own ingest jobs carry it
)

defs = Definitions(
    assets=[build_stream_asset_spec(StreamSpec(STREAM, (f"{STREAM}.files.>",))), bronze],
    jobs=[ingest_job],
    sensors=[
        build_stream_sensor(
            spec=INGEST,
            job=ingest_job,
            options=StreamSensorOptions(
                minimum_interval_seconds=int(os.environ.get("JSL_TEST_SENSOR_INTERVAL", "1")),
                default_status=DefaultSensorStatus.RUNNING,
            ),
        )
    ],
    resources={
        "jetstream": JetStreamResource(servers=os.environ["JSL_TEST_NATS_URL"]),
        "spark": SparkResource(),
        "lakehouse": LakehouseResource(root=os.environ["JSL_TEST_TABLE_ROOT"]),
    },
)
