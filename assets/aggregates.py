"""Gold assets declared as aggregates of a silver table (`pipelines.lakehouse.aggregates`)."""

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AutomationCondition,
    MaterializeResult,
    MetadataValue,
    asset,
)

from assets.nothing_new import finding_metadata
from pipelines.lakehouse.aggregates import (
    Aggregate,
    AggregateResult,
    aggregate_unchanged,
    run_aggregate,
)
from pipelines.lakehouse.refresh import refresh_summary
from resources.lakehouse import TABLE_METADATA_KEY, LakehouseResource
from resources.spark import SparkResource


def build_aggregate_asset(
    aggregate: Aggregate,
    *,
    source_key: AssetKey,
    source_table: str,
    group_name: str = "gold",
    automation_condition: AutomationCondition | None = None,
) -> AssetsDefinition:
    """The asset of a declared aggregate (key = its table, e.g. `gold/daily_orders`).

    Args:
        aggregate: the declared aggregate.
        source_key: the silver table's asset (its upstream: a failed blocking check there
            stops it).
        source_table: the silver table, relative to the lakehouse root.
        group_name: the asset's group.
        automation_condition: its condition (e.g. `AFTER_UPSTREAM_CHECKS`); None: only runs
            someone launches.

    Returns:
        The asset (resources spark and lakehouse).
    """
    measures = ", ".join(f"{m.name} = {m.function}({m.column or '*'})" for m in aggregate.measures)
    by = ", ".join(aggregate.keys()) or "everything"

    @asset(
        key=AssetKey(aggregate.table.split("/")),
        deps=[source_key],
        group_name=group_name,
        kinds={"spark", "delta"},
        automation_condition=automation_condition,
        description=aggregate.description
        or f"{measures} of {source_table}, by {by} (a declared aggregate).",
        metadata={TABLE_METADATA_KEY: aggregate.table, "group_by": by, "measures": measures},
    )
    def declared_aggregate(
        context: AssetExecutionContext, spark: SparkResource, lakehouse: LakehouseResource
    ) -> MaterializeResult:
        """Brings the aggregate up to date with its silver table (only the changed time
        buckets when it has a grain); with nothing new (found from the Delta logs), reports
        so without starting Spark."""
        source_path = lakehouse.table_path(source_table)
        path = lakehouse.table_path(aggregate.table)
        unchanged = aggregate_unchanged(aggregate, source_path=source_path, path=path)
        if unchanged is not None:
            result, finding = unchanged
            context.log.info(finding.describe())
            return _materialization(result, finding_metadata(finding))
        result = run_aggregate(spark.get_session(), aggregate, source_path=source_path, path=path)
        unit = f"{aggregate.grain or 'bucket'}s"
        context.log.info(
            f"{aggregate.table}: {result.rows} rows, Delta v{result.version}, "
            + refresh_summary(result.mode, result.written, result.buckets, unit)
        )
        nothing_new = {"nothing_new": MetadataValue.bool(result.mode == "unchanged")}
        return _materialization(result, nothing_new)

    return declared_aggregate


def _materialization(result: AggregateResult, extra: dict[str, MetadataValue]) -> MaterializeResult:
    """An aggregate's `MaterializeResult`, with `extra` metadata."""
    return MaterializeResult(
        metadata={
            "dagster/row_count": MetadataValue.int(result.rows),
            "delta_version": MetadataValue.int(result.version or 0),
            "rewritten": MetadataValue.bool(result.written),
            "refresh": MetadataValue.text(result.mode),
            **(
                {"buckets_recomputed": MetadataValue.int(result.buckets)}
                if result.mode == "incremental"
                else {}
            ),
            "source_version": MetadataValue.int(result.source_version or 0),
            "table_path": MetadataValue.path(result.path),
            **extra,
        }
    )
