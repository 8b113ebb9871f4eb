"""The code location: the one place that wires assets, checks, jobs, schedules, sensors and
resources together."""

from __future__ import annotations

from dagster import AssetSelection, Definitions, define_asset_job

from assets.bronze import build_bronze_asset, build_stream_asset_spec
from assets.downstream import file_trashed_events
from assets.gold import gold_file_trash
from assets.silver import silver_file_events
from pipelines.file_trash.topology import (
    AUDIT_LOG,
    BRONZE_FILE_EVENTS,
    FILE_EVENTS,
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

ingest_file_events_job = define_asset_job(
    "ingest_file_events",
    selection=AssetSelection.assets(bronze_file_events),
    description="Land FILE_EVENTS' pending messages in bronze.",
)

file_trash_pipeline_job = define_asset_job(
    "file_trash_pipeline",
    selection=AssetSelection.all() - AssetSelection.groups("jetstream"),
    description="Everything: the ingests, silver with its checks, gold, downstream events.",
)

defs = Definitions(
    assets=ASSETS,
    jobs=[
        ingest_file_events_job,
        file_trash_pipeline_job,
        daily_gold_job,
        build_replay_job(BRONZE_FILE_EVENTS),
        generate_file_events_job,
        maintain_delta_tables,
    ],
    schedules=[daily_gold_schedule, delta_maintenance_schedule],
    resources={
        "jetstream": JetStreamResource(servers=settings.nats_url),
        "spark": SparkResource(),
        "lakehouse": LakehouseResource(root=settings.lakehouse_root),
        "quality": DataQualityResource(),
    },
)
