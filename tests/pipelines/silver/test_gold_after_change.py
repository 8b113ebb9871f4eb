"""Gold after a contract change: a declared aggregate over an evolved silver table holds what
a full recompute from silver gives (new columns, widened types, rows a rebuild moved out).
"""

import pytest
from chispa import assert_df_equality

from pipelines.lakehouse.aggregates import Aggregate, parse_measure, run_aggregate
from pipelines.lakehouse.watermarks import WatermarkStore
from resources.jetstream import KeyValueSpec
from tests.pipelines.silver.contract_changes import (
    PLACED_FIELDS,
    land,
    orders,
    placed,
    rebuild,
    run,
)

DAILY = Aggregate(
    "gold/orders_daily",
    "OrderPlaced",
    (parse_measure("orders", "count"), parse_measure("revenue", "sum(amount)")),
    group_by=("currency",),
    time_column="published",
    grain="day",
)


@pytest.fixture
def store(js, unique_name) -> WatermarkStore:
    return WatermarkStore(js.create_key_value(KeyValueSpec(unique_name)))


def _refresh(spark, table_root):
    silver = str(table_root / "silver/orders_placed")
    result = run_aggregate(spark, DAILY, source_path=silver, path=str(table_root / DAILY.table))
    gold = spark.read.format("delta").load(result.path)
    recomputed = DAILY.frame(spark.read.format("delta").load(silver))
    assert_df_equality(gold, recomputed, ignore_row_order=True, ignore_nullable=True)
    return gold


def test_an_aggregate_follows_a_widened_and_extended_silver_table(spark, store, table_root):
    land(spark, table_root, [placed(1, amount=1.25, currency="EUR")], first_seq=1)
    run(spark, store, table_root, orders())
    _refresh(spark, table_root)
    fields = {**PLACED_FIELDS, "data.amount": "decimal(18,4)", "data.channel": "string"}
    after = orders(fields)
    messages = [placed(2, amount=0.0001, currency="EUR"), placed(3, amount=3, currency="USD")]
    land(spark, table_root, messages, first_seq=2)

    run(spark, store, table_root, after, run_id="run-2")
    gold = _refresh(spark, table_root)

    revenue = {r.currency: r.revenue for r in gold.collect()}
    assert {k: str(v) for k, v in revenue.items()} == {"EUR": "1.2501", "USD": "3.0000"}


def test_an_aggregate_follows_a_rebuild_that_moves_rows_out_of_silver(spark, store, table_root):
    messages = [
        placed(1, amount=1, quantity=1, currency="EUR"),
        placed(2, amount=2, currency="EUR"),  # no quantity: leaves silver below
        placed(3, amount=4, quantity=3, currency="USD"),
    ]
    land(spark, table_root, messages, first_seq=1)
    run(spark, store, table_root, orders())
    _refresh(spark, table_root)
    stricter = orders({**PLACED_FIELDS, "data.quantity": {"type": "integer", "required": True}})

    rebuild(spark, store, table_root, stricter, first_seq=1, last_seq=3)
    gold = _refresh(spark, table_root)

    assert sorted((r.currency, r.orders, str(r.revenue)) for r in gold.collect()) == [
        ("EUR", 1, "1.00"),
        ("USD", 1, "4.00"),
    ]
