"""A contract silver run's artifacts in the Object Store: each event type's Great Expectations
validation result (JSON) and report (HTML), then the run manifest listing them.

They go under `runs/<run id>/silver/<stream lower>/` in the artifacts bucket (default
`lakehouse-artifacts`, which `jsl provision` creates for a declared stream), so
`jsl artifacts list --run <run id>` shows them and the materialisation's metadata names the
`jsl artifacts get` command of each.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pipelines.lakehouse.artifacts import (
    HTML_TYPE,
    JSON_TYPE,
    ArtifactStore,
    RunManifest,
    StoredArtifact,
    TableState,
)
from pipelines.silver.stage import QUARANTINE, ContractSilverResult

if TYPE_CHECKING:
    from resources.jetstream import JetStreamClient


def silver_artifact_asset(stream: str, batch: int = 1) -> str:
    """The asset name a stream's silver artifacts are stored under: `silver/<stream lower>`,
    and `silver/<stream lower>/batch-<n>` for the further batches of a run that keeps going
    (`assets.follow`)."""
    asset = f"silver/{stream.lower()}"
    return asset if batch == 1 else f"{asset}/batch-{batch}"


def store_silver_artifacts(
    client: JetStreamClient,
    *,
    bucket: str,
    run_id: str,
    stream: str,
    source_table: str,
    result: ContractSilverResult,
    tables: Mapping[str, tuple[str, str]],
    checks: Mapping[str, bool],
    batch: int = 1,
) -> tuple[StoredArtifact, ...]:
    """Stores a processed batch's validation results and reports, then its run manifest.

    Args:
        client: the JetStream client.
        bucket: the Object Store bucket.
        run_id: the Dagster run.
        stream: the stream whose silver ran.
        source_table: the bronze table read.
        result: the batch's outcome (`result.processed` must be true).
        tables: check target (event type, or QUARANTINE) -> (table name, path).
        checks: `<asset key>:<check name>` -> passed, for the manifest.
        batch: which batch of the run this is (1 unless the run keeps going).

    Returns:
        The stored files, then the manifest.

    Raises:
        JetStreamError: the bucket is missing (`BucketNotFoundError`, saying how to create
            it) or the server failed.
    """
    files = {}
    for event_type, report in result.reports.items():
        files[f"validation-{event_type}.json"] = (report.result_json, JSON_TYPE)
        files[f"report-{event_type}.html"] = (report.to_html().encode(), HTML_TYPE)
    states = []
    for target, (table, path) in tables.items():
        merge = result.quarantine if target == QUARANTINE else result.tables[target]
        states.append(TableState(table, path, merge.version, None, merge.inserted))
    asset = silver_artifact_asset(stream, batch)
    manifest = RunManifest(
        run_id=run_id,
        asset=asset,
        created_at=dt.datetime.now(dt.timezone.utc),
        ranges={source_table: (result.bronze_start, result.bronze_end)},
        tables=tuple(states),
        checks=dict(checks),
        extra={"rows_in": result.rows_in, "bronze_version": result.bronze_version or 0},
    )
    return ArtifactStore(client, bucket).put_run(
        run_id=run_id, asset=asset, files=files, manifest=manifest
    )
