"""Gold refreshed by time bucket from silver's change data feed (`pipelines.lakehouse.refresh`),
on a real Spark with Delta: after every kind of change to silver, the incremental refresh leaves
exactly what a full recompute from the same silver version gives."""

import datetime as dt
import shutil

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import pipelines.lakehouse.refresh as refresh
from pipelines.lakehouse.aggregates import Aggregate, Measure, run_aggregate
from pipelines.lakehouse.delta_tables import CHANGE_DATA_FEED, delta_path, ensure_table
from pipelines.lakehouse.refresh import TimeBuckets, last_data_write, read_source, refresh_table

SCHEMA = "seq long, at timestamp, user string, size long"
DAYS = TimeBuckets("at", "day", lambda at: F.to_date(at), dt.timedelta(days=1))


def daily(rows: DataFrame) -> DataFrame:
    return rows.groupBy(F.to_date("at").alias("day"), "user").agg(
        F.count(F.lit(1)).alias("files"), F.sum("size").alias("bytes")
    )


def at(day: int, hour: int = 12) -> dt.datetime:
    return dt.datetime(2026, 11, day, hour, tzinfo=dt.timezone.utc)


def append(spark, path: str, rows: list[tuple]) -> None:
    spark.createDataFrame(rows, SCHEMA).write.format("delta").mode("append").save(path)


def gold_rows(spark, path: str) -> set[tuple]:
    return {tuple(r) for r in spark.read.format("delta").load(path).collect()}


def full(spark, source: str) -> set[tuple]:
    return {tuple(r) for r in daily(spark.read.format("delta").load(source)).collect()}


def run(spark, source: str, path: str, **definition):
    return refresh_table(
        spark,
        source=read_source(spark, source),
        path=path,
        compute=daily,
        definition=definition,
        buckets=DAYS,
    )


def make_silver(spark, path: str) -> str:
    """An empty silver table with the change data feed on, as the silver stage makes them."""
    schema = spark.createDataFrame([], SCHEMA).schema
    ensure_table(spark, path, schema, properties=CHANGE_DATA_FEED)
    return path


@pytest.fixture
def silver(spark, table_root) -> str:
    return make_silver(spark, str(table_root / "silver"))


def test_after_inserts_late_rows_deletes_updates_and_compactions_gold_is_the_full_recompute(
    spark, table_root, silver
) -> None:
    gold = str(table_root / "gold")
    append(spark, silver, [(1, at(1), "u1", 10), (2, at(1), "u2", 20), (3, at(2), "u1", 30)])
    steps = [run(spark, silver, gold)]
    # new rows on a new day and on a day gold already has
    append(spark, silver, [(4, at(3), "u1", 40), (5, at(1, 23), "u1", 50)])
    steps.append(run(spark, silver, gold))
    # a late row on an old day only
    append(spark, silver, [(6, at(2, 0), "u3", 60)])
    steps.append(run(spark, silver, gold))
    # rows deleted and updated in silver
    spark.sql(f"DELETE FROM {delta_path(silver)} WHERE seq = 3").collect()
    spark.sql(f"UPDATE {delta_path(silver)} SET size = 5 WHERE seq = 1").collect()
    steps.append(run(spark, silver, gold))
    # compactions change no rows: silver's is nothing to do, gold's is looked past
    spark.sql(f"OPTIMIZE {delta_path(silver)}").collect()
    spark.sql(f"OPTIMIZE {delta_path(gold)}").collect()
    steps.append(run(spark, silver, gold))
    assert gold_rows(spark, gold) == full(spark, silver)
    append(spark, silver, [(7, at(4), "u2", 70)])
    steps.append(run(spark, silver, gold))

    assert gold_rows(spark, gold) == full(spark, silver)
    assert [(s.mode, s.written, s.buckets) for s in steps] == [
        ("full", True, None),
        ("incremental", True, 2),  # days 1 and 3
        ("incremental", True, 1),  # day 2
        ("incremental", True, 2),  # day 2 (seq 3 deleted), day 1 (seq 1 updated)
        ("unchanged", False, 0),
        ("incremental", True, 1),  # day 4
    ]


def test_unchanged_silver_writes_nothing_and_a_new_definition_recomputes_all(
    spark, table_root, silver
) -> None:
    gold = str(table_root / "gold")
    append(spark, silver, [(1, at(1), "u1", 10)])
    first = run(spark, silver, gold, version=1)
    again = run(spark, silver, gold, version=1)
    redefined = run(spark, silver, gold, version=2)

    assert (first.mode, again.mode, again.written) == ("full", "unchanged", False)
    assert again.version == first.version
    assert (redefined.mode, redefined.reason) == ("full", "the definition changed")


def test_gold_tables_refreshed_from_one_silver_read_read_its_change_data_once(
    spark, table_root, silver, monkeypatch
) -> None:
    by_user, by_day = str(table_root / "by_user"), str(table_root / "by_day")

    def per_day(rows: DataFrame) -> DataFrame:
        return rows.groupBy(F.to_date("at").alias("day")).agg(F.count(F.lit(1)).alias("n"))

    def both(source):
        return [
            refresh_table(
                spark, source=source, path=gold, compute=compute, definition={}, buckets=DAYS
            )
            for gold, compute in ((by_user, daily), (by_day, per_day))
        ]

    append(spark, silver, [(1, at(1), "u1", 10)])
    both(read_source(spark, silver))
    append(spark, silver, [(2, at(2), "u1", 20), (3, at(1), "u2", 30)])
    reads = []
    changed_buckets = refresh._changed_buckets
    monkeypatch.setattr(
        refresh, "_changed_buckets", lambda *a: reads.append(a) or changed_buckets(*a)
    )
    source = read_source(spark, silver)
    refreshed = both(source)

    assert [(r.mode, r.buckets, r.written) for r in refreshed] == [("incremental", 2, True)] * 2
    assert len(reads) == 2 and len(source._changes) == 1  # asked twice, read once
    assert gold_rows(spark, by_user) == full(spark, silver)
    assert gold_rows(spark, by_day) == {
        tuple(r) for r in per_day(spark.read.format("delta").load(silver)).collect()
    }


def test_without_change_data_for_the_versions_since_it_recomputes_in_full(
    spark, table_root
) -> None:
    silver, gold = str(table_root / "plain"), str(table_root / "gold")
    append(spark, silver, [(1, at(1), "u1", 10)])  # a table made without the change data feed
    run(spark, silver, gold)
    append(spark, silver, [(2, at(2), "u1", 20)])
    second = run(spark, silver, gold)

    assert second.mode == "full" and second.written
    assert "DELTA_MISSING_CHANGE_DATA" in second.reason
    assert gold_rows(spark, gold) == full(spark, silver)


def test_rows_without_a_time_are_a_bucket_of_their_own(spark, table_root, silver) -> None:
    gold = str(table_root / "gold")
    append(spark, silver, [(1, at(1), "u1", 10), (2, None, "u1", 20)])
    run(spark, silver, gold)
    append(spark, silver, [(3, None, "u1", 30), (4, at(2), "u2", 40)])
    second = run(spark, silver, gold)

    assert (second.mode, second.buckets) == ("incremental", 2)  # day 2 and no day
    assert gold_rows(spark, gold) == full(spark, silver)
    assert (None, "u1", 2, 50) in gold_rows(spark, gold)


def test_a_silver_table_recreated_at_the_same_path_is_recomputed_in_full(
    spark, table_root, silver
) -> None:
    gold = str(table_root / "gold")
    append(spark, silver, [(1, at(1), "u1", 10)])
    append(spark, silver, [(2, at(2), "u1", 20)])
    run(spark, silver, gold)
    shutil.rmtree(silver)  # dropped and made again: versions start over, as many of them
    make_silver(spark, silver)
    append(spark, silver, [(1, at(5), "u9", 1)])
    append(spark, silver, [(2, at(6), "u9", 2)])
    append(spark, silver, [(3, at(7), "u9", 3)])
    again = run(spark, silver, gold)

    assert (again.mode, again.reason) == (
        "full",
        "silver is not the table gold was computed from (its Delta table id changed)",
    )
    assert gold_rows(spark, gold) == full(spark, silver)


def test_a_run_that_read_gold_before_another_run_wrote_it_is_skipped(
    spark, table_root, silver, monkeypatch
) -> None:
    gold = str(table_root / "gold")
    append(spark, silver, [(1, at(1), "u1", 10)])
    run(spark, silver, gold)
    stale = last_data_write(spark, gold)  # what a slower run read, before the next write
    append(spark, silver, [(2, at(2), "u1", 20)])
    run(spark, silver, gold)
    written = gold_rows(spark, gold)
    append(spark, silver, [(3, at(1), "u2", 30)])

    with monkeypatch.context() as patched:
        patched.setattr(refresh, "last_data_write", lambda spark, path: stale)
        slow = run(spark, silver, gold)
    assert (slow.written, slow.reason) == (False, "another run wrote the table first")
    assert gold_rows(spark, gold) == written  # Delta skipped the stale write
    caught_up = run(spark, silver, gold)
    assert caught_up.mode == "incremental"
    assert gold_rows(spark, gold) == full(spark, silver)


def test_an_hourly_aggregate_in_a_non_utc_session_refreshes_to_the_full_recompute(
    spark, table_root, silver
) -> None:
    hourly = Aggregate(
        "gold/hourly",
        "E",
        (Measure("n", "count"), Measure("bytes", "sum", "size")),
        group_by=("user",),
        time_column="at",
        grain="hour",
    )
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")  # UTC+05:30
    try:
        gold = str(table_root / "gold")
        append(spark, silver, [(1, at(1, 0), "u1", 1), (2, at(1, 23), "u1", 2)])
        first = run_aggregate(spark, hourly, source_path=silver, path=gold)
        append(spark, silver, [(3, at(1, 0), "u2", 3), (4, at(2, 5), "u1", 4)])
        second = run_aggregate(spark, hourly, source_path=silver, path=gold)
        expected = hourly.frame(spark.read.format("delta").load(silver)).collect()
        found = spark.read.format("delta").load(gold).collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)

    assert (first.mode, second.mode, second.buckets) == ("full", "incremental", 2)
    assert {tuple(r) for r in found} == {tuple(r) for r in expected}
    assert len(found) == 4
