"""How a rejudge writes one table: its two phases as SQL MERGEs on (stream, seq).

A rejudge (`pipelines.silver.rejudge`) writes every table twice at most: phase A puts the
rows routed to it (new ones inserted, changed ones updated), phase B removes the rows routed
elsewhere. `TableWrites` is that pair for one table; `MergeWrites`, the default, does both
with `MERGE INTO delta.`<path>``, so it runs the same in a classic session and over Spark
Connect (no `DeltaTable` Python API).
"""

from __future__ import annotations

from typing import Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, DataType, MapType, StructType, VariantType

from pipelines.lakehouse.delta_tables import merge_into

# Columns that say which run wrote a row: a row that differs only in them is not rewritten.
STAMP_COLUMNS = frozenset({"run_id", "processed_at", "quarantined_at"})


class TableWrites(Protocol):
    """How a rejudge writes one table.

    `upsert` (phase A) leaves every row of `rows` in the table, and removes nothing; `delete`
    (phase B) removes the rows whose (stream, seq) `keys` gives. Both are bounded to `seqs`
    (first, last), the range of the rows judged. A strategy that rewrites a whole table (a
    schema no MERGE can take the rows into) overwrites it in `upsert` with its rows outside
    the rejudged ones, the rows routed to it and the rejudged rows it holds now, and leaves
    removing those to `delete`: the inserts still come before the deletes.
    """

    def upsert(
        self, spark: SparkSession, rows: DataFrame, path: str, seqs: tuple[int, int]
    ) -> None: ...

    def delete(
        self, spark: SparkSession, keys: DataFrame, path: str, seqs: tuple[int, int]
    ) -> None: ...


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _incomparable(data_type: DataType) -> bool:
    """Whether the type is or holds a map or a VARIANT, which Spark cannot compare."""
    if isinstance(data_type, MapType | VariantType):
        return True
    if isinstance(data_type, ArrayType):
        return _incomparable(data_type.elementType)
    if isinstance(data_type, StructType):
        return any(_incomparable(f.dataType) for f in data_type.fields)
    return False


def differs(schema: StructType) -> str:
    """A MERGE condition: the target row `t` and the source row `s` differ in a column of
    `schema` other than `STAMP_COLUMNS` (null-safe; a column holding maps, which Spark
    cannot compare, or VARIANTs, compared as JSON)."""
    same = []
    for f in schema.fields:
        if f.name in STAMP_COLUMNS:
            continue
        t, s = f"t.{_quoted(f.name)}", f"s.{_quoted(f.name)}"
        if _incomparable(f.dataType):
            t, s = f"to_json({t})", f"to_json({s})"
        same.append(f"{t} <=> {s}")
    return f"NOT ({' AND '.join(same)})" if same else "false"


def on_key(seqs: tuple[int, int]) -> str:
    """The MERGE condition on the bronze key, bounded to `seqs` (Delta skips the files no
    row of that range can be in, by their `seq` statistics)."""
    first, last = (int(seq) for seq in seqs)
    return f"t.`stream` = s.`stream` AND t.`seq` = s.`seq` AND t.`seq` BETWEEN {first} AND {last}"


class MergeWrites:
    """The default `TableWrites`: MERGE on (stream, seq), bounded to the rows' seqs.

    `upsert` updates a matched row only when it differs in more than its stamps
    (`differs`), so judging a row again the same way leaves it, and gold's change feed,
    alone.
    """

    def upsert(
        self, spark: SparkSession, rows: DataFrame, path: str, seqs: tuple[int, int]
    ) -> None:
        merge_into(
            spark,
            rows,
            path,
            f"ON {on_key(seqs)} WHEN MATCHED AND {differs(rows.schema)} THEN UPDATE SET * "
            "WHEN NOT MATCHED THEN INSERT *",
        )

    def delete(
        self, spark: SparkSession, keys: DataFrame, path: str, seqs: tuple[int, int]
    ) -> None:
        merge_into(spark, keys, path, f"ON {on_key(seqs)} WHEN MATCHED THEN DELETE")


MERGE_WRITES = MergeWrites()
