"""Delta table maintenance: compaction (OPTIMIZE) and VACUUM of every table of the lakehouse.

Bronze grows by one commit per ingest run and silver by one merge per run, so small files
pile up; compaction rewrites them into fewer, larger files (readers get faster, nothing
changes in the data). VACUUM then deletes the files no table version within the retention
still needs. Delta refuses a retention under 7 days unless its safety check is turned off,
because a shorter one can break readers and time travel; this job does not turn it off.

`pipelines/definitions.py` builds the job with every table an asset of the code location
declares (the `lakehouse/table` metadata of bronze, silver, quarantine and gold assets,
declared streams' included) as its default config, so a stream declared in `pipelines/defs/`
is maintained with no edit here, and the launchpad shows the list.
"""

from collections.abc import Sequence

from dagster import Config, JobDefinition, MetadataValue, OpExecutionContext, RunConfig, job, op
from pydantic import Field

from pipelines.lakehouse.delta_tables import optimize, table_exists, vacuum
from resources.lakehouse import LakehouseResource
from resources.spark import SparkResource

DEFAULT_RETENTION_HOURS = 7 * 24
MAINTENANCE_JOB = "maintain_delta_tables"


class MaintenanceConfig(Config):
    """Which tables to maintain and how long VACUUM keeps unreferenced files."""

    tables: list[str] = Field(description="Tables (relative to the lakehouse root).")
    retention_hours: float = Field(
        default=DEFAULT_RETENTION_HOURS,
        description="VACUUM keeps files needed by any version newer than this (Delta's "
        "minimum without disabling its safety check is 168 hours).",
    )
    optimize: bool = Field(default=True, description="Compact small files first.")
    vacuum: bool = Field(default=True, description="Then delete unreferenced files.")


@op(tags={"kind": "delta"})
def maintain_tables(
    context: OpExecutionContext,
    config: MaintenanceConfig,
    spark: SparkResource,
    lakehouse: LakehouseResource,
) -> None:
    """Runs OPTIMIZE and VACUUM on each table that exists, reporting Delta's numbers."""
    tables = config.tables
    context.log.info(f"maintaining {len(tables)} tables: {', '.join(tables)}")
    session = spark.get_session()
    report: dict[str, MetadataValue] = {}
    for index, table in enumerate(tables, start=1):
        path = lakehouse.table_path(table)
        if not table_exists(session, path):
            context.log.info(f"[{index}/{len(tables)}] {table}: no table yet, skipped")
            continue
        metadata = {"table_path": MetadataValue.path(path)}
        if config.optimize:
            metrics = optimize(session, path)
            metadata["files_removed"] = MetadataValue.int(int(metrics.get("numFilesRemoved", 0)))
            metadata["files_added"] = MetadataValue.int(int(metrics.get("numFilesAdded", 0)))
        if config.vacuum:
            metadata["delta_version"] = MetadataValue.int(
                vacuum(session, path, retention_hours=config.retention_hours)
            )
        context.log.info(f"[{index}/{len(tables)}] {table}: maintained")
        report.update({f"{table}/{key}": value for key, value in metadata.items()})
    context.add_output_metadata(report)


def build_maintenance_job(tables: Sequence[str]) -> JobDefinition:
    """The `maintain_delta_tables` job, maintaining `tables` unless its run config says others.

    Args:
        tables: the default tables, relative to the lakehouse root (e.g. every table the
            code location's assets declare: `resources.lakehouse.declared_tables`).
    """

    @job(
        name=MAINTENANCE_JOB,
        description="Compact (OPTIMIZE) and VACUUM every Delta table of the lakehouse.",
        config=RunConfig(ops={"maintain_tables": MaintenanceConfig(tables=list(tables))}),
    )
    def maintain_delta_tables() -> None:
        maintain_tables()

    return maintain_delta_tables
