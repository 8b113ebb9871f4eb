"""Envelopes and fields read from outside the payload, through the generated silver on a real
Spark: CloudEvents in structured and binary mode land the same rows, and header- and
subject-token fields land typed or are quarantined with their rule (docs/envelopes.md)."""

import datetime as dt
import json

import pytest

from pipelines.contract import contract_from_dict
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.silver import layout, parse_events, route

PUBLISHED = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)
NOW = PUBLISHED + dt.timedelta(minutes=10)
PLACED = "com.example.order.placed"
CLOUDEVENTS = contract_from_dict(
    {
        "envelope": "cloudevents",
        "events": {
            PLACED: {
                "table": "silver/orders_placed",
                "fields": {
                    "orderId": {"required": True},
                    "amount": "decimal(10,2)",
                    "lines": "array<string>",
                },
            }
        },
    }
)
ATTRIBUTES = {"specversion": "1.0", "type": PLACED, "source": "/shop"}
MISSING = object()


def event(n: int, data: object = MISSING, **attributes) -> tuple[dict, object]:
    """(CloudEvents attributes, data) of event `n` (an attribute set to MISSING is left out)."""
    merged = {**ATTRIBUTES, "id": f"e-{n}", **attributes}
    data = {"orderId": f"o-{n}", "amount": 12.5} if data is MISSING else data
    return {k: v for k, v in merged.items() if v is not MISSING}, data


# seq -> (event, the rules it breaks; [] if it lands in silver)
EVENTS = {
    1: (
        event(
            1,
            {"orderId": "o-1", "amount": 12.5, "lines": ["a"]},
            time="2026-11-21T12:00:00+02:00",
            subject="orders/o-1",
            datacontenttype="application/json",
        ),
        [],
    ),
    2: (event(2, source="/shop eu/100%"), []),
    3: (event(3, {"amount": 1}), ["required_fields_present"]),
    4: (event(4, {"orderId": "o-4", "amount": "x"}), ["field_types_valid"]),
    5: (event(5, time="yesterday"), ["field_types_valid"]),
    6: (event(6, type="com.example.other"), ["known_event_type"]),
    7: (event(1), ["event_id_unique"]),
    8: (event(8, source=MISSING), ["required_fields_present"]),
}


def bronze_row(seq: int, subject: str, headers: dict | None, payload: object) -> tuple:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    day = PUBLISHED.date()
    return ("S", seq, subject, PUBLISHED, day, headers, body, None, "ingest", NOW)


def structured(seq: int, attributes: dict, data: object) -> tuple:
    return bronze_row(seq, "orders", None, {**attributes, "data": data})


def percent_encoded(value: str) -> str:
    """As the CloudEvents NATS binding writes a header value (space, `"`, `%` and non-ASCII)."""
    return "".join(
        "".join(f"%{b:02X}" for b in c.encode()) if c in ' "%' or ord(c) > 126 else c for c in value
    )


def binary(seq: int, attributes: dict, data: object) -> tuple:
    headers = {f"ce-{k}": percent_encoded(v) for k, v in attributes.items()}
    if "datacontenttype" in headers:  # the binding's Content-Type, read when there is no ce-
        headers["Content-Type"] = headers.pop("ce-datacontenttype")
    if seq == 2:  # header names match ignoring case
        headers["CE-ID"] = headers.pop("ce-id")
    return bronze_row(seq, "orders", headers, data)


def landed(spark, contract, rows: list[tuple]):
    bronze = spark.createDataFrame(rows, BRONZE_SCHEMA)
    checked = parse_events(bronze, contract).cache()
    batch = route(checked, contract, run_id="run-1", now=NOW, source_table="bronze/x")
    tables = {name: table.collect() for name, table in batch.tables.items()}
    return checked, tables, batch.quarantine.collect()


@pytest.fixture(scope="module")
def cloudevents_batches(spark):
    """The same events sent in structured mode, then in binary mode (plus a structured-only
    event whose data is not an object)."""
    structured_rows = [structured(seq, *e) for seq, (e, _) in EVENTS.items()]
    structured_rows.append(structured(9, event(9)[0], "not an object"))
    binary_rows = [binary(seq, *e) for seq, (e, _) in EVENTS.items()]
    return {
        "structured": landed(spark, CLOUDEVENTS, structured_rows),
        "binary": landed(spark, CLOUDEVENTS, binary_rows),
    }


def test_cloudevents_structured_and_binary_land_the_same_rows(cloudevents_batches):
    modes = {}
    for mode, (_, tables, quarantine) in cloudevents_batches.items():
        silver = sorted((r.asDict(recursive=True) for r in tables[PLACED]), key=str)
        judged = {r.seq: (r.event_type, r.event_id, r.failed_rules) for r in quarantine}
        judged.pop(9, None)
        modes[mode] = (silver, judged)

    assert modes["structured"] == modes["binary"]
    silver, judged = modes["binary"]
    assert [row["seq"] for row in silver] == [1, 2]
    assert judged == {
        seq: (e[0].get("type"), e[0]["id"], rules) for seq, (e, rules) in EVENTS.items() if rules
    }


def test_cloudevents_attributes_land_as_columns_and_data_fields_typed(cloudevents_batches):
    _, tables, _ = cloudevents_batches["binary"]
    row = next(r for r in tables[PLACED] if r.seq == 1).asDict(recursive=True)

    assert list(row)[:9] == [
        "ce_id", "ce_type", "ce_source", "ce_time", "ce_subject", "ce_datacontenttype",
        "ce_specversion", "order_id", "amount",
    ]  # fmt: skip
    assert (row["ce_id"], row["ce_type"], row["ce_source"]) == ("e-1", PLACED, "/shop")
    assert row["ce_time"] is not None
    assert (row["ce_subject"], row["ce_datacontenttype"]) == ("orders/o-1", "application/json")
    assert (row["order_id"], float(row["amount"]), row["lines"]) == ("o-1", 12.5, ["a"])


def test_cloudevents_id_and_time_are_the_event_id_and_time(cloudevents_batches):
    for checked, _, _ in cloudevents_batches.values():
        row = checked.where("seq = 1").selectExpr("_event_id", "string(_event_time)").first()

        assert tuple(row) == ("e-1", "2026-11-21 10:00:00")  # the session's time zone is UTC


def test_structured_data_that_is_not_an_object_is_mistyped(cloudevents_batches):
    checked, _, quarantine = cloudevents_batches["structured"]

    row = checked.where("seq = 9").select("_missing_fields", "_mistyped_fields").first()
    assert (row[0], row[1]) == ([], ["data (expected an object)"])
    assert next(r.failed_rules for r in quarantine if r.seq == 9) == ["field_types_valid"]


READINGS = contract_from_dict(
    {
        "envelope": {
            "event_type": "kind",
            "event_id": "header:Nats-Msg-Id",
            "fields": {"kind": {"required": True}},
        },
        "events": {
            "Reading": {
                "fields": {
                    "subject:3": {
                        "type": "integer",
                        "column": "light_id",
                        "required": True,
                        "minimum": 1,
                    },
                    "header:X-Lux": {"type": "double", "required": True},
                    "header:X-Seen": "timestamp",
                    "lumens": "integer",
                },
                "derived": {"site": r"split(subject, '\\.')[1]"},
            }
        },
    }
)
SUBJECT = "lights.north.light.7"
GOOD = {"Nats-Msg-Id": "m-1", "X-Lux": "12.5", "X-Seen": "2026-11-21T10:00:00Z"}
# seq -> (subject, headers, the rules it breaks; [] if it lands in silver)
READS = {
    1: (SUBJECT, GOOD, []),
    2: ("lights.south.light.8", {"nats-msg-id": "m-2", "x-lux": "3"}, []),
    3: (SUBJECT, {**GOOD, "Nats-Msg-Id": "m-3", "X-Lux": "bright"}, ["field_types_valid"]),
    4: (SUBJECT, {"Nats-Msg-Id": "m-4"}, ["required_fields_present"]),
    5: (SUBJECT, {"X-Lux": "1"}, ["required_fields_present"]),
    6: ("lights.north.light.x", {**GOOD, "Nats-Msg-Id": "m-6"}, ["field_types_valid"]),
    7: ("lights.north.light.0", {**GOOD, "Nats-Msg-Id": "m-7"}, ["light_id_in_range"]),
    8: ("lights.north", {**GOOD, "Nats-Msg-Id": "m-8"}, ["required_fields_present"]),
    9: (SUBJECT, None, ["required_fields_present"]),
    10: (SUBJECT, GOOD, ["event_id_unique"]),
    11: (SUBJECT, {**GOOD, "Nats-Msg-Id": "m-11", "X-Seen": "yesterday"}, ["field_types_valid"]),
}


@pytest.fixture(scope="module")
def readings(spark):
    payload = {"kind": "Reading", "lumens": 3}
    rows = [bronze_row(seq, s, h, payload) for seq, (s, h, _) in READS.items()]
    return landed(spark, READINGS, rows)


def test_header_and_subject_fields_land_typed(readings):
    checked, tables, _ = readings
    rows = {r.seq: r.asDict() for r in tables["Reading"]}

    assert set(rows) == {1, 2}
    one = rows[1]
    assert (one["nats_msg_id"], one["light_id"], one["x_lux"], one["site"]) == (
        "m-1", 7, 12.5, "north"
    )  # fmt: skip
    struct = layout.event_struct(READINGS, "Reading")
    seen = checked.where("seq = 1").selectExpr(f"string({struct}.x_seen)").first()[0]
    assert seen == "2026-11-21 10:00:00"
    assert (rows[2]["nats_msg_id"], rows[2]["light_id"], rows[2]["x_lux"]) == ("m-2", 8, 3.0)
    assert (rows[2]["x_seen"], rows[2]["site"]) == (None, "south")


def test_unparsable_or_missing_header_is_quarantined_with_its_rule(readings):
    checked, _, quarantine = readings
    judged = {r.seq: r.failed_rules for r in quarantine}

    assert judged == {seq: rules for seq, (_, _, rules) in READS.items() if rules}
    mistyped = {
        r.seq: r._mistyped_fields for r in checked.select("seq", "_mistyped_fields").collect()
    }
    assert mistyped[3] == ["header:X-Lux (expected a number)"]
    assert mistyped[6] == ["subject:3 (expected an integer of 32 bits)"]
    assert mistyped[11] == ["header:X-Seen (expected an ISO-8601 timestamp string)"]


def test_every_bronze_row_lands_in_exactly_one_place(readings, cloudevents_batches):
    for (_, tables, quarantine), sent in [
        (readings, set(READS)),
        (cloudevents_batches["binary"], set(EVENTS)),
        (cloudevents_batches["structured"], {*EVENTS, 9}),
    ]:
        places = [r.seq for rows in tables.values() for r in rows] + [r.seq for r in quarantine]
        assert sorted(places) == sorted(sent)
