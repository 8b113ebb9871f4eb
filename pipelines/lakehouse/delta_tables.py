"""Delta Lake writes the silver stage uses (idempotent insert-only merges), table
maintenance (OPTIMIZE, VACUUM), and what a table's log says (exists, version, history).

Everything here is Spark SQL on `delta.`<path>`` (`DESCRIBE HISTORY`, `MERGE INTO`,
`OPTIMIZE`, `VACUUM`) and DataFrame reads and writes (and, for a local table's version,
properties, schema and row count, its log), never the `DeltaTable` Python API, so it works
the same in a classic session and over Spark Connect (`SPARK_REMOTE`): no Delta Connect
server plugin resolves from Maven Central for Spark 4.2 / Delta 4.4, and a plain Spark
Connect server with Delta's SQL extension runs all of these.

Silver tables are keyed on the bronze row they came from, (stream, seq), and written with an
insert-only MERGE, so processing a bronze range twice leaves the same rows, and with the
change data feed on, so gold can read only what changed (`pipelines.lakehouse.refresh`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from pipelines.lakehouse.delta_log import (
    TableLogError,
    read_table_files,
    read_table_state,
    read_table_version,
)

SOURCE_KEY = ("stream", "seq")
_Answer = TypeVar("_Answer")

# What Spark and Delta answer for a path that holds no Delta table (no directory, or one
# without a `_delta_log`).
NOT_A_TABLE = frozenset(
    {"DELTA_MISSING_DELTA_TABLE", "DELTA_TABLE_ONLY_OPERATION", "PATH_NOT_FOUND"}
)


def delta_path(path: str) -> str:
    """The SQL name of the Delta table at `path`: delta.`<path>` (backticks doubled)."""
    return "delta.`" + path.replace("`", "``") + "`"


def last_commits(spark: SparkSession, path: str, limit: int) -> list[Row]:
    """The table's last `limit` `DESCRIBE HISTORY` rows, newest first (version, timestamp,
    operation, operationMetrics, userMetadata, ...); none if there is no Delta table at
    `path`."""
    try:
        return spark.sql(f"DESCRIBE HISTORY {delta_path(path)} LIMIT {int(limit)}").collect()
    except AnalysisException as error:
        if error.getCondition() in NOT_A_TABLE:
            return []
        raise


def last_commit(spark: SparkSession, path: str) -> Row | None:
    """The table's last `DESCRIBE HISTORY` row, or None if there is no Delta table at
    `path`."""
    rows = last_commits(spark, path, 1)
    return rows[0] if rows else None


def table_exists(spark: SparkSession, path: str) -> bool:
    """Whether a Delta table exists at `path`."""
    return last_commit(spark, path) is not None


def table_version(spark: SparkSession, path: str) -> int | None:
    """The table's current version, or None if there is no table yet.

    A table at an absolute local path (or a `file:` URI) is read from its log's listing
    (`delta_log.read_table_version`), with no Spark request: over Spark Connect that is a
    round trip less, and a silver step asks a dozen times. Otherwise, and when the listing
    finds no table there (this process may not see the directory Spark writes), Spark says
    (`DESCRIBE HISTORY`).
    """
    version = _from_log(read_table_version, path)
    if version is not None:
        return version
    last = last_commit(spark, path)
    return None if last is None else last["version"]


def table_rows(spark: SparkSession, path: str) -> int | None:
    """The rows of the table's current version, or None if there is no table yet.

    A table at an absolute local path (or a `file:` URI) is counted from its log
    (`delta_log.read_table_files`: each live file's `numRecords` statistic, less the rows
    its deletion vector removes), with no Spark job. Otherwise, when the log finds no table
    there (then Spark says whether there is one), and when a file has no statistic, Spark
    counts.
    """
    files = _from_log(read_table_files, path)
    if files is not None and files.rows is not None:
        return files.rows
    if files is None and not table_exists(spark, path):
        return None
    return spark.read.format("delta").load(path).count()


def _from_log(read: Callable[[str], _Answer | None], path: str) -> _Answer | None:
    """What `read` (a `delta_log` reader) finds in the log of the table at `path`: None when
    the path is not absolute local or a `file:` URI, holds no table, or its log cannot be
    read here (Spark decides then)."""
    if not _local(path):
        return None
    try:
        return read(path)
    except TableLogError:
        return None


def _local(path: str) -> bool:
    return os.path.isabs(path) or path.startswith("file:")


@dataclass(frozen=True)
class LiveTable:
    """A Delta table as it is now: one version's number, properties and schema.

    Attributes:
        version: the table's current version.
        properties: the properties set on it (`metaData.configuration`: `jsl.contract.*`,
            `delta.enableChangeDataFeed`, ...), without the protocol's entries that
            `SHOW TBLPROPERTIES` adds (`delta.minReaderVersion`, `delta.feature.*`).
        schema: its schema as a read of the table gives it: Delta's own field metadata
            (column mapping ids and physical names, type-widening history) left out, column
            comments kept.
    """

    version: int
    properties: dict[str, str]
    schema: StructType


# What `SHOW TBLPROPERTIES` lists besides the table's configuration: the protocol.
_PROTOCOL_PROPERTIES = ("delta.minReaderVersion", "delta.minWriterVersion", "delta.feature.")


def live_table(spark: SparkSession, path: str) -> LiveTable | None:
    """The table's version, properties and schema now, or None if there is no table yet.

    A table at an absolute local path (or a `file:` URI) is read from its log
    (`delta_log.read_table_state`: the three of one version, with no Spark request; over
    Spark Connect three round trips less per table). Otherwise, and when the log finds no
    table there or cannot be read here, Spark says: `DESCRIBE HISTORY`, `SHOW
    TBLPROPERTIES` and the schema of a read, which a commit between them could make of two
    versions.
    """
    state = _from_log(read_table_state, path)
    if state is not None:
        schema = _without_delta_metadata(state.struct_type())
        return LiveTable(state.version, dict(state.properties), schema)
    last = last_commit(spark, path)
    if last is None:
        return None
    rows = spark.sql(f"SHOW TBLPROPERTIES {delta_path(path)}").collect()
    properties = {
        row["key"]: row["value"] for row in rows if not row["key"].startswith(_PROTOCOL_PROPERTIES)
    }
    schema = spark.read.format("delta").load(path).schema
    return LiveTable(last["version"], properties, schema)


def _without_delta_metadata(data_type: DataType) -> DataType:
    """`data_type` with the `delta.*` keys of every field's metadata dropped, as Delta drops
    them from the schema a read gives (nested fields included)."""
    if isinstance(data_type, StructType):
        return StructType(
            [
                StructField(
                    f.name,
                    _without_delta_metadata(f.dataType),
                    f.nullable,
                    {k: v for k, v in f.metadata.items() if not k.startswith("delta.")},
                )
                for f in data_type.fields
            ]
        )
    if isinstance(data_type, ArrayType):
        return ArrayType(_without_delta_metadata(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, MapType):
        return MapType(
            _without_delta_metadata(data_type.keyType),
            _without_delta_metadata(data_type.valueType),
            data_type.valueContainsNull,
        )
    return data_type


# The table property that has Delta record each commit's row changes, so that what reads a
# table can take only what changed since a version (`readChangeFeed`): gold does
# (`pipelines.lakehouse.refresh`). Appends and insert-only merges cost nothing more with it.
CHANGE_DATA_FEED = {"delta.enableChangeDataFeed": "true"}


def ensure_table(
    spark: SparkSession,
    path: str,
    schema: StructType,
    *,
    partition_by: Sequence[str] = (),
    properties: Mapping[str, str] | None = None,
) -> int:
    """Creates an empty Delta table of `schema` at `path`, with the table `properties`,
    unless one exists; returns the table's version."""
    version = table_version(spark, path)
    if version is not None:
        return version
    writer = spark.createDataFrame([], schema).write.format("delta")
    for key, value in (properties or {}).items():
        writer = writer.option(key, value)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.mode("ignore").save(path)
    version = table_version(spark, path)
    assert version is not None
    return version


@dataclass(frozen=True)
class MergeOutcome:
    """What an insert-only merge did."""

    inserted: int
    version: int | None  # the table's version afterwards (None: nothing was written)


def merge_new_rows(
    spark: SparkSession,
    rows: DataFrame,
    path: str,
    schema: StructType,
    *,
    keys: Sequence[str] = SOURCE_KEY,
    seqs: tuple[int, int] | None = None,
    count: int | None = None,
    version: int | None = None,
) -> MergeOutcome:
    """Inserts the rows whose `keys` the table lacks; rows already there stay as they are.

    The table is created (empty, from `schema`, with the change data feed on) if it is
    missing, so it exists after the first run even when that run had no rows for it;
    otherwise an empty `rows` writes nothing.

    Over Spark Connect each question put to Spark is a round trip (about a second on a busy
    server): a caller that already knows the answers passes `count` and `version`.

    Args:
        spark: the session.
        rows: rows with the table's columns.
        path: the Delta table.
        schema: the table's schema (used to create it).
        keys: the columns identifying a row.
        seqs: (first, last) when every row's `seq` is in that range (one batch of bronze):
            the merge condition then bounds the table's `seq` to it too. The same rows
            match, and Delta skips, by its per-file `seq` statistics, the files no row of the
            batch can be in, instead of reading every file's keys.
        count: the number of `rows` if known: 0 writes nothing, more merges without
            checking that `rows` has any; None: checked. `rows` must give the same rows
            whenever computed: Spark computes a cached frame again once a write to a table
            it reads drops its cache, and a count of 0 skips the rows for good.
        version: the table's version if the caller made sure it exists (`ensure_table`,
            with `CHANGE_DATA_FEED`); None: created if missing.

    Returns:
        The number of rows inserted and the table's version: after the merge, or, when
        nothing was merged, as the caller or `ensure_table` read it before.
    """
    if version is None:
        version = ensure_table(spark, path, schema, properties=CHANGE_DATA_FEED)
    if count == 0 or (count is None and rows.isEmpty()):
        return MergeOutcome(0, version)
    condition = " AND ".join(f"t.`{key}` = s.`{key}`" for key in keys)
    if seqs is not None:
        first, last = (int(seq) for seq in seqs)
        condition += f" AND t.`seq` BETWEEN {first} AND {last}"
    inserted = merge_insert_only(spark, rows.select(*schema.fieldNames()), path, condition)
    return MergeOutcome(inserted, table_version(spark, path))


def merge_insert_only(spark: SparkSession, rows: DataFrame, path: str, condition: str) -> int:
    """`MERGE INTO` the table at `path` (alias `t`) the `rows` (alias `s`) that match no row
    under `condition`; returns the number of rows inserted."""
    metrics = merge_into(spark, rows, path, f"ON {condition} WHEN NOT MATCHED THEN INSERT *")
    return int(metrics["num_inserted_rows"]) if metrics else 0


def merge_into(spark: SparkSession, source: DataFrame, path: str, clauses: str) -> Row | None:
    """`MERGE INTO` the table at `path` (alias `t`) from `source` (alias `s`) with `clauses`
    (`ON ... WHEN ...`); returns Delta's metrics row (num_affected_rows, num_inserted_rows,
    ...), if any.

    The source is the statement's argument (`spark.sql(..., source=source)`): over Spark
    Connect it travels with the statement, one request; a classic session names it with a
    temporary view of a unique name for the statement and drops it afterwards.
    """
    target = _braces_escaped(delta_path(path))
    rows = spark.sql(
        f"MERGE INTO {target} AS t USING {{source}} AS s {_braces_escaped(clauses)}",
        source=source,
    ).collect()
    return rows[0] if rows else None


def _braces_escaped(text: str) -> str:
    """`text` as literal text of a `spark.sql` statement with arguments, which is a Python
    format string: `{` and `}` doubled."""
    return text.replace("{", "{{").replace("}", "}}")


def optimize(spark: SparkSession, path: str) -> dict[str, Any]:
    """Compacts the table's small files (Delta OPTIMIZE); returns Delta's metrics."""
    metrics = spark.sql(f"OPTIMIZE {delta_path(path)}").collect()
    return metrics[0]["metrics"].asDict(recursive=True) if metrics else {}


def vacuum(spark: SparkSession, path: str, *, retention_hours: float) -> int:
    """Deletes files no version within `retention_hours` needs (Delta VACUUM).

    Delta refuses a retention under 7 days (168 hours) unless its safety check is turned off
    in the session; this function never turns it off. Returns the table's version.
    """
    spark.sql(f"VACUUM {delta_path(path)} RETAIN {float(retention_hours)!r} HOURS").collect()
    version = table_version(spark, path)
    assert version is not None
    return version
