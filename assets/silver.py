"""Silver assets: typed, validated events, routed by type, with a quarantine for the rest.

One multi-asset writes `silver/file_deleted`, `silver/file_trashed` and `silver/quarantine`
from the bronze rows it has not processed yet (`pipelines.file_trash.silver_stage`), and
reports the Great Expectations suites as asset checks. Critical checks are blocking: when
one fails, the run stops after silver and gold does not materialise on bad data. The
validation results, an HTML report and a run manifest go to the Object Store.

A run with no bronze rows after the watermark still reports the selected tables (nothing
written), as a dbt incremental model does, so the steps after silver in the same run go on
and each takes what is new for it by its own watermark; and it reports the checks with the
verdicts of the batch the tables last took in, which still describe what silver holds.
"""

import datetime as dt

from dagster import (
    AssetCheckKey,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    AutomationCondition,
    Config,
    MaterializeResult,
    MetadataValue,
    multi_asset,
)
from pydantic import Field

from assets.bronze import bronze_asset_key
from pipelines.artifacts import ArtifactStore, RunManifest, TableState, artifact_metadata
from pipelines.delta_tables import table_version
from pipelines.file_trash import silver_stage, tables
from pipelines.file_trash.silver_stage import FILE_DELETED, FILE_TRASHED, SilverPaths
from pipelines.file_trash.topology import ARTIFACTS, BRONZE_FILE_EVENTS, CHECKPOINTS
from pipelines.watermarks import Watermark, WatermarkStore
from resources.jetstream import JetStreamResource
from resources.jetstream.errors import JetStreamError
from resources.lakehouse import TABLE_METADATA_KEY, LakehouseResource
from resources.quality import CheckOutcome, DataQualityResource
from resources.spark import SparkResource

FILE_DELETED_KEY = AssetKey(tables.SILVER_FILE_DELETED.split("/"))
FILE_TRASHED_KEY = AssetKey(tables.SILVER_FILE_TRASHED.split("/"))
QUARANTINE_KEY = AssetKey(tables.SILVER_QUARANTINE.split("/"))
CHECKED_ASSETS = {FILE_DELETED: FILE_DELETED_KEY, FILE_TRASHED: FILE_TRASHED_KEY}


class SilverConfig(Config):
    """Run config of the silver stage."""

    trash_retention_days: int = Field(
        default=30, description="Days a deleted file stays in the trash (expires_at)."
    )


def check_specs() -> list[AssetCheckSpec]:
    """One asset check per expectation of each suite; critical ones block downstream assets."""
    suites = silver_stage.suites(dt.datetime.now(dt.UTC))  # names do not depend on the clock
    return [
        AssetCheckSpec(
            name=check.name,
            asset=CHECKED_ASSETS[event_type],
            description=f"[{check.rule}] {check.description}",
            blocking=check.critical,
        )
        for event_type, suite in suites.items()
        for check in suite.checks
    ]


def check_result(asset_key: AssetKey, outcome: CheckOutcome) -> AssetCheckResult:
    """An expectation's outcome as an asset check result with per-expectation metadata."""
    return AssetCheckResult(
        asset_key=asset_key,
        check_name=outcome.name,
        passed=outcome.success,
        severity=AssetCheckSeverity.ERROR if outcome.critical else AssetCheckSeverity.WARN,
        metadata={
            "rule": MetadataValue.text(outcome.rule),
            "expectation": MetadataValue.text(outcome.expectation_type),
            "column": MetadataValue.text(outcome.column or ""),
            "rows_checked": MetadataValue.int(outcome.element_count or 0),
            "unexpected_count": MetadataValue.int(outcome.unexpected_count or 0),
            "unexpected_percent": MetadataValue.float(float(outcome.unexpected_percent or 0)),
            "mostly": MetadataValue.float(float(outcome.mostly or 1.0)),
            "sample_values": MetadataValue.json(list(outcome.sample_values)),
            "critical": MetadataValue.bool(outcome.critical),
        },
    )


@multi_asset(
    name="silver_file_events",
    specs=[
        AssetSpec(
            key,
            deps=[bronze_asset_key(BRONZE_FILE_EVENTS)],
            description=description,
            group_name="silver",
            kinds={"spark", "delta"},
            automation_condition=AutomationCondition.eager(),
            metadata={TABLE_METADATA_KEY: "/".join(key.path)},
        )
        for key, description in (
            (FILE_DELETED_KEY, "Valid FileDeletedEvents, typed, one row per eventId."),
            (FILE_TRASHED_KEY, "Valid FilePlacedInTrashEvents, typed, one row per eventId."),
            (QUARANTINE_KEY, "Rejected bronze rows, raw payload kept, with the rules broken."),
        )
    ],
    check_specs=check_specs(),
    # The three tables are written together from one batch: selecting one of them processes the
    # batch into all three and reports the selected. Every run reports each selected table, even
    # with nothing new: an output left out would make Dagster skip every step after it.
    can_subset=True,
)
def silver_file_events(
    context: AssetExecutionContext,
    config: SilverConfig,
    jetstream: JetStreamResource,
    spark: SparkResource,
    lakehouse: LakehouseResource,
    quality: DataQualityResource,
):
    """Parses, routes, de-duplicates and validates new bronze rows into the silver tables."""
    client = jetstream.get_client()
    session = spark.get_session()
    paths = SilverPaths(
        bronze=lakehouse.table_path(BRONZE_FILE_EVENTS.table),
        file_deleted=lakehouse.table_path(tables.SILVER_FILE_DELETED),
        file_trashed=lakehouse.table_path(tables.SILVER_FILE_TRASHED),
        quarantine=lakehouse.table_path(tables.SILVER_QUARANTINE),
        bronze_table=BRONZE_FILE_EVENTS.table,
    )
    now = dt.datetime.now(dt.UTC)
    result = silver_stage.run_silver(
        session,
        paths,
        watermarks=WatermarkStore(client.key_value(CHECKPOINTS.bucket)),
        validate=lambda frame, suite: quality.validate_dataframe(
            frame, suite, evaluated_at=now, meta={"run_id": context.run.run_id}
        ),
        stream=BRONZE_FILE_EVENTS.stream,
        now=now,
        run_id=context.run.run_id,
        retention=dt.timedelta(days=config.trash_retention_days),
    )
    if not result.processed:
        yield from report_nothing_new(context, session, paths, result.watermark)
        return
    context.log.info(
        f"bronze seq {result.bronze_start}-{result.bronze_end}: {result.rows_in} rows -> "
        f"{result.file_deleted.inserted} file_deleted, {result.file_trashed.inserted} "
        f"file_trashed, {result.quarantine.inserted} quarantined {result.quarantined_by_rule}"
    )
    rows = {
        path: row_count(session, path)
        for path in (paths.file_deleted, paths.file_trashed, paths.quarantine)
    }
    try:
        stored = store_artifacts(client, context.run.run_id, result, paths, rows)
    except JetStreamError as error:
        # The tables and the watermark have moved: report the batch and its checks anyway.
        context.log.warning(f"artifacts of this run were not stored: {error}")
        stored = ()
    shared = {
        "bronze_range": MetadataValue.text(f"{result.bronze_start}-{result.bronze_end}"),
        "bronze_version": MetadataValue.int(result.bronze_version or 0),
        "rows_in": MetadataValue.int(result.rows_in),
        **artifact_metadata(stored),
    }
    outcomes = (
        (FILE_DELETED_KEY, paths.file_deleted, result.file_deleted),
        (FILE_TRASHED_KEY, paths.file_trashed, result.file_trashed),
        (QUARANTINE_KEY, paths.quarantine, result.quarantine),
    )
    selected = context.selected_asset_keys
    for key, path, merge in outcomes:
        if key not in selected:
            continue
        metadata = {
            **shared,
            "rows_written": MetadataValue.int(merge.inserted),
            "table_path": MetadataValue.path(path),
        }
        if merge.version is not None:
            metadata["delta_version"] = MetadataValue.int(merge.version)
            metadata["dagster/row_count"] = MetadataValue.int(rows[path])
        if key == QUARANTINE_KEY:
            metadata["quarantined"] = MetadataValue.int(merge.inserted)
            for rule, rows in sorted(result.quarantined_by_rule.items()):
                metadata[f"quarantined_{rule}"] = MetadataValue.int(rows)
        yield MaterializeResult(asset_key=key, metadata=metadata)
    selected_checks = context.selected_asset_check_keys
    for event_type, report in result.reports.items():
        for outcome in report.outcomes:
            if AssetCheckKey(CHECKED_ASSETS[event_type], outcome.name) in selected_checks:
                yield check_result(CHECKED_ASSETS[event_type], outcome)


def report_nothing_new(
    context: AssetExecutionContext, session, paths: SilverPaths, watermark: Watermark
):
    """What a run with no bronze rows after the watermark reports: the selected tables, with
    nothing written, and the checks with the verdicts of the batch the tables last took in.

    Reporting nothing would make Dagster skip every step after silver in the same run
    (events/file_trashed, gold), although they have work of their own. Reporting the tables
    without check results would make declarative automation hold them back
    (`all_deps_blocking_checks_passed` counts only check results of the latest
    materialization), and let them run in this run even after a batch that failed a critical
    check. The silver tables are unchanged since that batch, so its verdicts still describe
    them: one that failed a critical check fails this run again and holds the steps after it.
    """
    note = f"no bronze rows after the silver watermark {watermark.position}: nothing written"
    context.log.info(f"{BRONZE_FILE_EVENTS.table}: {note}")
    selected = context.selected_asset_keys
    for key, path in (
        (FILE_DELETED_KEY, paths.file_deleted),
        (FILE_TRASHED_KEY, paths.file_trashed),
        (QUARANTINE_KEY, paths.quarantine),
    ):
        if key not in selected:
            continue
        metadata = {
            "rows_in": MetadataValue.int(0),
            "rows_written": MetadataValue.int(0),
            "watermark": MetadataValue.int(watermark.position),
            "note": MetadataValue.text(note),
            "table_path": MetadataValue.path(path),
        }
        version = table_version(session, path)
        if version is not None:
            metadata["delta_version"] = MetadataValue.int(version)
            metadata["dagster/row_count"] = MetadataValue.int(row_count(session, path))
        if key == QUARANTINE_KEY:
            metadata["quarantined"] = MetadataValue.int(0)
        yield MaterializeResult(asset_key=key, metadata=metadata)
    verdicts = silver_stage.recorded_verdicts(watermark)
    if verdicts is None:
        context.log.info(
            f"the silver watermark ({watermark.position}) records no check verdicts: "
            "no check results"
        )
        return
    batch = (
        f"bronze seq {watermark.details.get('bronze_start', '?')}-{watermark.position} "
        f"(run {watermark.run_id})"
    )
    selected_checks = context.selected_asset_check_keys
    for event_type, suite in silver_stage.suites(dt.datetime.now(dt.UTC)).items():
        asset_key = CHECKED_ASSETS[event_type]
        for check in suite.checks:
            passed = verdicts.get(event_type, {}).get(check.name)
            if passed is None or AssetCheckKey(asset_key, check.name) not in selected_checks:
                continue  # a check added since that batch has no verdict: it reports nothing
            yield AssetCheckResult(
                asset_key=asset_key,
                check_name=check.name,
                passed=passed,
                severity=AssetCheckSeverity.ERROR if check.critical else AssetCheckSeverity.WARN,
                description=f"{note}; the verdict of {batch}, unchanged since",
                metadata={
                    "rule": MetadataValue.text(check.rule),
                    "rows_checked": MetadataValue.int(0),
                    "critical": MetadataValue.bool(check.critical),
                    "verdict_of": MetadataValue.text(batch),
                },
            )


def row_count(session, path: str) -> int:
    """Rows in the Delta table at `path`."""
    return session.read.format("delta").load(path).count()


def store_artifacts(
    client, run_id: str, result: silver_stage.SilverResult, paths, rows: dict[str, int]
):
    """Stores the validation results, an HTML report and the run manifest; returns them.

    `rows` is each silver table's row count, by path.
    """
    files = {}
    for event_type, report in result.reports.items():
        files[f"validation-{event_type}.json"] = (report.result_json, "application/json")
        files[f"report-{event_type}.html"] = (report.to_html().encode(), "text/html")
    states = tuple(
        TableState(table, path, merge.version, rows[path], merge.inserted)
        for table, path, merge in (
            (tables.SILVER_FILE_DELETED, paths.file_deleted, result.file_deleted),
            (tables.SILVER_FILE_TRASHED, paths.file_trashed, result.file_trashed),
            (tables.SILVER_QUARANTINE, paths.quarantine, result.quarantine),
        )
    )
    manifest = RunManifest(
        run_id=run_id,
        asset="silver/file_events",
        created_at=dt.datetime.now(dt.UTC),
        ranges={paths.bronze_table: (result.bronze_start, result.bronze_end)},
        tables=states,
        checks={
            f"{CHECKED_ASSETS[event_type].to_user_string()}:{outcome.name}": outcome.success
            for event_type, report in result.reports.items()
            for outcome in report.outcomes
        },
        artifacts=(),
        extra={"rows_in": result.rows_in, "bronze_version": result.bronze_version or 0},
    )
    return ArtifactStore(client, ARTIFACTS.bucket).put_run(
        run_id=run_id, asset="silver/file_events", files=files, manifest=manifest
    )
