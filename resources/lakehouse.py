"""`LakehouseResource`: where the Delta tables live."""

from __future__ import annotations

from collections.abc import Iterable

from dagster import AssetsDefinition, AssetSpec, ConfigurableResource
from pydantic import Field

# The metadata key of every asset that is a Delta table of the lakehouse: its table name
# (relative to the root). Delta maintenance finds the tables to compact through it.
TABLE_METADATA_KEY = "lakehouse/table"


def declared_tables(assets: Iterable[AssetsDefinition | AssetSpec]) -> list[str]:
    """The lakehouse tables `assets` declare (`TABLE_METADATA_KEY`), sorted, each once."""
    specs = [spec for a in assets for spec in ([a] if isinstance(a, AssetSpec) else a.specs)]
    found = {
        str(spec.metadata[TABLE_METADATA_KEY])
        for spec in specs
        if TABLE_METADATA_KEY in spec.metadata
    }
    return sorted(found)


class LakehouseResource(ConfigurableResource):
    """The root under which every Delta table of the pipeline is stored.

    A table called "bronze/file_events" lives at `<root>/bronze/file_events`. The root may be
    a local path or any URI Spark can write Delta to (`s3a://...`, `abfss://...`).

    Examples:
        >>> lakehouse = LakehouseResource(root="/data/lakehouse")
        >>> lakehouse.table_path("bronze/file_events")
        '/data/lakehouse/bronze/file_events'
    """

    root: str = Field(description="Directory or URI under which the Delta tables are stored.")

    def table_path(self, table: str) -> str:
        """The location of `table` (a relative name such as 'bronze/file_events')."""
        if not table or table.startswith("/") or ".." in table.split("/"):
            raise ValueError(
                f"invalid table name {table!r}: use a relative name like 'bronze/file_events'"
            )
        return f"{self.root.rstrip('/')}/{table}"
