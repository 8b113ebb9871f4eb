"""The gold stage: aggregates of `silver/file_deleted`, kept up to date with it.

- `gold/daily_trash_by_user`: files and bytes trashed per UTC day and user;
- `gold/daily_trash_by_mime_type`: the same per mime type;
- `gold/expiring_files`: files whose trash retention ends within `expiring_within` of the
  start of the current UTC day.

The transforms are the pure functions of `gold.py`; `pipelines.lakehouse.refresh` applies them. The
two daily tables are refreshed by UTC day: a run recomputes only the days in which silver
rows changed since the version it last read (from silver's change data feed) and replaces
those days, so what it reads follows the days the new rows touched, not the table
(docs/performance.md, "Gold refresh", has what it costs). `expiring_files` is recomputed
whenever silver or the day changed (its filter on `expires_at` reads only the files that
can hold the horizon). Each write records in its Delta commit the silver version and what
else the table depends on; when nothing changed the run writes nothing, so running gold
again over the same data changes nothing. `gold_unchanged` finds that from the Delta logs
before a run starts Spark.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from pipelines.file_trash import gold
from pipelines.file_trash.events import FILE_DELETED_EVENT
from pipelines.file_trash.topology import file_trash_contract
from pipelines.lakehouse.delta_tables import table_rows
from pipelines.lakehouse.nothing_new import CannotTell, NothingNew
from pipelines.lakehouse.refresh import (
    LoggedSource,
    TimeBuckets,
    Unchanged,
    logged_source,
    read_source,
    refresh_table,
    unchanged_from_logs,
)
from pipelines.silver.schema import silver_schema

DEFAULT_EXPIRING_WITHIN = dt.timedelta(days=7)


@dataclass(frozen=True)
class GoldPaths:
    """Where the stage reads and writes."""

    file_deleted: str
    daily_by_user: str
    daily_by_mime_type: str
    expiring_files: str


@dataclass(frozen=True)
class GoldTable:
    """One gold table after a run."""

    path: str
    version: int | None
    rows: int
    written: bool  # False: nothing had changed, or another run wrote it first
    mode: str = "unchanged"  # or "incremental" (the changed days) or "full"
    buckets: int | None = None  # the days recomputed, when incremental


# The daily tables change only in the UTC days of the silver rows that changed.
DAYS = TimeBuckets("deleted_at", "day", gold.utc_day, dt.timedelta(days=1))


def _tables(
    paths: GoldPaths, day: dt.datetime, within: dt.timedelta
) -> dict[str, tuple[str, Callable[[DataFrame], DataFrame], dict, TimeBuckets | None]]:
    """Each table: its path, its transform, what else it depends on, its time buckets."""
    expiring = {"as_of_day": day.date().isoformat(), "within_seconds": within.total_seconds()}
    return {
        "daily_by_user": (paths.daily_by_user, gold.daily_trash_by_user, {}, DAYS),
        "daily_by_mime_type": (paths.daily_by_mime_type, gold.daily_trash_by_mime_type, {}, DAYS),
        "expiring_files": (
            paths.expiring_files,
            lambda frame: gold.expiring_files(frame, now=day, within=within),
            expiring,
            None,
        ),
    }


def run_gold(
    spark: SparkSession,
    paths: GoldPaths,
    *,
    now: dt.datetime,
    expiring_within: dt.timedelta = DEFAULT_EXPIRING_WITHIN,
) -> dict[str, GoldTable]:
    """Brings each gold table up to date with silver/file_deleted (`pipelines.lakehouse.refresh`).

    Args:
        spark: the session.
        paths: silver/file_deleted and the gold tables.
        now: the clock; `expiring_files` is computed as of the start of its UTC day (so the
            table is a function of silver and the day, recomputed once per new day).
        expiring_within: the horizon of `expiring_files`.

    Returns:
        Each table's state, by short name ("daily_by_user", ...).
    """
    event = file_trash_contract().event_type(FILE_DELETED_EVENT)
    day = now.astimezone(dt.timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    # One silver version for all three tables; its changed days are read once for both
    # daily tables.
    source = read_source(spark, paths.file_deleted, silver_schema(event))
    results = {}
    for name, (path, transform, depends, buckets) in _tables(paths, day, expiring_within).items():
        refreshed = refresh_table(
            spark,
            source=source,
            path=path,
            compute=transform,
            definition={"table": name, **depends},
            buckets=buckets,
        )
        rows = table_rows(spark, path) or 0  # from the Delta log: no Spark job for a local table
        results[name] = GoldTable(
            path,
            refreshed.version,
            rows,
            refreshed.written,
            refreshed.mode,
            refreshed.buckets,
        )
    return results


def gold_unchanged(
    paths: GoldPaths,
    *,
    now: dt.datetime,
    expiring_within: dt.timedelta = DEFAULT_EXPIRING_WITHIN,
) -> dict[str, tuple[GoldTable, NothingNew]] | None:
    """What `run_gold` would return when it would write nothing, decided from the Delta logs
    alone (`pipelines.lakehouse.refresh.unchanged_from_logs`, no Spark): each table, by short
    name, with what was compared. None when a table would be written (silver changed, or a
    new day for `expiring_files`), or the logs cannot tell: run `run_gold` then.

    Arguments as `run_gold`'s.
    """
    day = now.astimezone(dt.timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    try:
        source = logged_source(paths.file_deleted)
    except CannotTell:
        return None
    found = {}
    for name, (path, _, depends, buckets) in _tables(paths, day, expiring_within).items():
        unchanged = unchanged_from_logs(
            source,
            path=path,
            definition={"table": name, **depends},
            buckets=buckets,
            computes_without_source=True,  # run_gold reads silver with its schema
        )
        if unchanged is None or unchanged.rows is None:
            return None
        refreshed = unchanged.refreshed
        table = GoldTable(
            path, refreshed.version, unchanged.rows, False, refreshed.mode, refreshed.buckets
        )
        found[name] = (table, _finding(name, source, unchanged))
    return found


def _finding(name: str, source: LoggedSource, unchanged: Unchanged) -> NothingNew:
    """What gold table `name` compared to find nothing new."""
    recorded = unchanged.recorded_source_version
    if recorded == source.version:
        how = f"silver/file_deleted is at v{source.version}, as its last write recorded"
    else:
        how = (
            f"silver/file_deleted is at v{source.version}, its last write recorded v{recorded} "
            "and no silver commit since changed a row"
        )
    return NothingNew(
        name,
        (("silver_version", source.version), ("recorded_silver_version", recorded)),
        f"{how}; the same day and definition",
    )
