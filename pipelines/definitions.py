"""The code location: the one place that wires assets, jobs and resources together."""

from __future__ import annotations

from dagster import AssetSelection, Definitions, define_asset_job

from assets.bronze import build_bronze_asset, build_stream_asset_spec
from pipelines.file_trash.topology import BRONZE_FILE_EVENTS, FILE_EVENTS
from pipelines.jobs import build_replay_job
from pipelines.settings import Settings
from resources.jetstream import JetStreamResource
from resources.lakehouse import LakehouseResource
from resources.spark import SparkResource

settings = Settings.from_env()

bronze_file_events = build_bronze_asset(BRONZE_FILE_EVENTS)

ingest_file_events_job = define_asset_job(
    "ingest_file_events",
    selection=AssetSelection.assets(bronze_file_events),
    description="Land FILE_EVENTS' pending messages in bronze.",
)

defs = Definitions(
    assets=[build_stream_asset_spec(FILE_EVENTS), bronze_file_events],
    jobs=[ingest_file_events_job, build_replay_job(BRONZE_FILE_EVENTS)],
    resources={
        "jetstream": JetStreamResource(servers=settings.nats_url),
        "spark": SparkResource(),
        "lakehouse": LakehouseResource(root=settings.lakehouse_root),
    },
)
