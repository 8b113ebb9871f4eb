"""Gold tables refreshed from their silver table: only the time buckets that changed.

A gold table that aggregates a silver table by a time bucket (rows per UTC day, per hour,
...) only changes in the buckets of the silver rows that changed. A run reads silver once
(`read_source`: its current version, its Delta table id, its rows at that version) and
refreshes each gold table computed from it with `refresh_table`, which:

1. reads what gold was last computed from, recorded in the `userMetadata` of its last
   data-changing commit: the silver version and the table's definition;
2. if silver and the definition are unchanged, writes nothing;
3. otherwise, when the definition is the same and silver's change data feed covers the
   versions since (`delta.enableChangeDataFeed`, which the silver stage sets on the tables
   it creates), collects the buckets of the changed rows (inserted, deleted or updated,
   before and after), recomputes those buckets from silver's current version, reading only
   the files whose time range can hold them (a range filter on the time column that Delta
   answers from its per-file min/max statistics), and replaces them in gold with one
   `replaceWhere` overwrite;
4. otherwise (the first write, a new definition, no bucketing, a silver table recreated at
   the same path (its Delta table id, recorded too, differs), change data not recorded for
   those versions, because the table predates it or VACUUM removed it, change data across
   a change of silver's schema that Delta cannot read in one schema (a widened type, a
   renamed column: `pipelines.silver.evolution`), or more than `MAX_RANGES` separate time
   ranges to read) it recomputes the whole table and overwrites it.

Either way gold holds what a full recompute from that silver version gives: a bucket's rows
depend only on silver's rows in that bucket, and every bucket with a changed row is
recomputed (rows without a time form the null bucket, recomputed like the others).

The changed buckets are read once per silver version read, starting version and buckets, so
gold tables refreshed together from the same silver read its change data once.

Each write records the silver version and the definition in the commit and carries Delta's
idempotent-write pair `txnAppId`/`txnVersion`, the version of gold the run read plus one
(the version the write would give it): Delta skips a write whose `txnVersion` is not above
the last one recorded for the table, and fails one that commits at the same time as
another. So a run that read gold before another run wrote it never lands over it, and gold
is always a state one run computed from the state it read.
Maintenance commits (OPTIMIZE, VACUUM, table properties) change no rows and are looked past.

`unchanged_from_logs` answers step 2 (and step 3's "no changed bucket" when every silver
commit since changed nothing) from the Delta logs of local tables alone, so that a run with
nothing new for gold decides so before it starts Spark; when it cannot tell, the run goes
through `refresh_table`.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.errors import AnalysisException, UnsupportedOperationException
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, StructType

from pipelines.lakehouse.delta_log import (
    CommitSummary,
    TableLogError,
    read_commits,
    read_table_state,
)
from pipelines.lakehouse.delta_tables import delta_path, last_commits, table_version
from pipelines.lakehouse.nothing_new import CannotTell, table_files

# What Delta answers for a change data read across a change of silver's schema that it
# cannot read in one schema (a widened type, a renamed column: `pipelines.silver.evolution`):
# gold is then computed in full.
_SCHEMA_CHANGED = "DELTA_CHANGE_DATA_FEED_INCOMPATIBLE"
# The writes of this module, in the Delta log (SetTransaction's appId).
TXN_APP_ID = "jetstream-lakehouse.refresh"
# Operations that change no rows: gold's recorded inputs still hold after them.
MAINTENANCE = frozenset(
    {"OPTIMIZE", "VACUUM START", "VACUUM END", "SET TBLPROPERTIES", "UNSET TBLPROPERTIES"}
)
# Commits of gold's history searched for its last data write.
HISTORY_DEPTH = 50
# Above this many separate time ranges to read, a full recompute reads silver once instead.
MAX_RANGES = 200
# Widens each bucket's range of source times: a bucket computed in the session time zone
# starts up to 14 hours away from the same wall time in UTC.
_MARGIN = dt.timedelta(days=1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class TimeBuckets:
    """How a gold table's rows map onto the time of its silver rows.

    Attributes:
        source_column: silver's timestamp or date column (e.g. deleted_at).
        column: gold's bucket column, a date or a timestamp (e.g. day).
        bucket: silver's column -> the bucket it falls in (the gold column's value).
        width: the longest bucket (1 day for days, 31 days for months).
    """

    source_column: str
    column: str
    bucket: Callable[[Column], Column]
    width: dt.timedelta


@dataclass(frozen=True)
class Refreshed:
    """A gold table after `refresh_table`."""

    path: str
    version: int | None  # the table's version afterwards (None: no table)
    written: bool  # False: nothing had changed, or another run wrote first
    mode: str  # "unchanged", "incremental" or "full"
    source_version: int | None
    buckets: int | None = None  # buckets recomputed, when incremental
    reason: str = ""  # why a full recompute, or why nothing was written


@dataclass
class Source:
    """A silver table as one run reads it (`read_source`), shared by the gold tables the run
    refreshes from it: each reads the same version, and the changed buckets found for one are
    reused by the next with the same buckets and starting version.

    Attributes:
        path: the silver Delta table.
        version: the version read; None when there is no table yet.
        table_id: its Delta table id (a table recreated at the same path has another).
        rows: its rows at `version`; an empty frame of the schema given to `read_source`
            when there is no table, or None without a schema either.
    """

    path: str
    version: int | None
    table_id: str | None
    rows: DataFrame | None
    _changes: dict[tuple[int, TimeBuckets], tuple[bool, list] | str] = field(
        default_factory=dict, repr=False
    )


def read_source(spark: SparkSession, path: str, schema: StructType | None = None) -> Source:
    """The silver table at `path` as of its current version, for `refresh_table`; `schema`
    gives gold an empty frame to compute from while silver does not exist yet."""
    version = table_version(spark, path)
    if version is None:
        return Source(
            path, None, None, None if schema is None else spark.createDataFrame([], schema)
        )
    rows = spark.read.format("delta").option("versionAsOf", version).load(path)
    return Source(path, version, _table_id(spark, path), rows)


def refresh_table(
    spark: SparkSession,
    *,
    source: Source,
    path: str,
    compute: Callable[[DataFrame], DataFrame],
    definition: Mapping[str, Any],
    buckets: TimeBuckets | None = None,
) -> Refreshed:
    """Brings the gold table at `path` up to date with the silver table `source`.

    Args:
        spark: the session.
        source: silver as this run read it (`read_source`); without silver rows (no table
            and no schema) gold is not written.
        path: the gold Delta table.
        compute: silver rows -> gold rows; must compute each bucket from that bucket's rows
            alone when `buckets` is given.
        definition: what else the result depends on (JSON values); a change recomputes all.
        buckets: how gold's rows map onto silver's time; None recomputes in full whenever
            silver changed.

    Returns:
        What was done.
    """
    inputs = _json(
        {
            "source_version": source.version,
            "source_id": source.table_id,
            "definition": dict(definition),
        }
    )
    gold_version, recorded = last_data_write(spark, path)
    if recorded is not None and {key: recorded.get(key) for key in inputs} == inputs:
        return Refreshed(path, gold_version, False, "unchanged", source.version)
    if source.rows is None:
        return Refreshed(path, gold_version, False, "unchanged", None, reason="no silver yet")
    plan = None if buckets is None else _plan(spark, source, recorded, inputs, buckets)
    if isinstance(plan, _Incremental):
        if not plan.values:
            # Silver moved without changing a row (e.g. it was compacted): nothing to write.
            return Refreshed(path, gold_version, False, "unchanged", source.version, 0)
        rows = compute(source.rows.where(plan.source_filter))
        replace = plan.replace_where
        mode, reason = "incremental", ""
    else:
        rows, replace = compute(source.rows), None
        mode, reason = "full", plan or _why_full(recorded, inputs, buckets)
    written, after = _write(rows, path, inputs, replace=replace, read_version=gold_version)
    count = len(plan.values) if isinstance(plan, _Incremental) else None
    if not written:
        reason = "another run wrote the table first"
    return Refreshed(path, after, written, mode, source.version, count, reason)


@dataclass(frozen=True)
class LoggedSource:
    """A silver table as its Delta log says (no Spark), for `unchanged_from_logs`.

    Attributes:
        path: the silver Delta table.
        version: its current version; None when there is no table yet.
        table_id: its Delta table id.
    """

    path: str
    version: int | None
    table_id: str | None


def logged_source(path: str) -> LoggedSource:
    """The silver table at `path` as its Delta log says, what `read_source` would read.

    Raises:
        CannotTell: the table is not on a local filesystem, or its log cannot be read.
    """
    try:
        state = read_table_state(path)
    except TableLogError as error:
        raise CannotTell(str(error)) from error
    if state is None:
        return LoggedSource(path, None, None)
    return LoggedSource(path, state.version, state.table_id)


@dataclass(frozen=True)
class Unchanged:
    """A gold table found up to date from the Delta logs alone (`unchanged_from_logs`).

    Attributes:
        refreshed: what `refresh_table` would return: mode "unchanged", nothing written.
        rows: the table's rows, from its files' statistics (None: no table, or not known).
        recorded_source_version: the silver version its last data write recorded.
    """

    refreshed: Refreshed
    rows: int | None
    recorded_source_version: int | None


def unchanged_from_logs(
    source: LoggedSource,
    *,
    path: str,
    definition: Mapping[str, Any],
    buckets: TimeBuckets | None = None,
    computes_without_source: bool = False,
) -> Unchanged | None:
    """Whether `refresh_table` would write nothing, decided from the Delta logs alone (no
    Spark); None when it would write, or when the logs cannot tell.

    It would write nothing when gold's last data write recorded silver's current version,
    table id and `definition`; when there is no silver (and gold is not computed without
    one: `computes_without_source`, as when `read_source` has a schema); or, for a table
    with `buckets`, when every silver commit since the recorded version changed no row and
    no metadata (OPTIMIZE, VACUUM): its change data then holds no bucket to recompute.

    Args:
        source: silver as its log says (`logged_source`).
        path, definition, buckets: as `refresh_table`'s.
        computes_without_source: gold is written from an empty frame while there is no
            silver (`read_source` given a schema).
    """
    inputs = _json(
        {
            "source_version": source.version,
            "source_id": source.table_id,
            "definition": dict(definition),
        }
    )
    try:
        gold = table_files(path)
        commits = _logged_commits(path, HISTORY_DEPTH)
    except CannotTell:
        return None
    if gold is not None and (not commits or commits[0].version != gold.version):
        return None  # gold moved between the two reads
    version = None if gold is None else gold.version
    rows = None if gold is None else gold.rows
    recorded = next(
        (_json_object(c.user_metadata) for c in commits if c.operation not in MAINTENANCE), None
    )
    since = None if recorded is None else recorded.get("source_version")
    unchanged = Unchanged(Refreshed(path, version, False, "unchanged", source.version), rows, since)
    if recorded is not None and {key: recorded.get(key) for key in inputs} == inputs:
        return unchanged
    if source.version is None and not computes_without_source:
        return unchanged  # no silver yet
    if buckets is not None and _rows_unchanged_since(source, recorded, inputs):
        return Unchanged(
            Refreshed(path, version, False, "unchanged", source.version, 0), rows, since
        )
    return None


def _rows_unchanged_since(
    source: LoggedSource, recorded: dict[str, Any] | None, inputs: dict[str, Any]
) -> bool:
    """Whether silver changed no row and no metadata since the version gold recorded, for
    the same definition and silver table: what `_plan` would find as no changed bucket."""
    if recorded is None or source.version is None:
        return False
    since = recorded.get("source_version")
    if (
        recorded.get("definition") != inputs["definition"]
        or recorded.get("source_id") != source.table_id
        or not isinstance(since, int)
        or not 0 <= source.version - since <= HISTORY_DEPTH
    ):
        return False
    try:
        commits = _logged_commits(source.path, source.version - since)
    except CannotTell:
        return False
    versions = [c.version for c in commits]
    return versions == list(range(source.version, since, -1)) and not any(
        c.changes for c in commits
    )


def _logged_commits(path: str, newest: int) -> list[CommitSummary]:
    """The table's last `newest` commits from its log, newest first (`read_commits`).

    Raises:
        CannotTell: the table is not on a local filesystem, or its log cannot be read.
    """
    try:
        return read_commits(path, newest) if newest > 0 else []
    except TableLogError as error:
        raise CannotTell(str(error)) from error


def _json_object(text: str | None) -> dict[str, Any] | None:
    """`text` (a commit's `userMetadata`) as a JSON object, or None."""
    try:
        recorded = json.loads(text or "null")
    except ValueError:
        return None
    return recorded if isinstance(recorded, dict) else None


def refresh_summary(mode: str, written: bool, buckets: int | None, unit: str) -> str:
    """What a refresh did, for a run's log: "full recompute", "3 days recomputed", ..."""
    if mode == "incremental" and written:
        return f"{buckets} {unit} recomputed"
    if mode == "full" and written:
        return "full recompute"
    if mode == "unchanged":
        return "inputs unchanged: not rewritten"
    return "another run wrote it first: not rewritten"


def last_data_write(spark: SparkSession, path: str) -> tuple[int | None, dict[str, Any] | None]:
    """The table's current version and the JSON `userMetadata` of its last commit that
    changed rows (maintenance commits looked past); (None, None) without a table, and None
    for the metadata when that commit recorded none."""
    history = _history(spark, path, lambda commits: commits[-1]["operation"] not in MAINTENANCE)
    if not history:
        return None, None
    data_writes = [c for c in history if c["operation"] not in MAINTENANCE]
    return history[0]["version"], _metadata(data_writes[0]) if data_writes else None


def _history(spark: SparkSession, path: str, enough: Callable[[list[Row]], bool]) -> list[Row]:
    """Gold's last commits, newest first: the last one alone when `enough` says so (the
    usual case, one small read), else the last `HISTORY_DEPTH`."""
    last = last_commits(spark, path, 1)
    return last if not last or enough(last) else last_commits(spark, path, HISTORY_DEPTH)


def _metadata(commit: Row) -> dict[str, Any] | None:
    """A commit's `userMetadata` as a JSON object, or None."""
    return _json_object(commit["userMetadata"])


@dataclass(frozen=True)
class _Incremental:
    values: tuple[int | None, ...]  # the changed buckets, as epoch days or microseconds
    source_filter: Column
    replace_where: str


def _plan(
    spark: SparkSession,
    source: Source,
    recorded: dict[str, Any] | None,
    inputs: dict[str, Any],
    buckets: TimeBuckets,
) -> _Incremental | str:
    """The buckets to recompute, or why the whole table must be."""
    since = None if recorded is None else recorded.get("source_version")
    if recorded is None or recorded.get("definition") != inputs["definition"]:
        return _why_full(recorded, inputs, buckets)
    if not isinstance(since, int) or source.version is None:
        return "no silver version recorded to start from"
    if recorded.get("source_id") != source.table_id:
        return "silver is not the table gold was computed from (its Delta table id changed)"
    changed = _changed_buckets(spark, source, since, buckets)
    if isinstance(changed, str):
        return changed
    is_date, found = changed
    values = tuple(sorted(v for v in found if v is not None))
    ranges = _ranges(values, is_date, buckets.width)
    if len(ranges) > MAX_RANGES:
        return f"{len(values)} changed buckets in {len(ranges)} separate time ranges"
    source_column = F.col(buckets.source_column)
    bucket = buckets.bucket(source_column)
    is_date_source = isinstance(source.rows.schema[buckets.source_column].dataType, DateType)
    as_number = F.unix_date if is_date else F.unix_micros
    near, exact = F.lit(False), as_number(bucket).isin(list(values))
    for start, end in ranges:
        low, high = (start.date(), end.date()) if is_date_source else (start, end)
        near = near | ((source_column >= F.lit(low)) & (source_column < F.lit(high)))
    listed = ", ".join(str(v) for v in values) or "NULL"
    replace = f"{'unix_date' if is_date else 'unix_micros'}(`{buckets.column}`) IN ({listed})"
    if None in found:  # rows without a time: their group (a null bucket) changed too
        near, exact = near | source_column.isNull(), exact | bucket.isNull()
        replace = f"({replace}) OR `{buckets.column}` IS NULL"
    return _Incremental((*values, *([None] if None in found else [])), near & exact, replace)


def _changed_buckets(
    spark: SparkSession, source: Source, since: int, buckets: TimeBuckets
) -> tuple[bool, list[int | None]] | str:
    """Whether the buckets are dates, and the buckets (epoch days or microseconds, None for
    rows without a time) of silver's rows inserted, deleted or updated after version `since`
    up to `source.version`; or why they cannot be known. Read once per `source`, starting
    version and buckets."""
    key = (since, buckets)
    if key not in source._changes:
        bucket = buckets.bucket(F.col(buckets.source_column))
        is_date = isinstance(source.rows.select(bucket.alias("b")).schema["b"].dataType, DateType)
        as_number = F.unix_date if is_date else F.unix_micros
        try:
            changes = (
                spark.read.format("delta")
                .option("readChangeFeed", "true")
                .option("startingVersion", since + 1)
                .option("endingVersion", source.version)
                .load(source.path)
            )
            found = [row[0] for row in changes.select(as_number(bucket)).distinct().collect()]
            source._changes[key] = (is_date, found)
        except (AnalysisException, UnsupportedOperationException) as error:
            condition = error.getCondition()
            if isinstance(error, UnsupportedOperationException) and not str(condition).startswith(
                _SCHEMA_CHANGED
            ):
                raise
            why = f"silver's change data since version {since + 1} is not available ({condition})"
            source._changes[key] = why
    return source._changes[key]


def _table_id(spark: SparkSession, path: str) -> str:
    """The Delta table's id, which a table recreated at the same path does not keep."""
    return spark.sql(f"DESCRIBE DETAIL {delta_path(path)}").first()["id"]


def _ranges(
    values: tuple[int, ...], is_date: bool, width: dt.timedelta
) -> list[tuple[dt.datetime, dt.datetime]]:
    """Each bucket's span of source times, widened by a day each way and merged when they
    touch."""
    spans = []
    for value in values:
        start = _EPOCH + (dt.timedelta(days=value) if is_date else dt.timedelta(microseconds=value))
        spans.append((start - _MARGIN, start + width + _MARGIN))
    merged: list[tuple[dt.datetime, dt.datetime]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _why_full(
    recorded: dict[str, Any] | None, inputs: dict[str, Any], buckets: TimeBuckets | None
) -> str:
    if recorded is None:
        return "no earlier computation recorded"
    if recorded.get("definition") != inputs["definition"]:
        return "the definition changed"
    if buckets is None:
        return "the table is not bucketed by time"
    return "silver changed"


def _write(
    rows: DataFrame,
    path: str,
    inputs: dict[str, Any],
    *,
    replace: str | None,
    read_version: int | None,
) -> tuple[bool, int | None]:
    """Overwrites the table (or the rows under `replace`), recording `inputs`; returns
    whether it wrote (False when Delta skipped the write because another run wrote the
    table after `read_version`) and the table's version afterwards.

    The write's `txnVersion` is the version it would give the table: a second run that
    read the same version carries the same number and is skipped. Whether it wrote is read
    back from gold's history, where its commit carries a write id beside `inputs` in
    `userMetadata` (commits of other runs in between do not count as this one).
    """
    txn_version = 0 if read_version is None else read_version + 1
    write_id = uuid.uuid4().hex
    writer = (
        rows.write.format("delta")
        .mode("overwrite")
        .option("userMetadata", json.dumps({**inputs, "write": write_id}, sort_keys=True))
        .option("txnAppId", TXN_APP_ID)
        .option("txnVersion", str(txn_version))
    )
    if replace is None:
        writer = writer.option("overwriteSchema", "true")
    else:
        writer = writer.option("replaceWhere", replace)
    writer.save(path)

    def ours(commit: Row) -> bool:
        return (_metadata(commit) or {}).get("write") == write_id

    # Usually the last commit is this write, or (skipped) still the version read.
    history = _history(
        rows.sparkSession, path, lambda last: ours(last[0]) or last[0]["version"] == read_version
    )
    return any(ours(commit) for commit in history), history[0]["version"] if history else None


def _json(value: Any) -> Any:
    """`value` as it reads back from JSON (tuples become lists, keys strings)."""
    return json.loads(json.dumps(value, sort_keys=True))
