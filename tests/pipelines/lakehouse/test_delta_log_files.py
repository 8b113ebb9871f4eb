"""`read_table_files` and `read_commits`: a Delta table's live files, rows, a column's largest
value and its last commits, from its log alone, against what Spark reports.

Tables are written by the session's real Spark with Delta: appends, a checkpoint (interval
2), OPTIMIZE, a DELETE with deletion vectors, column mapping with a renamed column.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pipelines.lakehouse import delta_log
from pipelines.lakehouse.delta_log import (
    UnreadableTableLog,
    read_commits,
    read_table_files,
    read_table_state,
)
from pipelines.lakehouse.delta_tables import delta_path
from tests.pipelines.lakehouse.test_delta_log import CHECKPOINTS, session_conf  # noqa: F401


def write(spark, path: str, seqs: range, **options: str) -> None:
    """Appends rows (seq, tag) for `seqs`, as one commit of two files."""
    frame = spark.range(seqs.start, seqs.stop).select(
        F.col("id").alias("seq"), F.lit("t").alias("tag")
    )
    frame.repartition(2).write.format("delta").mode("append").options(**options).save(path)


def spark_view(spark, path: str) -> tuple[int, int, int, str]:
    """(version, rows, largest seq, table id) as Spark reports them."""
    name = delta_path(path)
    version = spark.sql(f"DESCRIBE HISTORY {name} LIMIT 1").first().version
    rows, largest = spark.read.format("delta").load(path).agg(F.count("*"), F.max("seq")).first()
    table_id = spark.sql(f"DESCRIBE DETAIL {name}").first().id
    return version, rows, largest, table_id


def logged(path: str) -> tuple[int, int | None, int | None, str | None]:
    files = read_table_files(path, ("seq",))
    assert files is not None
    return files.version, files.rows, files.maxima.get("seq"), files.table_id


def test_rows_and_the_largest_seq_follow_appends_a_checkpoint_and_optimize(spark, table_root):
    path = str(table_root / "t")
    write(spark, path, range(1, 11), **{"delta.checkpointInterval": "2"})
    for start in (11, 21, 31):  # a checkpoint at version 2, commits after it
        write(spark, path, range(start, start + 10))
    assert logged(path) == spark_view(spark, path)
    assert any(
        p.name.endswith(".checkpoint.parquet") for p in (table_root / "t/_delta_log").iterdir()
    )

    spark.sql(f"OPTIMIZE {delta_path(path)}")

    assert logged(path) == spark_view(spark, path)
    assert read_table_files(path).files == 1
    [optimize] = read_commits(path, 1)
    assert (optimize.operation, optimize.changes) == ("OPTIMIZE", False)


@pytest.mark.parametrize("kind", CHECKPOINTS)
def test_after_log_cleanup_the_files_are_read_from_each_kind_of_checkpoint(
    spark,
    table_root,
    session_conf,  # noqa: F811
    kind,
):
    properties, confs, checkpoint_files = CHECKPOINTS[kind]
    for key, value in confs.items():
        session_conf(key, value)
    path = str(table_root / "t")
    write(spark, path, range(1, 11), **{"delta.checkpointInterval": "2", **properties})
    for start in (11, 21, 31):  # versions 1, 2 (checkpointed) and 3
        write(spark, path, range(start, start + 10))
    expected = spark_view(spark, path)
    log = table_root / "t" / "_delta_log"
    assert list(log.glob(checkpoint_files))

    for version in range(3):  # what metadata cleanup leaves: the checkpoint and later commits
        (log / f"{version:020d}.json").unlink()

    assert logged(path) == expected
    assert expected[:3] == (3, 40, 40)


def test_deleted_rows_are_left_out_of_the_count_and_the_maximum_stays_a_bound(spark, table_root):
    path = str(table_root / "dv")
    write(spark, path, range(1, 101), **{"delta.enableDeletionVectors": "true"})
    spark.sql(f"DELETE FROM {delta_path(path)} WHERE seq > 90")

    version, rows, largest, table_id = logged(path)

    spark_version, spark_rows, _, spark_id = spark_view(spark, path)
    assert (version, rows, table_id) == (spark_version, spark_rows, spark_id)
    assert rows == 90
    assert largest >= 90  # a file's maximum may be a deleted row's: a bound, never below
    [delete] = read_commits(path, 1)
    assert (delete.operation, delete.changes) == ("DELETE", True)


def test_under_column_mapping_the_statistics_are_read_by_physical_name(spark, table_root):
    path = str(table_root / "mapped")
    write(
        spark,
        path,
        range(1, 21),
        **{
            "delta.columnMapping.mode": "name",
            "delta.minReaderVersion": "2",
            "delta.minWriterVersion": "5",
        },
    )
    spark.sql(f"ALTER TABLE {delta_path(path)} RENAME COLUMN tag TO label")

    assert logged(path) == spark_view(spark, path)
    [rename] = read_commits(path, 1)
    assert rename.changes  # a metadata change counts: the schema moved


def test_commits_carry_their_user_metadata_newest_first(spark, table_root):
    path = str(table_root / "meta")
    write(spark, path, range(1, 3), userMetadata='{"n": 1}')
    write(spark, path, range(3, 5), userMetadata='{"n": 2}')

    commits = read_commits(path, 5)

    assert [(c.version, c.user_metadata, c.changes) for c in commits] == [
        (1, '{"n": 2}', True),
        (0, '{"n": 1}', True),
    ]
    assert read_table_state(path).table_id == spark_view(spark, path)[3]


def test_no_table_gives_none_and_a_remote_one_raises(table_root):
    assert read_table_files(str(table_root / "none")) is None
    assert read_commits(str(table_root / "none"), 3) == []
    with pytest.raises(UnreadableTableLog):
        read_table_files("gs://bucket/table")


def test_a_table_in_s3_is_read_through_the_s3_api_as_spark_reports_it(spark, s3_lakehouse):
    path = f"{s3_lakehouse}/t"
    assert read_table_files(path) is None and read_commits(path, 3) == []
    write(spark, path, range(1, 11), **{"delta.checkpointInterval": "2"})
    for start in (11, 21):  # a checkpoint at version 2 (parquet, read through the store)
        write(spark, path, range(start, start + 10), userMetadata=f'{{"n": {start}}}')

    assert logged(path) == spark_view(spark, path)
    assert read_table_state(path).version == 2
    assert [c.user_metadata for c in read_commits(path, 2)] == ['{"n": 21}', '{"n": 11}']


def test_an_s3_store_that_refuses_the_request_leaves_the_decision_to_spark(
    s3_lakehouse, monkeypatch
):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-servers")
    delta_log._s3_filesystem.cache_clear()  # one filesystem per endpoint, made with the keys
    try:
        with pytest.raises(UnreadableTableLog, match="the object store answered"):
            read_table_files(f"{s3_lakehouse}/t")
    finally:
        delta_log._s3_filesystem.cache_clear()
