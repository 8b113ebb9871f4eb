"""The gold stage on real Spark and Delta: silver/file_deleted written batch by batch as the
silver stage writes it, gold refreshed after each batch, equal to gold computed from the
whole of silver."""

import datetime as dt

from pyspark.sql import functions as F

from pipelines.file_trash import gold
from pipelines.file_trash.gold_stage import GoldPaths, run_gold
from pipelines.lakehouse.delta_tables import merge_new_rows
from pipelines.silver import silver_schema
from tests.pipelines.file_trash.test_gold import CONTRACT, at, silver_rows

FILE_DELETED = silver_schema(CONTRACT.event_type("FileDeletedEvent"))
NOW = dt.datetime(2026, 11, 22, 9, tzinfo=dt.timezone.utc)
WITHIN = dt.timedelta(days=31)  # every file below (retention: 30 days) expires within it


def rows(spark, path: str) -> set[tuple]:
    return {tuple(r) for r in spark.read.format("delta").load(path).collect()}


def recomputed(spark, paths: GoldPaths) -> dict[str, set[tuple]]:
    silver = spark.read.format("delta").load(paths.file_deleted)
    frames = {
        "daily_by_user": gold.daily_trash_by_user(silver),
        "daily_by_mime_type": gold.daily_trash_by_mime_type(silver),
        "expiring_files": gold.expiring_files(silver, now=NOW.replace(hour=0), within=WITHIN),
    }
    return {name: {tuple(r) for r in frame.collect()} for name, frame in frames.items()}


def test_each_batch_refreshes_only_its_days_and_gold_equals_the_full_recompute(
    spark, table_root
) -> None:
    paths = GoldPaths(*(str(table_root / name) for name in ("silver", "user", "mime", "expiring")))
    batches = [
        [
            ("a", "user-001", "application/pdf", 100, at(20, 23, 59, 59)),
            ("b", "user-001", "application/pdf", 200, at(21, 0)),
            ("c", "user-002", "image/png", 300, at(21, 11)),
        ],
        [("d", "user-002", "application/pdf", 400, at(22, 1))],  # a new day
        [("e", "user-003", "image/png", 500, at(20, 8))],  # a late file on an old day
        [],  # nothing new
    ]
    seq, modes = 0, []
    for batch in batches:
        if batch:
            frame = silver_rows(spark, batch).withColumn("seq", F.col("seq") + seq)
            seq += len(batch)
            merge_new_rows(spark, frame, paths.file_deleted, FILE_DELETED)
        result = run_gold(spark, paths, now=NOW, expiring_within=WITHIN)
        modes.append({name: (t.mode, t.buckets) for name, t in result.items()})
        expected = recomputed(spark, paths)
        for name, path in (
            ("daily_by_user", paths.daily_by_user),
            ("daily_by_mime_type", paths.daily_by_mime_type),
            ("expiring_files", paths.expiring_files),
        ):
            assert rows(spark, path) == expected[name], (len(modes), name)

    daily = [(m["daily_by_user"], m["daily_by_mime_type"]) for m in modes]
    assert daily == [
        (("full", None), ("full", None)),
        (("incremental", 1), ("incremental", 1)),
        (("incremental", 1), ("incremental", 1)),
        (("unchanged", None), ("unchanged", None)),
    ]
    assert [m["expiring_files"][0] for m in modes] == ["full", "full", "full", "unchanged"]
    assert len(rows(spark, paths.expiring_files)) == 5
