"""Declared gold aggregates: parsed and checked without Spark, computed on real Spark and
Delta, rewritten only when their silver table or their definition changes."""

import datetime as dt
from collections import defaultdict
from decimal import Decimal

import pytest
from dagster import AssetKey, AssetsDefinition
from dagster.components.core.component_tree import ComponentTree

from pipelines.components.stream import ComponentDeclarationError, JetStreamStream
from pipelines.lakehouse.aggregates import Aggregate, Measure, parse_measure, run_aggregate
from pipelines.settings import PROJECT_DIR

ORDERS_CONTRACT = str(PROJECT_DIR / "tests/pipelines/contract/fixtures/orders.yaml")
DAILY = Aggregate(
    table="gold/daily_orders_by_currency",
    event_type="OrderPlaced",
    measures=(
        Measure("orders", "count"),
        Measure("revenue", "sum", "amount"),
        Measure("largest", "max", "amount"),
        Measure("smallest", "min", "amount"),
    ),
    group_by=("currency",),
    time_column="occurred_at",
    grain="day",
)


@pytest.mark.parametrize(
    ("text", "measure"),
    [
        ("count", Measure("m", "count")),
        ("count(*)", Measure("m", "count")),
        ("count(amount)", Measure("m", "count", "amount")),
        (" sum( amount ) ", Measure("m", "sum", "amount")),
        ("max(amount)", Measure("m", "max", "amount")),
    ],
)
def test_measures_read_as_written(text, measure) -> None:
    assert parse_measure("m", text) == measure


@pytest.mark.parametrize("text", ["avg(amount)", "sum", "sum(*)", "max(a b)", ""])
def test_a_measure_it_cannot_compute_is_named_with_what_is_allowed(text) -> None:
    with pytest.raises(ValueError, match=r"measure 'm': .* is not one of count, count\(column\)"):
        parse_measure("m", text)


def test_a_grain_without_a_column_an_unknown_grain_and_a_repeated_column_are_refused() -> None:
    with pytest.raises(ValueError, match="time needs both a column and a grain"):
        Aggregate("gold/x", "E", (Measure("n", "count"),), grain="day")
    with pytest.raises(ValueError, match="unknown grain 'fortnight'; use one of hour, day"):
        Aggregate("gold/x", "E", (Measure("n", "count"),), time_column="t", grain="fortnight")
    with pytest.raises(ValueError, match="column 'currency' appears twice"):
        Aggregate("gold/x", "E", (Measure("currency", "count"),), group_by=("currency",))


def declared(**aggregate) -> JetStreamStream:
    return JetStreamStream.model_validate(
        {
            "stream": {"name": "ORDERS", "subjects": ["orders.>"]},
            "ingests": [{"name": "orders", "durable": "orders-bronze", "table": "bronze/orders"}],
            "contract_file": ORDERS_CONTRACT,
            "aggregates": [
                {
                    "table": "gold/daily_orders_by_currency",
                    "event_type": "OrderPlaced",
                    "group_by": ["currency"],
                    "time": {"column": "occurred_at", "grain": "day"},
                    "measures": {"orders": "count", "revenue": "sum(amount)"},
                    **aggregate,
                }
            ],
        }
    )


def test_the_component_adds_one_gold_asset_per_aggregate_after_its_silver_table() -> None:
    defs = declared().build_defs(ComponentTree.for_test().load_context)
    gold_key = AssetKey(["gold", "daily_orders_by_currency"])

    (gold,) = [a for a in defs.assets if isinstance(a, AssetsDefinition) and a.keys == {gold_key}]
    assert gold.key.to_user_string() == "gold/daily_orders_by_currency"
    assert {k.to_user_string() for k in gold.dependency_keys} == {"silver/orders_placed"}
    assert gold.specs_by_key[gold.key].metadata["lakehouse/table"] == gold.key.to_user_string()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"event_type": "OrderCancelled"}, "no event type 'OrderCancelled'; the contract's are"),
        ({"group_by": ["country"]}, "OrderPlaced has no column 'country'; its columns are"),
        ({"measures": {"n": "median(amount)"}}, "measure 'n': 'median(amount)' is not one of"),
        ({"table": "silver/orders_shipped"}, "the table is already used"),
    ],
)
def test_an_aggregate_declared_wrong_names_the_stream_the_table_and_the_fix(
    change, message
) -> None:
    with pytest.raises(ComponentDeclarationError, match="stream 'ORDERS': aggregate") as raised:
        declared(**change).build_defs(ComponentTree.for_test().load_context)

    assert message in str(raised.value)


def silver_rows(spark, path: str, rows: list[tuple]) -> None:
    spark.createDataFrame(
        rows, "occurred_at timestamp, currency string, amount decimal(12,2)"
    ).write.format("delta").mode("append").save(path)


def expected(rows: list[tuple]) -> set[tuple]:
    """(day, currency, rows, sum, max, min) per group; null amounts counted, not measured."""
    groups = defaultdict(list)
    for at, currency, amount in rows:
        groups[(at.date(), currency)].append(amount)
    found = set()
    for (day, currency), amounts in groups.items():
        known = [a for a in amounts if a is not None]
        found.add((day, currency, len(amounts), sum(known), max(known), min(known)))
    return found


def test_an_aggregate_equals_the_grouping_in_python_and_is_rewritten_only_on_change(
    spark, table_root
) -> None:
    source, path = str(table_root / "silver/orders_placed"), str(table_root / "gold/daily")
    day = dt.datetime(2026, 11, 21, 9, tzinfo=dt.timezone.utc)
    rows = [
        (day + dt.timedelta(hours=3 * i), ("EUR", "USD")[i % 2], Decimal(f"{i + 1}.50"))
        for i in range(20)
    ]
    rows.append((day, "EUR", None))  # counted, not measured
    silver_rows(spark, source, rows)

    first = run_aggregate(spark, DAILY, source_path=source, path=path)
    again = run_aggregate(spark, DAILY, source_path=source, path=path)
    late = (day, "GBP", Decimal("9.99"))
    silver_rows(spark, source, [late])
    grown = run_aggregate(spark, DAILY, source_path=source, path=path)

    assert (first.written, again.written, grown.written) == (True, False, True)
    assert again.version == first.version
    found = {tuple(r) for r in spark.read.format("delta").load(path).collect()}
    assert found == expected([*rows, late])
    assert grown.rows == len(found) == 7  # 3 days x 2 currencies, and GBP on the first
