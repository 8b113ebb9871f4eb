"""`LakehouseResource`: where the Delta tables live, and where the local state lives.

The local state (the embedded NATS store, the demo's Dagster home, Spark's warehouse and
metastore and, by default, the tables) is kept in one data directory: `LAKEHOUSE_DATA_DIR`,
else `.data` in the root of the dg project being run, found from the working directory as
`dg` finds it (`dg_project_root`), else `.data` in the working directory. Never under the
installed package: deleting a virtualenv must not delete a lakehouse.

The rules are `resources/data_dir.py`'s (no Dagster there, so that `pipelines.settings` and the
layers that read it stay without Dagster).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dagster import AssetsDefinition, AssetSpec, ConfigurableResource, InitResourceContext
from pydantic import Field

from resources.data_dir import default_data_dir, locations_line

# The metadata key of every asset that is a Delta table of the lakehouse: its table name
# (relative to the root). Delta maintenance finds the tables to compact through it.
TABLE_METADATA_KEY = "lakehouse/table"
# The metadata key of a table asset whose writers hold a lease in NATS KV while they write
# (one Spark driver commits to the table at a time, which Delta's default LogStore on S3
# needs): {"bucket", "stream", "consumer"} for a bronze table (its ingest's lease), {"bucket",
# "stage"} for a silver or quarantine table (the stage's writer lease). Delta maintenance
# takes the same lease.
WRITER_LEASE_METADATA_KEY = "lakehouse/writer_lease"
# The prefix of the temporary Dagster home that `dagster dev` and `dg launch` make in the
# working directory when DAGSTER_HOME is unset (removed when the command exits).
TEMPORARY_DAGSTER_HOME = ".tmp_dagster_home_"


def instance_home(instance: Any) -> str | None:
    """The folder of a Dagster instance that keeps its runs; None for an ephemeral instance
    (tests, `materialize`) and the temporary one `dg launch` and `dagster dev` use without
    DAGSTER_HOME, which is removed when the command exits."""
    if instance is None or instance.is_ephemeral:
        return None
    root = instance.root_directory
    if Path(root).name.startswith(TEMPORARY_DAGSTER_HOME):
        return None
    return root


_announced: set[str] = set()  # the runs whose locations this process logged


def declared_tables(assets: Iterable[AssetsDefinition | AssetSpec]) -> list[str]:
    """The lakehouse tables `assets` declare (`TABLE_METADATA_KEY`), sorted, each once."""
    specs = [spec for a in assets for spec in ([a] if isinstance(a, AssetSpec) else a.specs)]
    found = {
        str(spec.metadata[TABLE_METADATA_KEY])
        for spec in specs
        if TABLE_METADATA_KEY in spec.metadata
    }
    return sorted(found)


def declared_writer_leases(
    assets: Iterable[AssetsDefinition | AssetSpec],
) -> dict[str, dict[str, str]]:
    """Each table of `assets` whose writers hold a lease -> that lease
    (`WRITER_LEASE_METADATA_KEY`)."""
    specs = [spec for a in assets for spec in ([a] if isinstance(a, AssetSpec) else a.specs)]
    leases = {}
    for spec in specs:
        lease = spec.metadata.get(WRITER_LEASE_METADATA_KEY)
        if lease is not None and TABLE_METADATA_KEY in spec.metadata:
            value = getattr(lease, "data", lease)  # a JsonMetadataValue once normalised
            leases[str(spec.metadata[TABLE_METADATA_KEY])] = {k: str(v) for k, v in value.items()}
    return leases


class LakehouseResource(ConfigurableResource):
    """The root under which every Delta table of the pipeline is stored.

    A table called "bronze/file_events" lives at `<root>/bronze/file_events`. The root may be
    a local path or any URI Spark can write Delta to (`s3a://...`, `abfss://...`).

    Set up for a run, it logs where the run's state goes, once per run and before the first
    step writes anything: `data: <data_dir> (tables: <root>, Dagster home: <folder>)`, the
    Dagster home being the instance's folder, or `none: runs are not kept`.

    Examples:
        >>> lakehouse = LakehouseResource(root="/data/lakehouse")
        >>> lakehouse.table_path("bronze/file_events")
        '/data/lakehouse/bronze/file_events'
    """

    root: str = Field(description="Directory or URI under which the Delta tables are stored.")
    data_dir: str | None = Field(
        default=None,
        description="The local state's folder, named in each run's first log line (default: "
        "$LAKEHOUSE_DATA_DIR, else .data in the dg project's root, else in the working "
        "directory).",
    )

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """Logs where the run's tables, data directory and Dagster home are (once per run)."""
        run_id = context.run.run_id if context.run is not None else None
        if run_id is not None and run_id in _announced:
            return
        if run_id is not None:
            _announced.add(run_id)
        data_dir = self.data_dir or default_data_dir()
        line = locations_line(data_dir, self.root, instance_home(context.instance))
        if context.log is not None:
            context.log.info(line)

    def table_path(self, table: str) -> str:
        """The location of `table` (a relative name such as 'bronze/file_events')."""
        if not table or table.startswith("/") or ".." in table.split("/"):
            raise ValueError(
                f"invalid table name {table!r}: use a relative name like 'bronze/file_events'"
            )
        return f"{self.root.rstrip('/')}/{table}"
