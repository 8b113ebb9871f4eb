"""Gold assets: daily trash statistics and the files about to expire, from silver."""

import datetime as dt

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    Config,
    MaterializeResult,
    MetadataValue,
    multi_asset,
)
from pydantic import Field

from assets.automation import AFTER_UPSTREAM_CHECKS_AT_MOST_EVERY_MINUTE
from assets.nothing_new import finding_metadata
from pipelines.file_trash import tables
from pipelines.file_trash.gold_stage import GoldPaths, GoldTable, gold_unchanged, run_gold
from pipelines.lakehouse.refresh import refresh_summary
from resources.lakehouse import TABLE_METADATA_KEY, LakehouseResource
from resources.spark import SparkResource

# What gold reads: the contract's silver table of FileDeletedEvents (pipelines/defs/file_events).
SILVER_FILE_DELETED_KEY = AssetKey(tables.SILVER_FILE_DELETED.split("/"))
GOLD_KEYS = {
    "daily_by_user": AssetKey(tables.GOLD_DAILY_BY_USER.split("/")),
    "daily_by_mime_type": AssetKey(tables.GOLD_DAILY_BY_MIME_TYPE.split("/")),
    "expiring_files": AssetKey(tables.GOLD_EXPIRING_FILES.split("/")),
}
DESCRIPTIONS = {
    "daily_by_user": "Files and bytes trashed per UTC day and user.",
    "daily_by_mime_type": "Files and bytes trashed per UTC day and mime type.",
    "expiring_files": "Trashed files whose retention ends within the configured horizon.",
}


class GoldConfig(Config):
    """Run config of the gold stage."""

    expiring_within_days: int = Field(
        default=7, description="Horizon of gold/expiring_files, in days from the run's start."
    )


@multi_asset(
    name="gold_file_trash",
    specs=[
        AssetSpec(
            key,
            deps=[SILVER_FILE_DELETED_KEY],
            description=DESCRIPTIONS[name],
            group_name="gold",
            kinds={"spark", "delta"},
            automation_condition=AFTER_UPSTREAM_CHECKS_AT_MOST_EVERY_MINUTE,
            metadata={TABLE_METADATA_KEY: "/".join(key.path)},
        )
        for name, key in GOLD_KEYS.items()
    ],
    can_subset=False,
)
def gold_file_trash(
    context: AssetExecutionContext,
    config: GoldConfig,
    spark: SparkResource,
    lakehouse: LakehouseResource,
):
    """Brings the gold tables up to date with silver/file_deleted: the daily tables in the
    days whose silver rows changed, expiring_files when silver or the day changed. With
    nothing new (found from the Delta logs), reports so without starting Spark."""
    paths = GoldPaths(
        file_deleted=lakehouse.table_path(tables.SILVER_FILE_DELETED),
        daily_by_user=lakehouse.table_path(tables.GOLD_DAILY_BY_USER),
        daily_by_mime_type=lakehouse.table_path(tables.GOLD_DAILY_BY_MIME_TYPE),
        expiring_files=lakehouse.table_path(tables.GOLD_EXPIRING_FILES),
    )
    now = dt.datetime.now(dt.timezone.utc)
    within = dt.timedelta(days=config.expiring_within_days)
    unchanged = gold_unchanged(paths, now=now, expiring_within=within)
    if unchanged is not None:
        for name, (table, finding) in unchanged.items():
            context.log.info(f"{GOLD_KEYS[name].to_user_string()}: nothing new: {finding.reason}")
            yield _materialization(name, table, finding_metadata(finding))
        return
    results = run_gold(spark.get_session(), paths, now=now, expiring_within=within)
    for name, table in results.items():
        context.log.info(
            f"{GOLD_KEYS[name].to_user_string()}: {table.rows} rows, Delta v{table.version}, "
            + refresh_summary(table.mode, table.written, table.buckets, "days")
        )
        nothing_new = {"nothing_new": MetadataValue.bool(table.mode == "unchanged")}
        yield _materialization(name, table, nothing_new)


def _materialization(
    name: str, table: GoldTable, extra: dict[str, MetadataValue]
) -> MaterializeResult:
    """Gold table `name`'s `MaterializeResult`, with `extra` metadata."""
    return MaterializeResult(
        asset_key=GOLD_KEYS[name],
        metadata={
            "dagster/row_count": MetadataValue.int(table.rows),
            "delta_version": MetadataValue.int(table.version or 0),
            "rewritten": MetadataValue.bool(table.written),
            "refresh": MetadataValue.text(table.mode),
            **(
                {"days_recomputed": MetadataValue.int(table.buckets)}
                if table.mode == "incremental"
                else {}
            ),
            "table_path": MetadataValue.path(table.path),
            **extra,
        },
    )
