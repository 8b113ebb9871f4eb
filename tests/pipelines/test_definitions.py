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
