"""ORDERS: 1,000 bronze rows, 10% bad of ten known kinds, through the generated silver.

Row i (seq i + 1) is an OrderPlaced when i is even, an OrderShipped when odd; every tenth
row (i % 10 == 9) is bad, its kind chosen by (i // 10) % 10 (`BAD`). The expected silver rows
and quarantine rows are computed here, in Python, from the same numbers.
"""

import datetime as dt
import json
from decimal import Decimal

import pytest

from pipelines.contract import read_contract
from pipelines.contract.fingerprint import event_type_version
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.settings import PROJECT_DIR
from pipelines.silver import colliding_keys, event_keys, parse_events, route, rule_failures
from pipelines.silver.layout import EVENT_TYPE
from pipelines.silver.route import SilverBatch, routed_counts

CONTRACT = read_contract(PROJECT_DIR / "tests/pipelines/contract/fixtures/orders.yaml")
STREAM = "ORDERS"
BASE = dt.datetime(2026, 11, 21, 9, 0, tzinfo=dt.timezone.utc)
PUBLISHED = BASE + dt.timedelta(hours=1)  # every event happened before it was stored
NOW = BASE + dt.timedelta(hours=2)
COUNT = 1000
# The contract that judged each row, as every silver row records it (`contract_version`).
PLACED_VERSION, SHIPPED_VERSION = (event_type_version(CONTRACT, e) for e in CONTRACT.event_types)
BAD = (
    "malformed_json",
    "missing_required",
    "mistyped",
    "pattern_break",
    "out_of_range",
    "bad_enum",
    "future_time",
    "duplicate_id",
    "unknown_event_type",
    "unknown_field",
)
# What each kind breaks; future_time's rule is a warning: the row stays in silver.
RULES = {
    "malformed_json": ["parseable_json"],
    "missing_required": ["required_fields_present"],
    "mistyped": ["field_types_valid"],
    "pattern_break": ["order_id_format"],
    "out_of_range": ["amount_in_range"],
    "bad_enum": ["currency_in_allowed_values"],
    "future_time": ["shipped_at_not_in_future"],
    "duplicate_id": ["event_id_unique"],
    "unknown_event_type": ["known_event_type"],
    "unknown_field": ["no_unknown_fields"],
}
PLACED_KINDS = {"missing_required", "mistyped", "out_of_range", "bad_enum", "duplicate_id"}


def iso(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def kind_of(i: int) -> str | None:
    return BAD[(i // 10) % 10] if i % 10 == 9 else None


def duplicated(i: int) -> int:
    """The good OrderPlaced row a duplicate_id row copies (one crosses seq 500)."""
    return 10 * max(i // 10 - 8, 0)


def placed(i: int) -> dict:
    return {
        "eventId": f"evt-{i:04d}",
        "eventType": "OrderPlaced",
        "occurredAt": iso(BASE + dt.timedelta(seconds=i)),
        "data": {
            "orderId": f"ORD-{i:06d}",
            "customerId": f"cust-{i % 37:03d}",
            "amount": float(amount(i)),
            "currency": ("EUR", "USD", "GBP")[i % 3],
        },
    }


def amount(i: int) -> Decimal:
    return Decimal(f"{i % 500 + 1}.{i % 100:02d}")


def shipped(i: int) -> dict:
    return {
        "eventId": f"evt-{i:04d}",
        "eventType": "OrderShipped",
        "occurredAt": iso(BASE + dt.timedelta(seconds=i)),
        "data": {"orderId": f"ORD-{i - 1:06d}", "shippedAt": iso(BASE + dt.timedelta(seconds=i))},
    }


def payload(i: int) -> dict | bytes:
    kind = kind_of(i)
    if kind is None:
        return placed(i) if i % 2 == 0 else shipped(i)
    if kind == "malformed_json":
        return b'{"eventId": "evt-broken", "data": {'
    if kind == "duplicate_id":
        return placed(duplicated(i))
    event = placed(i) if kind in PLACED_KINDS else shipped(i)
    data = event["data"]
    if kind == "missing_required":
        del data["customerId"]
    elif kind == "mistyped":
        data["amount"] = "12.50"
    elif kind == "pattern_break":
        data["orderId"] = "ORD-12"
    elif kind == "out_of_range":
        data["amount"] = 0
    elif kind == "bad_enum":
        data["currency"] = "JPY"
    elif kind == "future_time":
        data["shippedAt"] = iso(PUBLISHED + dt.timedelta(hours=1))
    elif kind == "unknown_event_type":
        event["eventType"] = "OrderCancelled"
    elif kind == "unknown_field":
        data["carrier"] = "DHL"
    return event


def encoded(value: dict | bytes) -> bytes:
    return value if isinstance(value, bytes) else json.dumps(value).encode()


def bronze_rows(spark, indexes):
    rows = []
    for i in indexes:
        subject = "orders.placed" if i % 2 == 0 else "orders.shipped"
        rows.append(
            (
                STREAM,
                i + 1,
                subject,
                PUBLISHED,
                PUBLISHED.date(),
                None,
                encoded(payload(i)),
                None,
                "ingest",
                NOW,
            )
        )
    return spark.createDataFrame(rows, BRONZE_SCHEMA)


def expected_placed() -> set[tuple]:
    rows = set()
    for i in range(0, COUNT, 2):
        if kind_of(i) is None:
            event = placed(i)
            rows.add(
                (
                    event["eventId"],
                    "OrderPlaced",
                    BASE + dt.timedelta(seconds=i),
                    f"ORD-{i:06d}",
                    f"cust-{i % 37:03d}",
                    amount(i),
                    event["data"]["currency"],
                    int(amount(i) * 100),
                    STREAM,
                    i + 1,
                    "orders.placed",
                    PUBLISHED,
                    "run-1",
                    NOW,
                    PLACED_VERSION,
                )
            )
    return rows


def expected_shipped() -> set[tuple]:
    rows = set()
    for i in range(1, COUNT, 2):
        if kind_of(i) in (None, "future_time"):
            at = BASE + dt.timedelta(seconds=i)
            shipped_at = PUBLISHED + dt.timedelta(hours=1) if kind_of(i) else at
            rows.add(
                (
                    f"evt-{i:04d}",
                    "OrderShipped",
                    at,
                    f"ORD-{i - 1:06d}",
                    shipped_at,
                    STREAM,
                    i + 1,
                    "orders.shipped",
                    PUBLISHED,
                    "run-1",
                    NOW,
                    SHIPPED_VERSION,
                )
            )
    return rows


def expected_quarantine() -> dict[int, tuple]:
    """seq -> (failed_rules, event_id, event_type)."""
    rows = {}
    for i in range(COUNT):
        kind = kind_of(i)
        if kind in (None, "future_time"):
            continue
        event = payload(i)
        if kind == "malformed_json":
            rows[i + 1] = (RULES[kind], None, None)
        else:
            rows[i + 1] = (RULES[kind], event["eventId"], event["eventType"])
    return rows


def run(spark, indexes, existing=None):
    checked = parse_events(bronze_rows(spark, indexes), CONTRACT)
    return route(checked, CONTRACT, existing, run_id="run-1", now=NOW, source_table="bronze/orders")


@pytest.fixture(scope="module")
def batch(spark):
    return run(spark, range(COUNT))


def quarantine_of(frame) -> dict[int, tuple]:
    return {
        r.seq: (r.failed_rules, r.event_id, r.event_type)
        for r in frame.select("seq", "failed_rules", "event_id", "event_type").collect()
    }


def test_the_bad_rows_are_ten_percent_of_ten_kinds():
    kinds = [kind_of(i) for i in range(COUNT)]
    assert kinds.count(None) == 900
    assert {kind: kinds.count(kind) for kind in BAD} == dict.fromkeys(BAD, 10)


def collected(spark, rows: set[tuple], schema) -> set[tuple]:
    """`rows` as Spark gives them back (timestamps as the session returns them)."""
    return {tuple(r) for r in spark.createDataFrame(list(rows), schema).collect()}


def test_each_silver_table_holds_exactly_the_valid_rows_typed(spark, batch):
    placed_rows = {tuple(r) for r in batch.tables["OrderPlaced"].collect()}
    shipped_rows = {tuple(r) for r in batch.tables["OrderShipped"].collect()}

    assert batch.tables["OrderPlaced"].columns == [
        "event_id", "event_type", "occurred_at", "order_id", "customer_id", "amount",
        "currency", "amount_cents", "stream", "seq", "subject", "published", "run_id",
        "processed_at", "contract_version",
    ]  # fmt: skip
    assert placed_rows == collected(spark, expected_placed(), batch.tables["OrderPlaced"].schema)
    shipped_schema = batch.tables["OrderShipped"].schema
    assert shipped_rows == collected(spark, expected_shipped(), shipped_schema)
    assert (len(placed_rows), len(shipped_rows)) == (500, 410)


def test_quarantine_holds_every_other_row_with_the_rules_it_broke(batch):
    assert quarantine_of(batch.quarantine) == expected_quarantine()
    assert len(expected_quarantine()) == 90


def test_quarantine_rows_keep_the_payload_and_say_what_is_wrong(batch):
    rows = {r.seq: r for r in batch.quarantine.where("seq IN (10, 20, 60, 80)").collect()}

    assert bytes(rows[10].payload) == b'{"eventId": "evt-broken", "data": {'
    assert rows[10].error == "parseable_json: payload is not valid JSON"
    assert rows[60].error == (
        "currency_in_allowed_values: data.currency 'JPY' is not one of EUR, USD, GBP"
    )
    assert rows[20].error == "required_fields_present: missing or null: data.customerId"
    assert rows[80].error == (
        "event_id_unique: eventId 'evt-0000' was first seen in stream 'ORDERS' at seq 1; "
        "this later copy is not kept"
    )
    assert {r.source_table for r in rows.values()} == {"bronze/orders"}


def test_warn_rules_keep_the_row_in_silver_and_are_counted_for_checks(batch):
    shipped_failures = rule_failures(batch.candidates["OrderShipped"], CONTRACT)
    placed_failures = rule_failures(batch.candidates["OrderPlaced"], CONTRACT)

    assert {k: v for k, v in shipped_failures.items() if v} == {
        "order_id_format": 10,
        "shipped_at_not_in_future": 10,
        "no_unknown_fields": 10,
    }
    assert {k: v for k, v in placed_failures.items() if v} == {
        "required_fields_present": 10,
        "field_types_valid": 10,
        "event_id_unique": 10,
        "amount_in_range": 10,
        "currency_in_allowed_values": 10,
    }


def test_two_batches_with_colliding_keys_give_the_rows_of_one(spark, batch):
    first = run(spark, range(500))
    tables = {name: frame for name, frame in first.tables.items()}
    checked = parse_events(bronze_rows(spark, range(500, COUNT)), CONTRACT)
    prior = colliding_keys(event_keys(checked, CONTRACT), CONTRACT, tables, first.quarantine)
    second = route(checked, CONTRACT, prior, run_id="run-1", now=NOW, source_table="bronze/orders")

    assert sorted(tuple(r) for r in prior.collect()) == [("OrderPlaced", "evt-0490", STREAM, 491)]
    for name in ("OrderPlaced", "OrderShipped"):
        split = {tuple(r) for r in first.tables[name].collect()}
        split |= {tuple(r) for r in second.tables[name].collect()}
        assert split == {tuple(r) for r in batch.tables[name].collect()}
    split = quarantine_of(first.quarantine) | quarantine_of(second.quarantine)
    assert split == expected_quarantine()


def test_field_rules_counts_the_rows_breaking_any_of_its_rules_once(spark, batch):
    found, _ = routed_counts(batch, CONTRACT)
    # amount_in_range's 10 rows and currency_in_allowed_values' 10 are different rows.
    assert (found["OrderPlaced"].shared, found["OrderShipped"].shared) == (20, 0)

    both = ["amount_in_range", "currency_in_allowed_values"]
    judged = spark.createDataFrame(
        [("OrderPlaced", True, both), ("OrderPlaced", True, both[:1]), ("OrderPlaced", False, []),
         ("OrderShipped", False, ["shipped_at_not_in_future"]), (None, True, ["parseable_json"])],
        f"{EVENT_TYPE} string, quarantined boolean, failed_rules array<string>",
    )  # fmt: skip
    typed, _ = routed_counts(SilverBatch({}, None, {}, judged), CONTRACT)

    counts = typed["OrderPlaced"]
    assert (counts.failing["amount_in_range"], counts.failing[both[1]], counts.shared) == (2, 1, 2)
    assert typed["OrderShipped"].shared == 0  # a warn rule has a check of its own
