"""`run_contract_silver`: bronze rows past the watermark, written once, whatever crashes.

Real Spark and Delta, the watermark in a real KV bucket; bronze rows are those of
`test_orders.py` (ORDERS, every tenth bad), written to a Delta table.
"""

import gc
import time

import pytest

from pipelines.lakehouse.delta_tables import MergeOutcome
from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver.stage import QUARANTINE, run_contract_silver
from resources.jetstream import KeyValueSpec
from tests.pipelines.silver.test_orders import CONTRACT, NOW, STREAM, bronze_rows


class Crash(Exception):
    pass


class CrashingStore(WatermarkStore):
    """Crashes where a process would die between the table writes and the watermark."""

    def save(self, watermark):
        raise Crash("died before moving the watermark")


@pytest.fixture
def store(js, unique_name) -> WatermarkStore:
    return WatermarkStore(js.create_key_value(KeyValueSpec(unique_name)))


def land(spark, paths, indexes) -> None:
    bronze_rows(spark, indexes).write.format("delta").mode("append").save(paths["bronze_path"])


def run(spark, store, paths, run_id="run-1"):
    return run_contract_silver(
        spark, store, CONTRACT, stream=STREAM, stage="silver.orders", run_id=run_id, now=NOW,
        source_table="bronze/orders", **paths,
    )  # fmt: skip


def rows(spark, paths) -> dict[str, list]:
    every = {**paths["table_paths"], QUARANTINE: paths["quarantine_path"]}
    return {
        name: sorted(map(tuple, spark.read.format("delta").load(path).collect()))
        for name, path in every.items()
    }


def nothing_cached(spark) -> bool:
    """Whether the session's cache holds no frame (the stage uncaches all it cached)."""
    return spark._jsparkSession.sharedState().cacheManager().isEmpty()


def kept_rdds(spark) -> set[int]:
    """The ids of the RDDs whose blocks Spark keeps: cached frames and local checkpoints (not
    the table states Delta caches, named "Delta Table State ...", which it releases itself)."""
    return {
        info.id()
        for info in spark.sparkContext._jsc.sc().getRDDStorageInfo()
        if not info.name().startswith("Delta Table State")
    }


def released_since(spark, before: set[int], timeout: float = 60.0) -> bool:
    """Whether every RDD kept since `before` is freed once nothing refers to it any more: the
    stage's checkpoints are freed by Spark's ContextCleaner once the JVM collects them, after
    Python dropped its frames (so nothing of the stage may still hold one)."""
    deadline = time.monotonic() + timeout
    while kept_rdds(spark) - before:
        if time.monotonic() > deadline:
            return False
        gc.collect()
        spark._jvm.System.gc()
        time.sleep(0.5)
    return True


def test_a_crash_before_the_watermark_moves_duplicates_nothing_on_the_next_run(spark, store, paths):
    land(spark, paths, range(200))
    spark.catalog.clearCache()
    with pytest.raises(Crash):
        run(spark, CrashingStore(store.bucket), paths)
    assert nothing_cached(spark)  # the frames it cached are released by the crash too
    written = rows(spark, paths)
    before = kept_rdds(spark)

    again = run(spark, store, paths, run_id="run-2")

    assert nothing_cached(spark)
    assert released_since(spark, before)  # and its checkpoint once its frames are dropped

    assert {name: len(found) for name, found in written.items()} == {
        "OrderPlaced": 100,
        "OrderShipped": 82,
        QUARANTINE: 18,
    }
    assert {name: m.inserted for name, m in again.tables.items()} == {
        "OrderPlaced": 0,
        "OrderShipped": 0,
    }
    assert again.quarantine.inserted == 0
    assert rows(spark, paths) == written
    assert (again.bronze_start, again.bronze_end, again.rows_in) == (1, 200, 200)
    assert store.load("silver.orders").position == 200
    assert again.failures["OrderShipped"]["shipped_at_not_in_future"] == 2
    assert again.failures[QUARANTINE] == {"parseable_json": 2, "known_event_type": 2}
    assert sum(again.quarantined_by_rule.values()) == 18


def test_the_next_batch_is_judged_against_earlier_runs_and_an_idle_run_keeps_the_counts(
    spark, store, paths
):
    land(spark, paths, range(200))
    first = run(spark, store, paths)
    land(spark, paths, range(200, 300))

    second = run(spark, store, paths, run_id="run-2")
    idle = run(spark, store, paths, run_id="run-3")

    assert (second.bronze_start, second.bronze_end) == (201, 300)
    # Row 279 copies evt-0190 of the first batch: a later copy, quarantined.
    quarantine = spark.read.format("delta").load(paths["quarantine_path"])
    copy = quarantine.where("seq = 280").select("failed_rules", "event_id").first()
    assert (copy.failed_rules, copy.event_id) == (["event_id_unique"], "evt-0190")
    assert second.failures["OrderPlaced"]["event_id_unique"] == 1
    assert first.failures["OrderPlaced"]["event_id_unique"] == 2
    assert not idle.processed
    assert idle.failures == {}
    assert idle.watermark.position == 300
    assert idle.watermark.details["failures"] == second.failures


def test_a_table_that_receives_no_rows_is_created_and_not_merged_into(spark, store, paths):
    land(spark, paths, range(0, 40, 2))  # 20 good OrderPlaced rows: none shipped, none bad

    result = run(spark, store, paths)

    assert result.tables["OrderPlaced"] == MergeOutcome(20, 1)
    assert result.tables["OrderShipped"] == MergeOutcome(0, 0)
    assert result.quarantine == MergeOutcome(0, 0)
    assert result.quarantined_by_rule == {}
    assert result.checked == {"OrderPlaced": 20, "OrderShipped": 0, QUARANTINE: 20}
    operations = {
        name: [row.operation for row in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()]
        for name, path in {**paths["table_paths"], QUARANTINE: paths["quarantine_path"]}.items()
    }
    assert operations == {
        "OrderPlaced": ["MERGE", "CREATE TABLE"],
        "OrderShipped": ["CREATE TABLE"],  # created empty, so the table exists after the first run
        QUARANTINE: ["CREATE TABLE"],
    }
