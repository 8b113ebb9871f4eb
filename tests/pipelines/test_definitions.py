"""The code location loads, and the dagster CLI validates it."""

import subprocess
import sys
from pathlib import Path

from dagster import AssetKey

PROJECT = Path(__file__).resolve().parents[2]


def test_definitions_load_with_bronze_asset_job_and_resources():
    from dagster import Definitions

    from pipelines.definitions import defs

    Definitions.validate_loadable(defs)
    keys = set(defs.resolve_all_asset_keys())
    assert AssetKey(["bronze", "file_events"]) in keys
    assert AssetKey(["jetstream", "FILE_EVENTS"]) in keys
    assert defs.resolve_job_def("ingest_file_events") is not None
    assert defs.resolve_job_def("replay_file_events") is not None
    assert {"jetstream", "spark", "lakehouse"} <= set(defs.resources)


def test_the_ingest_job_lands_bronze_then_silver_and_automation_evaluates_every_5_s():
    from dagster import AutomationConditionSensorDefinition

    from pipelines.definitions import defs

    job = defs.resolve_job_def("ingest_file_events")
    planned = {key.to_user_string() for key in job.asset_layer.executable_asset_keys}
    assert planned == {
        "bronze/file_events", "silver/file_deleted", "silver/file_trashed", "silver/quarantine",
    }  # fmt: skip
    assert "then materialise silver/file_deleted" in job.description
    sensors = {sensor.name: sensor for sensor in defs.get_repository_def().sensor_defs}
    automation = sensors["lakehouse_automation_sensor"]
    assert isinstance(automation, AutomationConditionSensorDefinition)
    assert automation.minimum_interval_seconds == 5
    assert "default_automation_condition_sensor" not in sensors  # ours covers every asset
    assert sensors["file_events_stream_sensor"].minimum_interval_seconds == 5


def test_dagster_definitions_validate_passes_on_the_workspace():
    dagster = Path(sys.executable).parent / "dagster"
    result = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
