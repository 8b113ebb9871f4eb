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
null values are skipped as SQL does. Each run brings the gold table up to the silver
table's current version (`pipelines.lakehouse.refresh`): with a time grain, only the buckets
in which silver rows changed are recomputed and replaced; without one, or after the definition
changed, the whole table. The silver version and the aggregate's definition are recorded in
the Delta commit; when both are unchanged the run writes nothing, and `aggregate_unchanged`
finds that from the Delta logs before a run starts Spark.
Gold that is domain logic stays Python (`pipelines/file_trash/gold.py`).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import asdict, dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.lakehouse.delta_tables import table_rows
from pipelines.lakehouse.nothing_new import CannotTell, NothingNew
from pipelines.lakehouse.refresh import (
    TimeBuckets,
    logged_source,
    read_source,
    refresh_table,
    unchanged_from_logs,
)

GRAINS = ("hour", "day", "week", "month")
_WIDTHS = {
    "hour": dt.timedelta(hours=1),
    "day": dt.timedelta(days=1),
    "week": dt.timedelta(days=7),
    "month": dt.timedelta(days=31),
}
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

    def bucket(self, time: Column) -> Column:
        """The time bucket of `time`: a timestamp truncated to the hour, or the date the
        day, week or month starts (in the session time zone)."""
        bucket = F.date_trunc(self.grain, time)
        return bucket if self.grain == "hour" else bucket.cast("date")

    def time_buckets(self) -> TimeBuckets | None:
        """How the gold rows map onto silver's time, for refreshing only what changed."""
        if self.grain is None or self.time_column is None:
            return None
        return TimeBuckets(self.time_column, self.grain, self.bucket, _WIDTHS[self.grain])

    def frame(self, rows: DataFrame) -> DataFrame:
        """The aggregate of `rows` (the silver table), one row per group."""
        groups: list[Column] = []
        if self.grain is not None:
            groups.append(self.bucket(F.col(self.time_column)).alias(self.grain))
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
    written: bool  # False: nothing had changed, or another run wrote it first
    source_version: int | None
    mode: str = "unchanged"  # or "incremental" (changed time buckets) or "full"
    buckets: int | None = None  # the time buckets recomputed, when incremental


def run_aggregate(
    spark: SparkSession, aggregate: Aggregate, *, source_path: str, path: str
) -> AggregateResult:
    """Brings the gold table up to date with its silver table (`pipelines.lakehouse.refresh`): the
    time buckets with changed silver rows when the aggregate has a time grain and silver's
    change data covers the versions since the last write, otherwise the whole table.

    Args:
        spark: the session.
        aggregate: what to compute.
        source_path: the event type's silver Delta table.
        path: the gold Delta table.

    Returns:
        What the table holds now. Without a silver table yet, nothing is written.
    """
    refreshed = refresh_table(
        spark,
        source=read_source(spark, source_path),
        path=path,
        compute=aggregate.frame,
        definition=aggregate.definition(),
        buckets=aggregate.time_buckets(),
    )
    # From the Delta log: no Spark job for a local table.
    rows = 0 if refreshed.version is None else table_rows(spark, path) or 0
    return AggregateResult(
        path,
        refreshed.version,
        rows,
        refreshed.written,
        refreshed.source_version,
        refreshed.mode,
        refreshed.buckets,
    )


def aggregate_unchanged(
    aggregate: Aggregate, *, source_path: str, path: str
) -> tuple[AggregateResult, NothingNew] | None:
    """What `run_aggregate` would return when it would write nothing, decided from the Delta
    logs alone (`pipelines.lakehouse.refresh.unchanged_from_logs`, no Spark), with what was
    compared; None when it would write, or the logs cannot tell: run `run_aggregate` then.

    Arguments as `run_aggregate`'s.
    """
    try:
        source = logged_source(source_path)
    except CannotTell:
        return None
    unchanged = unchanged_from_logs(
        source,
        path=path,
        definition=aggregate.definition(),
        buckets=aggregate.time_buckets(),
    )
    if unchanged is None or (unchanged.refreshed.version is not None and unchanged.rows is None):
        return None
    refreshed = unchanged.refreshed
    result = AggregateResult(
        path,
        refreshed.version,
        unchanged.rows or 0,
        False,
        refreshed.source_version,
        refreshed.mode,
        refreshed.buckets,
    )
    recorded = unchanged.recorded_source_version
    at = "has no table yet" if source.version is None else f"is at v{source.version}"
    finding = NothingNew(
        aggregate.table,
        (("source_version", source.version), ("recorded_source_version", recorded)),
        f"its silver table {at}, its last write recorded v{recorded}; the same definition",
    )
    return result, finding
