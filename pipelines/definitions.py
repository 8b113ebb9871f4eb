"""The code location: the one place that wires assets, checks, jobs, schedules, sensors and
resources together."""

from __future__ import annotations

from dagster import AssetSelection, Definitions, define_asset_job, in_process_executor

from assets.bronze import build_bronze_asset, build_stream_asset_spec
from assets.downstream import file_trashed_events
from assets.gold import gold_file_trash
from assets.lag import build_lag_check
from assets.silver import silver_file_events
from pipelines.file_trash.topology import (
    AUDIT_LOG,
    BRONZE_FILE_EVENTS,
    FILE_EVENTS,
    REPLAY_REQUESTS,
    TRASH_NOTIFICATIONS,
)
from pipelines.generate_job import generate_file_events_job
from pipelines.jobs import build_replay_job
from pipelines.maintenance import maintain_delta_tables
from pipelines.schedules import daily_gold_job, daily_gold_schedule, delta_maintenance_schedule
from pipelines.settings import Settings
from resources.jetstream import JetStreamResource
from resources.lakehouse import LakehouseResource
from resources.quality import DataQualityResource
from resources.spark import SparkResource
from sensors import build_replay_request_sensor, build_stream_sensor
from sensors.observe import build_stream_observation_sensor
from sensors.stream import INGEST_TAG

settings = Settings.from_env()

bronze_file_events = build_bronze_asset(BRONZE_FILE_EVENTS)
audit_log = build_bronze_asset(AUDIT_LOG, key_prefix="audit", group_name="audit")
trash_notifications = build_bronze_asset(TRASH_NOTIFICATIONS, upstream=(file_trashed_events.key,))

ASSETS = [
    build_stream_asset_spec(FILE_EVENTS),
    bronze_file_events,
    audit_log,
    trash_notifications,
    silver_file_events,
    gold_file_trash,
    file_trashed_events,
]

# One job per ingest, tagged so that the run queue runs one at a time per ingest (see
# docs/automation.md); the stream sensors launch them.
INGEST_ASSETS = {
    BRONZE_FILE_EVENTS: (bronze_file_events, "bronze"),
    AUDIT_LOG: (audit_log, "audit"),
    TRASH_NOTIFICATIONS: (trash_notifications, "bronze"),
}
ingest_jobs = {
    spec: define_asset_job(
        f"ingest_{spec.name}",
        selection=AssetSelection.assets(asset),
        description=f"Land {spec.stream}'s pending messages for consumer {spec.durable!r} "
        f"in {spec.table}.",
        tags={INGEST_TAG: spec.app_id},
    )
    for spec, (asset, _) in INGEST_ASSETS.items()
}
ingest_file_events_job = ingest_jobs[BRONZE_FILE_EVENTS]
replay_file_events_job = build_replay_job(BRONZE_FILE_EVENTS)

stream_sensors = [
    build_stream_sensor(spec=spec, job=ingest_jobs[spec], key_prefix=prefix)
    for spec, (_, prefix) in INGEST_ASSETS.items()
]
# The stream as a live node in the UI, and each ingest's consumer_lag check on every tick.
lag_checks = [build_lag_check(spec, prefix) for spec, (_, prefix) in INGEST_ASSETS.items()]
observation_sensor = build_stream_observation_sensor(
    stream=FILE_EVENTS.name,
    ingests=list(INGEST_ASSETS),
    key_prefixes={spec.name: prefix for spec, (_, prefix) in INGEST_ASSETS.items()},
)
replay_request_sensor = build_replay_request_sensor(
    spec=BRONZE_FILE_EVENTS, job=replay_file_events_job, bucket=REPLAY_REQUESTS.bucket
)

file_trash_pipeline_job = define_asset_job(
    "file_trash_pipeline",
    selection=AssetSelection.all() - AssetSelection.groups("jetstream"),
    description="Everything: the ingests, silver with its checks, gold, downstream events.",
)

defs = Definitions(
    assets=ASSETS,
    asset_checks=lag_checks,
    jobs=[
        *ingest_jobs.values(),
        file_trash_pipeline_job,
        daily_gold_job,
        replay_file_events_job,
        generate_file_events_job,
        maintain_delta_tables,
    ],
    schedules=[daily_gold_schedule, delta_maintenance_schedule],
    sensors=[*stream_sensors, observation_sensor, replay_request_sensor],
    # One process, so one Spark JVM, per run: the default multiprocess executor would start a
    # JVM (and resolve the Delta jars) for every step, which costs more than it saves here.
    executor=in_process_executor,
    resources={
        "jetstream": JetStreamResource.from_env(),
        "spark": SparkResource(table_root=settings.lakehouse_root),
        "lakehouse": LakehouseResource(root=settings.lakehouse_root),
        "quality": DataQualityResource(),
    },
)
