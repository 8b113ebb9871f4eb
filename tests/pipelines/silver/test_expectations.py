"""The Great Expectations suites generated from a contract, and their verdicts per rule.

The suites are built without Spark (`contract_suite`); run by the stage on real Spark and
GX over `test_orders.py`'s ORDERS rows, each constraint expectation finds exactly the rows
the stage flagged for its rule, and the outcomes are recorded with the watermark.
"""

import dataclasses
import functools

import pytest

from pipelines.contract import Severity, contract_from_dict
from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver.expectations import contract_suite, rule_outcomes
from pipelines.silver.stage import run_contract_silver
from resources.jetstream import KeyValueSpec
from resources.quality import DataQualityResource
from tests.pipelines.silver.test_orders import CONTRACT, NOW, STREAM
from tests.pipelines.silver.test_stage import land

PLACED = CONTRACT.event_type("OrderPlaced")
SHIPPED = CONTRACT.event_type("OrderShipped")


def test_the_order_placed_suite_has_one_expectation_per_rule_and_column() -> None:
    suite = contract_suite(CONTRACT, PLACED)

    assert suite.name == "silver/orders_placed"
    found = {c.name: (c.rule, c.expectation, dict(c.kwargs)) for c in suite.checks}
    assert found["customer_id_not_null"] == (
        "required_fields_present",
        "ExpectColumnValuesToNotBeNull",
        {"column": "customer_id__present", "mostly": 1.0},
    )
    assert found["event_id_unique"][:2] == ("event_id_unique", "ExpectColumnValuesToBeUnique")
    assert found["amount_in_range"] == (
        "amount_in_range",
        "ExpectColumnValuesToBeBetween",
        {"column": "amount", "min_value": 0.01, "max_value": 100000, "mostly": 1.0},
    )
    assert found["currency_in_allowed_values"][2]["value_set"] == ["EUR", "USD", "GBP"]
    assert found["order_id_format"][2]["regex"] == r"^ORD-[0-9]{6}\z"
    assert not any(c.critical for c in suite.checks)  # no rule of ORDERS blocks


def test_a_not_in_future_rule_compares_with_the_publish_time_and_a_block_rule_is_critical():
    (shipped_at,) = [f for f in SHIPPED.fields if f.column == "shipped_at"]
    blocking = dataclasses.replace(
        shipped_at,
        constraints=tuple(
            dataclasses.replace(c, severity=Severity.BLOCK) for c in shipped_at.constraints
        ),
    )
    fields = tuple(blocking if f is shipped_at else f for f in SHIPPED.fields)
    contract = dataclasses.replace(
        CONTRACT,
        event_types=(PLACED, dataclasses.replace(SHIPPED, fields=fields)),
    )

    check = contract_suite(contract, contract.event_type("OrderShipped")).check(
        "shipped_at_not_in_future"
    )

    assert check.expectation == "ExpectColumnPairValuesAToBeGreaterThanB"
    assert dict(check.kwargs) == {
        "column_A": "shipped_at__latest",
        "column_B": "shipped_at",
        "or_equal": True,
        "ignore_row_if": "either_value_is_missing",
        "mostly": 1.0,
    }
    assert check.critical


def test_mostly_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="mostly must be in"):
        contract_suite(CONTRACT, PLACED, mostly=0)


def validated_run(spark, store, paths, *, run_id: str, mostly: float = 1.0):
    quality = DataQualityResource()
    return run_contract_silver(
        spark, store, CONTRACT, stream=STREAM, stage="silver.orders", run_id=run_id, now=NOW,
        source_table="bronze/orders", mostly=mostly,
        validate=functools.partial(quality.validate_dataframe, evaluated_at=NOW),
        **paths,
    )  # fmt: skip


def test_each_expectation_finds_the_rows_the_stage_flagged_for_its_rule(
    spark, js, unique_name, paths
) -> None:
    store = WatermarkStore(js.create_key_value(KeyValueSpec(unique_name)))
    land(spark, paths, range(200))  # 20 bad rows: two of each kind

    result = validated_run(spark, store, paths, run_id="run-1")
    idle = validated_run(spark, store, paths, run_id="run-2")

    placed, shipped = result.expectations["OrderPlaced"], result.expectations["OrderShipped"]
    for event, outcomes in result.expectations.items():
        for rule in ("amount_in_range", "currency_in_allowed_values", "order_id_format"):
            if rule in outcomes:
                assert outcomes[rule]["unexpected"] == result.failures[event][rule], (event, rule)
    assert shipped["shipped_at_not_in_future"]["unexpected"] == 2
    assert result.failures["OrderShipped"]["shipped_at_not_in_future"] == 2
    # Missing fields only (2 rows): a mistyped value (2 rows) is field_types_valid's.
    assert placed["required_fields_present"]["unexpected"] == 2
    assert result.failures["OrderPlaced"]["required_fields_present"] == 2
    # GX counts every row of a repeated id, the first one included; the stage the copies.
    assert placed["event_id_unique"]["unexpected"] == 4
    assert result.failures["OrderPlaced"]["event_id_unique"] == 2
    assert not placed["amount_in_range"]["passed"]
    assert shipped["order_id_format"]["passed"] is False
    assert set(placed) == {
        "required_fields_present",
        "event_id_unique",
        "order_id_format",
        "amount_in_range",
        "currency_in_allowed_values",
    }
    assert rule_outcomes(result.reports["OrderShipped"]) == shipped
    assert not idle.processed
    assert idle.watermark.details["expectations"] == result.expectations


def test_mostly_lets_a_batch_with_a_few_bad_rows_pass(spark, js, unique_name, paths) -> None:
    store = WatermarkStore(js.create_key_value(KeyValueSpec(unique_name)))
    land(spark, paths, range(200))

    result = validated_run(spark, store, paths, run_id="run-1", mostly=0.9)

    verdicts = [o["passed"] for found in result.expectations.values() for o in found.values()]
    assert verdicts and all(verdicts)
    assert result.failures["OrderPlaced"]["amount_in_range"] == 2


def test_date_time_and_date_formats_have_no_regex_expectation_since_the_stage_parses_them():
    """A regex passes 2024-02-30 and the stage does not: the check counts the stage's rows,
    so the check and the quarantine give one verdict (#51)."""
    contract = contract_from_dict(
        {
            "envelope": {
                "event_type": "kind",
                "event_id": "id",
                "fields": {"kind": {"required": True}, "id": {"required": True}},
            },
            "events": {
                "Dated": {
                    "fields": {
                        "when": {"format": "date-time", "rule": "when_is_a_date_time"},
                        "day": {"format": "date", "rule": "day_is_a_date"},
                        "mail": {"format": "email", "rule": "mail_is_an_email"},
                    }
                }
            },
        }
    )

    suite = contract_suite(contract, contract.event_type("Dated"))

    by_rule = {c.rule: c.expectation for c in suite.checks}
    assert by_rule["mail_is_an_email"] == "ExpectColumnValuesToMatchRegex"
    assert "when_is_a_date_time" not in by_rule and "day_is_a_date" not in by_rule
