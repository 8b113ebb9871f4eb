"""The code location: the one place that wires assets, checks, jobs, schedules, sensors and
resources together."""

from __future__ import annotations

import functools
from pathlib import Path

from dagster import (
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    AutomationConditionSensorDefinition,
    Definitions,
    JobDefinition,
    define_asset_job,
    in_process_executor,
    load_from_defs_folder,
)

from assets.bronze import bronze_asset_key
from assets.downstream import file_trashed_events
from assets.gold import SILVER_FILE_DELETED_KEY, gold_file_trash
from pipelines.file_trash.topology import (
    AUDIT_LOG,
    BRONZE_FILE_EVENTS,
    DEFS_YAML,
    FILE_EVENTS,
    TRASH_NOTIFICATIONS,
)
from pipelines.settings import Settings
from pipelines.wiring.default_resources import default_resources
from pipelines.wiring.generate_job import generate_file_events_job
from pipelines.wiring.maintenance import build_maintenance_job
from pipelines.wiring.schedules import (
    daily_gold_job,
    daily_gold_schedule,
    delta_maintenance_schedule,
)
from pipelines.wiring.streams import check_one_writer_per_bronze_table
from resources.lakehouse import declared_tables, declared_writer_leases

settings = Settings.from_env()


@functools.cache
def declared_streams() -> Definitions:
    """Every stream declared as a component in `pipelines/defs/*/defs.yaml`, the file trash's
    FILE_EVENTS among them (its stream asset, three ingests with their bronze assets, jobs,
    sensors and lag checks, the observation sensor, replays, and its contract's silver with
    its checks)."""
    return load_from_defs_folder(path_within_project=Path(__file__).parent)


def _declared(what: str, found: object) -> object:
    """`found`, or an error naming the file to fix when the declaration lacks it."""
    if found is None:
        raise ValueError(
            f"{DEFS_YAML}: the file trash pipeline needs {what}, which the declaration no "
            "longer builds; restore that stream or ingest"
        )
    return found


def _declared_asset(key: AssetKey) -> AssetsDefinition:
    assets = declared_streams().assets or ()
    found = next((a for a in assets if key in getattr(a, "keys", ())), None)
    return _declared(f"the asset {key.to_user_string()}", found)


# FILE_EVENTS' declared parts the domain and the tests refer to.
bronze_file_events = _declared_asset(bronze_asset_key(BRONZE_FILE_EVENTS))
audit_log = _declared_asset(bronze_asset_key(AUDIT_LOG, "audit"))
trash_notifications = _declared_asset(bronze_asset_key(TRASH_NOTIFICATIONS))
silver_file_events = _declared_asset(SILVER_FILE_DELETED_KEY)
OBSERVATION_SENSOR = f"observe_{FILE_EVENTS.name}"
observation_sensor = _declared(
    f"the sensor {OBSERVATION_SENSOR}",
    next((s for s in declared_streams().sensors or () if s.name == OBSERVATION_SENSOR), None),
)

# The domain: gold, and the FilePlacedInTrashEvents gold publishes.
FILE_TRASH_ASSETS = [gold_file_trash, file_trashed_events]
ASSETS = [*(declared_streams().assets or ()), *FILE_TRASH_ASSETS]  # for in-process runs

file_trash_pipeline_job = define_asset_job(
    "file_trash_pipeline",
    selection=AssetSelection.all() - AssetSelection.groups("jetstream"),
    description="Everything: the ingests, silver with its checks, gold, downstream events.",
)

# Declarative automation for the whole code location (silver after a replay or a bronze run
# launched alone, gold and the downstream events after silver at most once a minute,
# declared aggregates), in place of Dagster's default_automation_condition_sensor, whose
# interval is fixed at 30 s. Each asset waits on average half the interval after its upstream
# commits, gold and the events up to a minute more (docs/automation.md).
automation_sensor = AutomationConditionSensorDefinition(
    "lakehouse_automation_sensor",
    target=AssetSelection.all(),
    minimum_interval_seconds=settings.automation_interval_seconds,
    description="Runs each asset with an automation condition when its upstream commits, "
    f"evaluated every {settings.automation_interval_seconds} s "
    "(JSL_AUTOMATION_INTERVAL_SECONDS).",
)


def _code_location() -> tuple[Definitions, JobDefinition]:
    """The code location's Definitions, and its maintenance job over every Delta table an
    asset declares (its `lakehouse/table` metadata), the declared streams' included. Built
    in a function so that `defs` is the module's only Definitions (Dagster refuses two).
    Each bronze table is an ingest's alone, across the declared streams too."""
    check_one_writer_per_bronze_table(ASSETS)
    maintain = build_maintenance_job(declared_tables(ASSETS), declared_writer_leases(ASSETS))
    # The declared streams, and the domain's Definitions built inline beside them.
    location = Definitions.merge(
        declared_streams(),
        Definitions(
            assets=FILE_TRASH_ASSETS,
            jobs=[file_trash_pipeline_job, daily_gold_job, generate_file_events_job, maintain],
            schedules=[daily_gold_schedule, delta_maintenance_schedule],
            sensors=[automation_sensor],
            # One process, so one Spark JVM, per run: the default multiprocess executor would
            # start a JVM (and resolve the Delta jars) for every step, which costs more than it
            # saves here.
            executor=in_process_executor,
            resources=default_resources(),
        ),
    )
    return location, maintain


defs, maintain_delta_tables = _code_location()
