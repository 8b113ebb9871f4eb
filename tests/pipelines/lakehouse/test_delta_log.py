"""`read_table_state`: a Delta table's schema, properties and version from its log, no Spark.

Tables are written by the session's real Spark with Delta; what the log reader finds is
compared with what Spark itself reports (`DataFrame.schema`, `SHOW TBLPROPERTIES`,
`DESCRIBE HISTORY`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from pipelines.lakehouse import delta_tables
from pipelines.lakehouse.delta_log import (
    CorruptTableLog,
    TableLogError,
    UnreadableTableLog,
    read_table_state,
    read_table_version,
)
from pipelines.lakehouse.delta_tables import delta_path, table_version

SCHEMA = StructType(
    [
        StructField("n", IntegerType()),
        StructField("s", StringType(), metadata={"comment": "what the row says"}),
    ]
)
# Entries SHOW TBLPROPERTIES derives from the protocol action, not from metaData.configuration.
PROTOCOL_KEYS = ("delta.feature.", "delta.minReaderVersion", "delta.minWriterVersion")


def create(spark, path: Path, **properties: str) -> str:
    """A one-row Delta table of SCHEMA at `path`, created with `properties`; its path."""
    writer = spark.createDataFrame([(1, "one")], SCHEMA).write.format("delta")
    writer.options(**properties).save(str(path))
    return str(path)


def append(spark, path: str) -> None:
    """One more commit that adds a row and leaves the metadata alone."""
    spark.read.format("delta").load(path).limit(1).write.format("delta").mode("append").save(path)


def sql(spark, statement: str, path: str) -> None:
    spark.sql(statement.format(table=delta_path(path)))


def spark_state(spark, path: str) -> tuple[int, dict, dict[str, str]]:
    """(version, schema JSON, user-set properties) as Spark and Delta report them."""
    name = delta_path(path)
    version = spark.sql(f"DESCRIBE HISTORY {name} LIMIT 1").first().version
    schema = spark.read.format("delta").load(path).schema.jsonValue()
    properties = {
        row.key: row.value
        for row in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()
        if not row.key.startswith(PROTOCOL_KEYS)
    }
    return version, schema, properties


def state_of(path: str) -> tuple[int, dict, dict[str, str]]:
    state = read_table_state(path)
    assert state is not None
    return state.version, state.schema, state.properties


def test_the_state_is_what_spark_reports_read_by_path_or_file_uri(spark, table_root):
    path = create(spark, table_root / "t", **{"delta.enableChangeDataFeed": "true"})

    state = read_table_state(path)

    assert state is not None
    assert (state.version, state.schema, state.properties) == spark_state(spark, path)
    assert state.properties == {"delta.enableChangeDataFeed": "true"}
    assert state.struct_type() == SCHEMA  # the column comment included
    for uri in (Path(path).as_uri(), f"file:{path}"):  # file:///tmp/... and Hadoop's file:/tmp/...
        assert read_table_state(uri) == dataclasses.replace(state, path=uri)
        assert read_table_version(uri) == state.version


def test_an_added_column_and_a_widened_type_are_read_from_the_newest_commit(spark, table_root):
    path = create(spark, table_root / "t")
    sql(spark, "ALTER TABLE {table} ADD COLUMNS (x bigint)", path)

    assert state_of(path) == spark_state(spark, path)
    assert [f["name"] for f in state_of(path)[1]["fields"]] == ["n", "s", "x"]

    sql(spark, "ALTER TABLE {table} SET TBLPROPERTIES ('delta.enableTypeWidening'='true')", path)
    sql(spark, "ALTER TABLE {table} ALTER COLUMN n TYPE BIGINT", path)
    version, schema, properties = state_of(path)

    # The log keeps the widening in the field's metadata; Spark's DataFrame schema drops it.
    n = schema["fields"][0]
    assert (n["type"], n["metadata"]) == (
        "long",
        {"delta.typeChanges": [{"toType": "long", "fromType": "integer"}]},
    )
    n["metadata"] = {}
    assert (version, schema, properties) == spark_state(spark, path)
    assert properties["delta.enableTypeWidening"] == "true"


@pytest.fixture
def session_conf(spark):
    """Sets Spark session confs for one test and unsets them after it."""
    keys = []

    def set_conf(key: str, value: str) -> None:
        keys.append(key)
        spark.conf.set(key, value)

    yield set_conf
    for key in keys:
        spark.conf.unset(key)


CHECKPOINTS = {
    # kind: (table properties, session confs, how the checkpoint files at version 2 are named)
    "classic": ({}, {}, "00000000000000000002.checkpoint.parquet"),
    "multi-part": (
        {},
        {"spark.databricks.delta.checkpoint.partSize": "1"},
        "00000000000000000002.checkpoint.0000000001.000000000?.parquet",
    ),
    "v2": ({"delta.checkpointPolicy": "v2"}, {}, "00000000000000000002.checkpoint.*-*.json"),
}


@pytest.mark.parametrize("kind", CHECKPOINTS)
def test_after_log_cleanup_the_schema_is_read_from_the_checkpoint(
    spark, table_root, session_conf, kind
):
    properties, confs, checkpoint_files = CHECKPOINTS[kind]
    for key, value in confs.items():
        session_conf(key, value)
    path = create(spark, table_root / "t", **{"delta.checkpointInterval": "2", **properties})
    sql(spark, "ALTER TABLE {table} ADD COLUMNS (x bigint)", path)  # version 1
    append(spark, path)  # version 2, checkpointed
    append(spark, path)  # version 3, no metaData action
    expected = spark_state(spark, path)
    log = Path(path) / "_delta_log"
    assert list(log.glob(checkpoint_files))

    for version in range(3):  # what metadata cleanup leaves: the checkpoint and later commits
        (log / f"{version:020d}.json").unlink()

    assert state_of(path) == expected
    assert read_table_version(path) == table_version(spark, path) == expected[0] == 3
    assert [f["name"] for f in expected[1]["fields"]] == ["n", "s", "x"]


def test_no_delta_table_gives_none(table_root):
    plain = table_root / "plain"
    plain.mkdir()
    (plain / "part-0.parquet").write_bytes(b"")
    empty_log = table_root / "empty" / "_delta_log"
    (empty_log / "_staged_commits").mkdir(parents=True)

    for path in (table_root / "missing", plain, plain / "part-0.parquet", empty_log.parent):
        assert read_table_state(str(path)) is None
        assert read_table_version(str(path)) is None


@pytest.mark.parametrize("path", ["abfss://c@acct.dfs.core.windows.net/t", "hdfs://nn/t"])
def test_a_table_on_a_filesystem_not_read_here_raises_naming_the_path(path):
    with pytest.raises(UnreadableTableLog, match="not a filesystem read here"):
        read_table_version(path)
    with pytest.raises(UnreadableTableLog, match="not a filesystem read here") as raised:
        read_table_state(path)

    assert isinstance(raised.value, TableLogError)
    assert repr(path) in str(raised.value)
    assert "when the run starts" in str(raised.value)


def test_a_corrupt_newest_commit_raises_naming_the_file(spark, table_root):
    path = create(spark, table_root / "t")
    newest = Path(path) / "_delta_log" / "00000000000000000001.json"
    newest.write_text(json.dumps({"commitInfo": {"operation": "WRITE"}})[:20])

    with pytest.raises(CorruptTableLog, match=re.escape(str(newest))) as raised:
        read_table_state(path)

    assert raised.value.file == str(newest)
    assert "line 1 of commit 1" in str(raised.value)


class HistorySpark:
    """Answers `DESCRIBE HISTORY` as Spark would for a table at `version` (None: no table)."""

    def __init__(self, version: int | None) -> None:
        self.version = version
        self.asked: list[str] = []

    def sql(self, statement: str):
        self.asked.append(statement)
        rows = [] if self.version is None else [{"version": self.version}]
        return type("Result", (), {"collect": lambda _: rows})()


@pytest.mark.parametrize("path", ["abfss://c@acct.dfs.core.windows.net/t", "relative/orders"])
def test_a_table_whose_log_is_not_read_here_gets_its_version_from_spark(path):
    spark = HistorySpark(7)

    assert table_version(spark, path) == 7
    assert spark.asked == [f"DESCRIBE HISTORY {delta_path(path)} LIMIT 1"]


def test_a_local_table_gets_its_version_from_its_log_and_spark_is_asked_only_if_none(
    spark, table_root
):
    path = create(spark, table_root / "t")
    append(spark, path)
    unused = HistorySpark(99)

    assert (
        table_version(unused, path)
        == 1
        == spark.sql(f"DESCRIBE HISTORY {delta_path(path)} LIMIT 1").first().version
    )
    assert unused.asked == []
    # No table in this process's view: Spark, which may see another filesystem, decides.
    elsewhere = HistorySpark(4)
    assert table_version(elsewhere, str(table_root / "missing")) == 4
    assert len(elsewhere.asked) == 1


NESTED = "address STRUCT<zip: STRING COMMENT 'postal code', lines: ARRAY<STRING>>"


def test_a_live_table_read_from_its_log_is_what_spark_reports(spark, table_root, monkeypatch):
    # Column mapping (a rename), type widening and nested comments: the field metadata Delta
    # keeps in its log and leaves out of a read's schema.
    path = create(
        spark,
        table_root / "t",
        **{"delta.columnMapping.mode": "name", "delta.enableTypeWidening": "true"},
    )
    sql(spark, f"ALTER TABLE {{table}} ADD COLUMNS (amount DECIMAL(10,2), {NESTED})", path)
    sql(spark, "ALTER TABLE {table} RENAME COLUMN s TO said", path)
    sql(spark, "ALTER TABLE {table} ALTER COLUMN n TYPE BIGINT", path)
    sql(spark, "ALTER TABLE {table} ALTER COLUMN amount TYPE DECIMAL(14,4)", path)
    sql(spark, "ALTER TABLE {table} SET TBLPROPERTIES ('jsl.contract.fingerprint'='abc')", path)
    assert "delta.typeChanges" in json.dumps(read_table_state(path).schema)  # in the log

    from_log = delta_tables.live_table(Unasked(), path)
    monkeypatch.setattr(delta_tables, "_local", lambda path: False)
    from_spark = delta_tables.live_table(spark, path)

    assert from_log == from_spark
    assert from_log.version == 5
    assert from_log.properties["jsl.contract.fingerprint"] == "abc"
    assert [f.name for f in from_log.schema.fields] == ["n", "said", "amount", "address"]
    assert from_log.schema["said"].metadata == {"comment": "what the row says"}


def test_no_live_table_where_there_is_none(spark, table_root):
    assert delta_tables.live_table(spark, str(table_root / "missing")) is None


class Unasked:
    """A session that fails the test if it is asked anything."""

    def __getattr__(self, name: str):
        raise AssertionError(f"Spark was asked ({name}) for a table its log answers")


def test_a_local_tables_rows_come_from_its_log_and_equal_sparks_count(
    spark, table_root, monkeypatch
):
    path = create(spark, table_root / "t", **{"delta.enableDeletionVectors": "true"})
    for _ in range(3):
        append(spark, path)  # 1, 2, 3, 4 rows
    sql(spark, "INSERT INTO {table} VALUES (2, 'two'), (3, 'three')", path)  # one file
    sql(spark, "DELETE FROM {table} WHERE n = 2", path)  # a deletion vector on that file
    counted = spark.read.format("delta").load(path).count()

    assert "deletionVector" in (Path(path) / "_delta_log" / f"{5:020}.json").read_text()
    from_log = delta_tables.table_rows(Unasked(), path)
    monkeypatch.setattr(delta_tables, "_local", lambda path: False)

    assert from_log == counted == delta_tables.table_rows(spark, path)
    assert delta_tables.table_rows(spark, str(table_root / "missing")) is None
