"""Declared gold aggregates: group a silver table by columns and a time grain, measure it.

    aggregates:
      - table: gold/daily_orders_by_currency
        event_type: OrderPlaced             # its silver table is the source
        group_by: [currency]
        time: {column: occurred_at, grain: day}
        measures: {orders: count, revenue: sum(amount), largest: max(amount)}

gives one row per (day, currency) with the three measures. The time column becomes a column
named after the grain (`day`, a date; `hour`, a timestamp truncated to the hour; `week` and
`month`, the date they start). Measures are `count`, `sum(col)`, `min(col)`, `max(col)`;
null values are skipped as SQL does. Each run recomputes the aggregate from the silver
table's current version and overwrites the gold table, recording that version and the
aggregate's definition in the Delta commit; when both are unchanged the run writes nothing.
Gold that is domain logic stays Python (`pipelines/file_trash/gold.py`).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.delta_tables import last_commit_metadata, overwrite_tagged, table_version

GRAINS = ("hour", "day", "week", "month")
FUNCTIONS = ("count", "sum", "min", "max")
_MEASURE = re.compile(r"^\s*(count|sum|min|max)\s*(?:\(\s*([A-Za-z_][A-Za-z0-9_]*|\*)?\s*\))?\s*$")


@dataclass(frozen=True)
class Measure:
    """One measure: `function` over `column` (None: count of rows)."""

    name: str
    function: str
    column: str | None = None

    def column_expression(self) -> Column:
        if self.function == "count":
            return F.count(F.lit(1) if self.column is None else F.col(self.column))
        return getattr(F, self.function)(F.col(self.column))


def parse_measure(name: str, text: str) -> Measure:
    """`count`, `count(*)`, `count(col)`, `sum(col)`, `min(col)`, `max(col)` -> a Measure.

    Raises:
        ValueError: anything else, naming the measure and what is allowed.
    """
    match = _MEASURE.match(str(text))
    column = match.group(2) if match else None
    if match is None or (match.group(1) != "count" and column in (None, "*")):
        raise ValueError(
            f"measure {name!r}: {text!r} is not one of count, count(column), sum(column), "
            "min(column), max(column)"
        )
    return Measure(name, match.group(1), None if column == "*" else column)


@dataclass(frozen=True)
class Aggregate:
    """A gold table declared as an aggregate of one event type's silver table.

    Attributes:
        table: the gold table (relative to the lakehouse root), e.g. gold/daily_orders.
        event_type: the event type whose silver table it reads.
        measures: what it computes per group.
        group_by: the columns it groups by (besides the time bucket).
        time_column: the timestamp or date column bucketed by `grain`; None for no time.
        grain: hour, day, week or month.
        description: what it means (the asset's description).
    """

    table: str
    event_type: str
    measures: tuple[Measure, ...]
    group_by: tuple[str, ...] = ()
    time_column: str | None = None
    grain: str | None = None
    description: str | None = None

    def __post_init__(self) -> None:
        if not self.measures:
            raise ValueError(f"aggregate {self.table!r}: declare at least one measure")
        if (self.time_column is None) != (self.grain is None):
            raise ValueError(
                f"aggregate {self.table!r}: time needs both a column and a grain "
                f"({', '.join(GRAINS)})"
            )
        if self.grain is not None and self.grain not in GRAINS:
            raise ValueError(
                f"aggregate {self.table!r}: unknown grain {self.grain!r}; use one of "
                f"{', '.join(GRAINS)}"
            )
        names = [*self.keys(), *(m.name for m in self.measures)]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"aggregate {self.table!r}: column {repeated[0]!r} appears twice")

    def keys(self) -> tuple[str, ...]:
        """The gold table's key columns: the time bucket (named after the grain), then
        `group_by`."""
        return (*((self.grain,) if self.grain else ()), *self.group_by)

    def inputs(self) -> tuple[str, ...]:
        """The silver columns it reads."""
        measured = (m.column for m in self.measures if m.column is not None)
        time = (self.time_column,) if self.time_column else ()
        return tuple(dict.fromkeys((*time, *self.group_by, *measured)))

    def check_columns(self, columns: set[str]) -> None:
        """Raises ValueError naming the first column it reads that `columns` lacks."""
        for column in self.inputs():
            if column not in columns:
                raise ValueError(
                    f"aggregate {self.table!r}: {self.event_type} has no column {column!r}; "
                    f"its columns are {', '.join(sorted(columns))}"
                )

    def frame(self, rows: DataFrame) -> DataFrame:
        """The aggregate of `rows` (the silver table), one row per group."""
        groups: list[Column] = []
        if self.grain is not None:
            bucket = F.date_trunc(self.grain, F.col(self.time_column))
            groups.append(
                (bucket if self.grain == "hour" else bucket.cast("date")).alias(self.grain)
            )
        groups += [F.col(column) for column in self.group_by]
        measures = [m.column_expression().alias(m.name) for m in self.measures]
        if not groups:
            return rows.agg(*measures)
        return rows.groupBy(*groups).agg(*measures)

    def definition(self) -> dict:
        """What the table is computed from, as JSON values (recorded in each commit)."""
        return asdict(self) | {"measures": [asdict(m) for m in self.measures]}


@dataclass(frozen=True)
class AggregateResult:
    """One aggregate after a run."""

    path: str
    version: int | None
    rows: int
    written: bool  # False: the source and the definition were unchanged: nothing written
    source_version: int | None


def run_aggregate(
    spark: SparkSession, aggregate: Aggregate, *, source_path: str, path: str
) -> AggregateResult:
    """Recomputes the aggregate if its silver table or its definition changed since its last
    write, and overwrites the gold table.

    Args:
        spark: the session.
        aggregate: what to compute.
        source_path: the event type's silver Delta table.
        path: the gold Delta table.

    Returns:
        What the table holds now. Without a silver table yet, nothing is written.
    """
    version = table_version(spark, source_path)
    if version is None:
        return AggregateResult(path, table_version(spark, path), 0, False, None)
    inputs = json.loads(
        json.dumps({"source_version": version, "definition": aggregate.definition()})
    )
    written = last_commit_metadata(spark, path) != inputs
    if written:
        source = spark.read.format("delta").option("versionAsOf", version).load(source_path)
        overwrite_tagged(aggregate.frame(source), path, inputs)
    rows = spark.read.format("delta").load(path).count()
    return AggregateResult(path, table_version(spark, path), rows, written, version)
