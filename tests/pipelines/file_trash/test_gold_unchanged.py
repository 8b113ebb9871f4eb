"""`gold_unchanged`: gold's "nothing new" found from the Delta logs alone, exactly when
`run_gold` (with Spark) writes nothing, and never when it would write.

Real Spark and Delta write silver/file_deleted and gold; the finding reads their logs only.
"""

import datetime as dt

from pyspark.sql import functions as F

from pipelines.file_trash.gold_stage import GoldPaths, gold_unchanged, run_gold
from pipelines.lakehouse.delta_tables import delta_path, merge_new_rows
from pipelines.silver import silver_schema
from tests.pipelines.file_trash.test_gold import CONTRACT, at, silver_rows

FILE_DELETED = silver_schema(CONTRACT.event_type("FileDeletedEvent"))
NOW = dt.datetime(2026, 11, 22, 9, tzinfo=dt.timezone.utc)
WITHIN = dt.timedelta(days=31)


def test_gold_is_found_unchanged_from_the_logs_exactly_when_run_gold_writes_nothing(
    spark, table_root
) -> None:
    paths = GoldPaths(*(str(table_root / name) for name in ("silver", "user", "mime", "expiring")))

    def land(rows, after: int) -> None:
        frame = silver_rows(spark, rows).withColumn("seq", F.col("seq") + after)
        merge_new_rows(spark, frame, paths.file_deleted, FILE_DELETED)

    def unchanged(now=NOW):
        found = gold_unchanged(paths, now=now, expiring_within=WITHIN)
        return None if found is None else {name: table for name, (table, _) in found.items()}

    def gold(now=NOW):
        return run_gold(spark, paths, now=now, expiring_within=WITHIN)

    land([("a", "user-001", "application/pdf", 100, at(20, 23))], 0)
    assert unchanged() is None  # no gold yet
    gold()
    found = unchanged()
    assert found is not None
    assert found == gold()  # what run_gold then returns: every table unchanged, same rows

    land([("b", "user-002", "image/png", 200, at(21, 8))], 1)
    assert unchanged() is None  # silver changed
    gold()
    assert unchanged() == gold()
    assert unchanged(NOW + dt.timedelta(days=1)) is None  # a new day for expiring_files

    # Silver compacted: no row changed. expiring_files (not bucketed) is recomputed, the
    # daily tables find no changed day and keep the silver version they recorded.
    spark.sql(f"OPTIMIZE {delta_path(paths.file_deleted)}")
    assert unchanged() is None
    after = gold()
    assert {name: t.mode for name, t in after.items()} == {
        "daily_by_user": "unchanged",
        "daily_by_mime_type": "unchanged",
        "expiring_files": "full",
    }
    found = gold_unchanged(paths, now=NOW, expiring_within=WITHIN)
    assert found is not None
    recorded = {name: dict(finding.compared) for name, (_, finding) in found.items()}
    silver_version = recorded["expiring_files"]["silver_version"]
    assert recorded["expiring_files"]["recorded_silver_version"] == silver_version
    assert recorded["daily_by_user"]["recorded_silver_version"] == silver_version - 1
    assert {name: table for name, (table, _) in found.items()} == gold()
