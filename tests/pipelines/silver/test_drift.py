"""The contract against its live tables before anything runs (`pipelines.silver.drift`):
what the code location load and `jsl contract diff` report is what the next run applies.

Real Spark and Delta write the tables; the report reads their Delta logs without Spark.
"""

import pytest

from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver.drift import pending_changes
from pipelines.silver.evolution import ChangeKind, OnSchemaChange
from resources.jetstream import KeyValueSpec
from tests.pipelines.silver.contract_changes import PLACED_FIELDS, land, orders, placed, run


@pytest.fixture
def store(js, unique_name) -> WatermarkStore:
    return WatermarkStore(js.create_key_value(KeyValueSpec(unique_name)))


def _report(table_root, contract, policy=OnSchemaChange.EVOLVE):
    return pending_changes(
        contract,
        stream="ORDERS",
        table_path=lambda table: str(table_root / table),
        quarantine="quarantine/orders",
        policy={e.name: policy for e in contract.event_types},
    )


def test_no_table_yet_and_an_unchanged_contract_report_nothing(spark, store, table_root):
    assert _report(table_root, orders()).lines() == []
    land(spark, table_root, [placed(1, amount=1.5)], first_seq=1)
    run(spark, store, table_root, orders())

    assert _report(table_root, orders()).lines() == []


def test_the_report_before_a_run_lists_what_the_run_then_applies(spark, store, table_root):
    land(spark, table_root, [placed(1, amount=1.5, quantity=1, currency="EUR")], first_seq=1)
    run(spark, store, table_root, orders())
    fields = {
        **PLACED_FIELDS,
        "data.amount": "decimal(18,4)",
        "data.quantity": "long",
        "data.currency": {"enum": ["EUR", "USD"], "column": "ccy"},
        "data.channel": "string",
    }
    after = orders(fields)

    report = _report(table_root, after)
    frozen = _report(table_root, after, OnSchemaChange.FREEZE)
    land(spark, table_root, [placed(2, amount=2.5)], first_seq=2)
    applied = run(spark, store, table_root, after, run_id="run-2").schema_changes

    expected = [
        ("amount", ChangeKind.WIDENING),
        ("quantity", ChangeKind.WIDENING),
        ("ccy", ChangeKind.RENAME),
        ("channel", ChangeKind.ADDITIVE),
    ]
    assert [(c.column, c.kind) for c in report.changes] == expected
    assert [(c.column, c.kind) for c in applied] == expected
    assert report.refused == ()
    assert [c.column for c in frozen.refused] == ["amount", "quantity", "ccy", "channel"]
    line = report.lines()[0]
    assert line.startswith("stream ORDERS: silver/orders_placed: column 'amount'")
    assert "decimal(12,2) -> decimal(18,4)" in line and "applied by the next run" in line
    assert _report(table_root, after).lines() == []  # the run left nothing to do


def test_a_breaking_change_and_a_newly_required_field_are_reported(spark, store, table_root):
    land(spark, table_root, [placed(1, amount=1.5)], first_seq=1)
    run(spark, store, table_root, orders())
    fields = {
        **PLACED_FIELDS,
        "data.amount": "string",
        "data.quantity": {"type": "integer", "required": True},
    }

    report = _report(table_root, orders(fields))

    assert [(c.column, c.kind, c.old, c.new) for c in report.refused] == [
        ("amount", ChangeKind.BREAKING, "decimal(12,2)", "string")
    ]
    assert any("'quantity' is now required" in note for note in report.notes)
