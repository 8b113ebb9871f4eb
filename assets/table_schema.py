"""The `dagster/column_schema` metadata of a silver table or the quarantine: its columns,
types and descriptions (the contract's field descriptions, which are also the Delta column
comments of `pipelines/silver/schema.py`)."""

from __future__ import annotations

import dataclasses

from dagster import TableColumn, TableSchema
from pyspark.sql.types import StructType

from pipelines.contract import EventType
from pipelines.silver.schema import RUN_FIELDS, SOURCE_FIELDS, silver_schema


def table_schema(schema: StructType):
    """A `dagster.TableSchema` of a Spark schema, with its column comments as descriptions.

    Use it as the `dagster/column_schema` metadata of the table's asset.
    """
    return TableSchema(
        columns=[
            TableColumn(f.name, f.dataType.simpleString(), description=f.metadata.get("comment"))
            for f in schema.fields
        ]
    )


def declared_schema(event: EventType):
    """The table's `dagster.TableSchema` without a Spark session: a derived column declared
    without a type shows as `derived` (materialisations report the resolved type)."""
    if all(d.type is not None for d in event.derived):
        return table_schema(silver_schema(event))
    typed = table_schema(silver_schema(dataclasses.replace(event, derived=())))
    columns = list(typed.columns)
    at = len(columns) - len(SOURCE_FIELDS) - len(RUN_FIELDS)  # before stream, seq, ..., run
    derived = [
        TableColumn(d.name, d.type.spark_sql if d.type else "derived", description=d.description)
        for d in event.derived
    ]
    return TableSchema(columns=[*columns[:at], *derived, *columns[at:]])
