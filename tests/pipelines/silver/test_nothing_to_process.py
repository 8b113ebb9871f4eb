"""`nothing_to_process`: the silver stage finds it has nothing new without Spark, exactly when
`run_contract_silver` would, and a pending rejudge still stops it.

Real Spark and Delta write the tables; the finding reads the KV watermark and the Delta logs
only. Bronze rows are those of `test_orders.py` (ORDERS).
"""

import datetime as dt

import pytest

from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver.rejudge_intent import Intent, RejudgeInProgressError, Selection, intent_key
from pipelines.silver.stage import QUARANTINE, nothing_to_process, run_contract_silver
from resources.jetstream import KeyValueSpec
from tests.pipelines.silver.test_orders import CONTRACT, NOW, STREAM, bronze_rows

STAGE = "silver.orders"


@pytest.fixture
def store(js, unique_name) -> WatermarkStore:
    return WatermarkStore(js.create_key_value(KeyValueSpec(unique_name)))


def land(spark, paths, indexes) -> None:
    bronze_rows(spark, indexes).write.format("delta").mode("append").save(paths["bronze_path"])


def run(spark, store, paths, run_id):
    return run_contract_silver(
        spark, store, CONTRACT, stream=STREAM, stage=STAGE, run_id=run_id, now=NOW,
        source_table="bronze/orders", **paths,
    )  # fmt: skip


def idle(store, paths):
    return nothing_to_process(store, stream=STREAM, stage=STAGE, **paths)


def test_nothing_new_is_found_exactly_when_no_bronze_row_is_past_the_watermark(spark, store, paths):
    before_bronze = idle(store, paths)
    assert before_bronze is not None and before_bronze.result.bronze_version is None
    land(spark, paths, range(0, 40))
    assert idle(store, paths) is None  # 40 rows wait

    first = run(spark, store, paths, "run-1")
    found = idle(store, paths)

    assert found is not None
    again = run(spark, store, paths, "run-2")  # what the Spark path finds: nothing new
    assert not again.processed
    assert found.result.watermark == again.watermark == first.watermark
    assert found.result.bronze_version == again.bronze_version
    assert dict(found.finding.compared) == {
        "bronze_version": again.bronze_version,
        "bronze_max_seq": 40,
        "watermark": 40,
    }
    counts = {
        target: spark.read.format("delta").load(path).count()
        for target, path in {**paths["table_paths"], QUARANTINE: paths["quarantine_path"]}.items()
    }
    assert {target: files.rows for target, files in found.tables.items()} == counts

    land(spark, paths, range(40, 41))
    assert idle(store, paths) is None  # one row past the watermark


def test_a_pending_rejudge_stops_it_as_it_stops_the_stage(spark, store, paths):
    land(spark, paths, range(0, 10))
    run(spark, store, paths, "run-1")
    intent = Intent(
        STAGE, STREAM, Selection(True), "rejudge-1", NOW, 10, 0, (), None,
        holder="rejudge-1", expires_at=dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=10),
    )  # fmt: skip
    store.bucket.put(intent_key(STAGE), intent.to_bytes())

    with pytest.raises(RejudgeInProgressError) as error:
        idle(store, paths)

    assert error.value.holder == "rejudge-1"
