"""The gold stage: aggregates of `silver/file_deleted`, recomputed and overwritten.

- `gold/daily_trash_by_user`: files and bytes trashed per UTC day and user;
- `gold/daily_trash_by_mime_type`: the same per mime type;
- `gold/expiring_files`: files whose trash retention ends within `expiring_within` of the
  start of the current UTC day.

Gold is small and derived, so each run recomputes it from silver (the transforms are the
pure functions of `gold.py`). Each overwrite records in its Delta commit the silver version
and the day it was computed for; when both are unchanged the run writes nothing, so running
gold again over the same data changes nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from pipelines.delta_tables import last_commit_metadata, overwrite_tagged, table_version
from pipelines.file_trash import gold
from pipelines.file_trash.events import FILE_DELETED_EVENT
from pipelines.file_trash.topology import file_trash_contract
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
    written: bool  # False: its inputs had not changed, so nothing was written


def _tables(
    paths: GoldPaths, now: dt.datetime, within: dt.timedelta
) -> dict[str, tuple[str, Callable[[DataFrame], DataFrame]]]:
    return {
        "daily_by_user": (paths.daily_by_user, gold.daily_trash_by_user),
        "daily_by_mime_type": (paths.daily_by_mime_type, gold.daily_trash_by_mime_type),
        "expiring_files": (
            paths.expiring_files,
            lambda frame: gold.expiring_files(frame, now=now, within=within),
        ),
    }


def run_gold(
    spark: SparkSession,
    paths: GoldPaths,
    *,
    now: dt.datetime,
    expiring_within: dt.timedelta = DEFAULT_EXPIRING_WITHIN,
) -> dict[str, GoldTable]:
    """Recomputes each gold table whose inputs changed since it was last written.

    Args:
        spark: the session.
        paths: silver/file_deleted and the gold tables.
        now: the clock; `expiring_files` is computed as of the start of its UTC day (so the
            table is a function of silver and the day, recomputed once per new day).
        expiring_within: the horizon of `expiring_files`.

    Returns:
        Each table's state, by short name ("daily_by_user", ...).
    """
    silver_version = table_version(spark, paths.file_deleted)
    if silver_version is None:
        event = file_trash_contract().event_type(FILE_DELETED_EVENT)
        source = spark.createDataFrame([], silver_schema(event))
    else:
        source = (
            spark.read.format("delta")
            .option("versionAsOf", silver_version)
            .load(paths.file_deleted)
        )
    day = now.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    inputs = {
        "silver_version": silver_version,
        "as_of_day": day.date().isoformat(),
        "expiring_within_seconds": int(expiring_within.total_seconds()),
    }
    results = {}
    for name, (path, transform) in _tables(paths, day, expiring_within).items():
        written = last_commit_metadata(spark, path) != inputs
        if written:
            overwrite_tagged(transform(source), path, inputs)
        rows = spark.read.format("delta").load(path).count()
        results[name] = GoldTable(path, table_version(spark, path), rows, written)
    return results
