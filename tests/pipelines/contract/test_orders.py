"""The ORDERS example: the same contract from inline YAML and from AsyncAPI 3.0."""

from pathlib import Path

import pytest

from pipelines.contract import (
    AllowedValues,
    DerivedColumn,
    Envelope,
    Layout,
    NestedObjects,
    Pattern,
    Range,
    Severity,
    UnknownFields,
    read_asyncapi,
    read_contract,
)

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def orders():
    return read_contract(FIXTURES / "orders.yaml")


def test_the_asyncapi_document_gives_a_contract_equal_to_the_yaml_one(orders):
    from_asyncapi = read_asyncapi(
        FIXTURES / "orders.asyncapi.yaml",
        stream="ORDERS",
        envelope=Envelope(event_type="eventType", event_id="eventId", event_time="occurredAt"),
        tables={"OrderPlaced": "silver/orders_placed", "OrderShipped": "silver/orders_shipped"},
        derived={"OrderPlaced": [DerivedColumn("amount_cents", "CAST(amount * 100 AS BIGINT)")]},
        layout=Layout(NestedObjects.FLATTEN),  # as orders.yaml's paths flatten `data`
    )

    assert from_asyncapi == orders
    assert from_asyncapi.rules == orders.rules


def test_orders_has_two_event_types_eight_fields_and_the_rules_it_declares(orders):
    paths = {f.path for e in orders.event_types for f in e.fields}
    by_name = {r.name: r for r in orders.rules}

    assert [e.name for e in orders.event_types] == ["OrderPlaced", "OrderShipped"]
    assert len(paths) == 8
    assert orders.rule_names == (
        "parseable_json",
        "known_event_type",
        "required_fields_present",
        "field_types_valid",
        "event_id_unique",
        "no_unknown_fields",
        "order_id_format",
        "amount_in_range",
        "currency_in_allowed_values",
        "shipped_at_not_in_future",
    )
    assert by_name["order_id_format"].applies_to == ("OrderPlaced", "OrderShipped")
    assert by_name["order_id_format"].constraint == Pattern(
        regex="^ORD-[0-9]{6}$", rule="order_id_format"
    )
    assert by_name["amount_in_range"].constraint == Range(minimum=0.01, maximum=100000)
    assert by_name["currency_in_allowed_values"].constraint == AllowedValues(
        values=("EUR", "USD", "GBP")
    )
    assert by_name["shipped_at_not_in_future"].severity is Severity.WARN
    assert by_name["no_unknown_fields"].applies_to == ("OrderShipped",)
    assert orders.event_type("OrderShipped").unknown_fields is UnknownFields.REJECT


def test_orders_tables_hold_the_envelope_then_the_fields_then_the_derived_columns(orders):
    placed = orders.event_type("OrderPlaced")

    assert [(name, t and t.spark_sql) for name, t in placed.columns] == [
        ("event_id", "string"),
        ("event_type", "string"),
        ("occurred_at", "timestamp"),
        ("order_id", "string"),
        ("customer_id", "string"),
        ("amount", "decimal(12,2)"),
        ("currency", "string"),
        ("amount_cents", None),
    ]
    assert placed.field("data.amount").description == "Order total, in currency."
    assert placed.subjects == ("orders.placed",)


def test_the_yaml_example_fits_in_forty_lines():
    assert len((FIXTURES / "orders.yaml").read_text().splitlines()) <= 40
