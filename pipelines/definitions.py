"""The code location: the one place that wires assets, checks, jobs, schedules, sensors and
resources together."""

from __future__ import annotations

from pathlib import Path

from dagster import (
    AssetSelection,
    Definitions,
    JobDefinition,
    define_asset_job,
    in_process_executor,
    load_from_defs_folder,
)

from assets.downstream import file_trashed_events
from assets.gold import gold_file_trash
from assets.silver import silver_file_events
from pipelines.default_resources import default_resources
from pipelines.file_trash.topology import (
    AUDIT_LOG,
    BRONZE_FILE_EVENTS,
    FILE_EVENTS,
    REPLAY_REQUESTS,
    TRASH_NOTIFICATIONS,
)
from pipelines.generate_job import generate_file_events_job
from pipelines.maintenance import build_maintenance_job
from pipelines.schedules import daily_gold_job, daily_gold_schedule, delta_maintenance_schedule
from pipelines.settings import Settings
from pipelines.streams import BronzeIngest, build_stream
from resources.lakehouse import declared_tables

settings = Settings.from_env()

# The stream and its three ingests: bronze assets, ingest jobs, sensors, lag checks, replays.
file_events = build_stream(
    FILE_EVENTS,
    [
        BronzeIngest(BRONZE_FILE_EVENTS, replay=True),
        # Fan-out: a second durable consumer on the same subjects (the audit-logger service).
        BronzeIngest(AUDIT_LOG, key_prefix="audit"),
        # A filtered consumer fed by what gold publishes downstream.
        BronzeIngest(TRASH_NOTIFICATIONS, upstream=(file_trashed_events.key,)),
    ],
    replay_bucket=REPLAY_REQUESTS.bucket,
)
bronze_file_events, audit_log, trash_notifications = (
    file_events.bronze_assets[spec.name]
    for spec in (BRONZE_FILE_EVENTS, AUDIT_LOG, TRASH_NOTIFICATIONS)
)
ingest_file_events_job = file_events.ingest_jobs[BRONZE_FILE_EVENTS.name]
observation_sensor = file_events.observation_sensor

# The domain: silver with its checks, gold, and the FilePlacedInTrashEvents gold publishes.
FILE_TRASH_ASSETS = [silver_file_events, gold_file_trash, file_trashed_events]
ASSETS = [*file_events.defs.assets, *FILE_TRASH_ASSETS]  # every asset, for in-process runs

file_trash_pipeline_job = define_asset_job(
    "file_trash_pipeline",
    selection=AssetSelection.all() - AssetSelection.groups("jetstream"),
    description="Everything: the ingests, silver with its checks, gold, downstream events.",
)


def _code_location() -> tuple[Definitions, JobDefinition]:
    """The code location's Definitions, and its maintenance job over every Delta table an
    asset declares (its `lakehouse/table` metadata), the declared streams' included. Built
    in a function so that `defs` is the module's only Definitions (Dagster refuses two)."""
    # The streams declared as components (pipelines/defs/*/defs.yaml).
    declared = load_from_defs_folder(path_within_project=Path(__file__).parent)
    assets = [*file_events.defs.assets, *FILE_TRASH_ASSETS, *(declared.assets or [])]
    maintain = build_maintenance_job(declared_tables(assets))
    # The domain's Definitions, built inline, with the declared streams beside it.
    location = Definitions.merge(
        file_events.defs,
        declared,
        Definitions(
            assets=FILE_TRASH_ASSETS,
            jobs=[file_trash_pipeline_job, daily_gold_job, generate_file_events_job, maintain],
            schedules=[daily_gold_schedule, delta_maintenance_schedule],
            # One process, so one Spark JVM, per run: the default multiprocess executor would
            # start a JVM (and resolve the Delta jars) for every step, which costs more than it
            # saves here.
            executor=in_process_executor,
            resources=default_resources(),
        ),
    )
    return location, maintain


defs, maintain_delta_tables = _code_location()
