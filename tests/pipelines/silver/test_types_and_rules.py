"""Every contract type and constraint kind, derived columns, unknown fields kept and rejected,
and event types told apart by subject, through the generated silver on a real Spark."""

import datetime as dt
import json
from decimal import Decimal

import pytest
from pyspark.sql import functions as F

from pipelines.contract import contract_from_dict
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.silver import parse_events, route, spark_pattern, subject_regex

PUBLISHED = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)
NOW = PUBLISHED + dt.timedelta(minutes=10)
AT = int((PUBLISHED - dt.timedelta(hours=1)).timestamp() * 1000)
CONTRACT = contract_from_dict(
    {
        "envelope": {
            "event_type": "kind",
            "event_id": "id",
            "event_time": "at",
            "fields": {
                "id": {"type": "long", "required": True},
                "kind": {"required": True},
                "at": {"type": "timestamp(epoch_millis)", "required": True, "not_in_future": "1m"},
            },
        },
        "events": {
            "Everything": {
                "unknown_fields": "keep",
                "fields": {
                    "s": {"max_length": 5, "pattern": "^[a-z]+$", "description": "Short text."},
                    "i": {"type": "integer", "minimum": 1, "maximum": 10},
                    "l": {"type": "long", "enum": [1, 2, 3]},
                    "d": "double",
                    "dec": {"type": "decimal(5,2)", "minimum": 0},
                    "b": "boolean",
                    "ts": "timestamp",
                    "secs": "timestamp(epoch_seconds)",
                    "day": {"type": "date", "not_in_future": True},
                    "who.name": {"required": True},
                    "addr": {
                        "required": True,
                        "fields": {"zip": {"required": True, "pattern": "^[0-9]{5}$"}, "city": {}},
                    },
                    "tags": "array<string>",
                    "lines": {
                        "type": "array<struct>",
                        "fields": {"sku": {"required": True}, "qty": "integer"},
                    },
                    "attrs": "map<long>",
                    "uid": {"format": "uuid"},
                    "mail": {"format": "email"},
                    "when": {"format": "date-time"},
                    "cur": {"enum": ["EUR", "USD"]},
                },
                "derived": {
                    "total": {"expression": "i * 2 + l", "type": "long"},
                    "label": "upper(s)",
                },
            },
            "Strict": {
                "unknown_fields": "reject",
                "fields": {"data.x": {"type": "integer", "required": True}},
            },
        },
    }
)
VALID = {
    "id": 1,
    "kind": "Everything",
    "at": AT,
    "s": "abc",
    "i": 3,
    "l": 2,
    "d": 1.5,
    "dec": 12.34,
    "b": True,
    "ts": "2026-11-21T10:00:00Z",
    "secs": 1795255200.5,
    "day": "2026-11-21",
    "who": {"name": "ann"},
    "addr": {"zip": "12345", "city": "Oslo"},
    "tags": ["a", None, "b"],
    "lines": [{"sku": "x", "qty": 2}],
    "attrs": {"a": 1, "b": 2},
    "uid": "123e4567-e89b-12d3-a456-426614174000",
    "mail": "a@b.io",
    "when": "2026-11-21T10:00:00Z",
    "cur": "EUR",
    "extra": {"k": [1]},
}
MISSING = object()


def valid(n: int, **changes) -> dict:
    """VALID with its own id and `changes` (MISSING removes a key)."""
    event = {**VALID, "id": n, **changes}
    return {k: v for k, v in event.items() if v is not MISSING}


# seq -> (payload, the rules it breaks; [] if it lands in its table)
CASES: dict[int, tuple[dict, list[str]]] = {
    1: (valid(1), []),
    2: (valid(2, s="abcdefg"), ["s_max_length"]),
    3: (valid(3, s="ab1"), ["s_matches_pattern"]),
    4: (valid(4, i=11), ["i_in_range"]),
    5: (valid(5, l=4), ["l_in_allowed_values"]),
    6: (valid(6, dec=-1), ["dec_in_range"]),
    7: (valid(7, addr={"zip": "1234"}), ["addr_zip_matches_pattern"]),
    8: (valid(8, uid="nope"), ["uid_is_uuid"]),
    9: (valid(9, mail="a@b"), ["mail_is_email"]),
    10: (valid(10, when="2026-11-21"), ["when_is_date_time"]),
    11: (valid(11, cur="JPY"), ["cur_in_allowed_values"]),
    12: (valid(12, at=AT + 3_600_000 + 120_000), ["at_not_in_future"]),
    13: (valid(13, day="2026-11-22"), ["day_not_in_future"]),
    14: (
        valid(14, i=2**40, dec=1.234, b="true", secs="x", tags=[1], lines=[{"qty": 1}])
        | {"attrs": {"a": "x"}, "ts": "2026-11-21", "d": "1.5", "addr": {"zip": 12345}},
        ["field_types_valid"],
    ),
    15: (valid(15, who=MISSING, addr={"city": "x"}), ["required_fields_present"]),
    16: (valid(16, who="ann", addr=MISSING), ["required_fields_present", "field_types_valid"]),
    17: (valid(1), ["event_id_unique"]),
    18: ({"id": 100, "kind": "Strict", "at": AT, "data": {"x": 1}}, []),
    19: (
        {"id": 101, "kind": "Strict", "at": AT, "data": {"x": 1, "y": 2}, "z": 0},
        ["no_unknown_fields"],
    ),
    20: (valid(20, at=1.5e12), ["field_types_valid"]),
    21: (valid(21, i=MISSING, s=MISSING), []),
    22: ({"id": 22, "kind": "Nothing", "at": AT}, ["known_event_type"]),
}


def bronze_of(spark, cases: dict, subject: str = "things") -> object:
    day = PUBLISHED.date()
    rows = [
        ("S", seq, subject, PUBLISHED, day, None, json.dumps(p).encode(), None, "ingest", NOW)
        for seq, (p, _) in cases.items()
    ]
    return spark.createDataFrame(rows, BRONZE_SCHEMA)


@pytest.fixture(scope="module")
def checked(spark):
    return parse_events(bronze_of(spark, CASES), CONTRACT).cache()


@pytest.fixture(scope="module")
def batch(checked):
    return route(checked, CONTRACT, run_id="run-1", now=NOW, source_table="bronze/things")


def test_each_row_breaks_exactly_its_rules(batch):
    quarantined = {r.seq: r.failed_rules for r in batch.quarantine.collect()}
    kept = {r.seq for name in ("Everything", "Strict") for r in batch.tables[name].collect()}

    assert quarantined == {seq: rules for seq, (_, rules) in CASES.items() if rules}
    assert kept == {seq for seq, (_, rules) in CASES.items() if not rules}


def test_a_valid_row_has_every_type_typed(batch):
    row = batch.tables["Everything"].where("seq = 1").first().asDict(recursive=True)

    assert {k: row[k] for k in ("id", "kind", "s", "i", "l", "d", "dec", "b")} == {
        "id": 1, "kind": "Everything", "s": "abc", "i": 3, "l": 2, "d": 1.5,
        "dec": Decimal("12.34"), "b": True,
    }  # fmt: skip
    assert row["at"] - row["ts"] == dt.timedelta(hours=1)
    assert row["secs"] - row["ts"] == dt.timedelta(seconds=0.5)
    assert row["day"] == dt.date(2026, 11, 21)
    assert (row["name"], row["addr"]) == ("ann", {"zip": "12345", "city": "Oslo"})
    assert (row["tags"], row["lines"]) == (["a", None, "b"], [{"sku": "x", "qty": 2}])
    assert row["attrs"] == {"a": 1, "b": 2}
    assert (row["uid"], row["mail"], row["when"], row["cur"]) == (
        "123e4567-e89b-12d3-a456-426614174000", "a@b.io", "2026-11-21T10:00:00Z", "EUR"
    )  # fmt: skip
    assert row["unknown_fields"] == {"extra": '{"k":[1]}'}
    assert (row["total"], row["label"]) == (8, "ABC")


def test_derived_columns_are_null_where_an_input_is_missing(batch):
    row = batch.tables["Everything"].where("seq = 21").first()

    assert (row.i, row.s, row.total, row.label) == (None, None, None, None)


def test_mistyped_fields_name_their_path_and_what_was_expected(checked):
    row = checked.where("seq = 14").select("_missing_fields", "_mistyped_fields").first()

    assert row[0] == []
    assert row[1] == [
        "i (expected an integer of 32 bits)",
        "d (expected a number)",
        "dec (expected a number that fits decimal(5,2))",
        "b (expected true or false)",
        "ts (expected an ISO-8601 timestamp string)",
        "secs (expected a number of seconds since 1970-01-01)",
        "addr.zip (expected a string)",
        "tags (expected an array of string)",
        "lines (expected an array of struct)",
        "attrs (expected an object of long)",
    ]


def test_a_missing_parent_reports_its_fields_and_a_mistyped_one_only_itself(checked):
    rows = {
        r.seq: (r._missing_fields, r._mistyped_fields)
        for r in checked.where("seq IN (15, 16, 20)").collect()
    }

    assert rows == {
        15: (["who.name", "addr.zip"], []),
        16: (["addr"], ["who (expected an object)"]),
        20: ([], ["at (expected an integer number of milliseconds since 1970-01-01)"]),
    }


def test_quarantine_errors_explain_constraints_and_undeclared_fields(batch):
    errors = {r.seq: r.error for r in batch.quarantine.where("seq IN (2, 12, 13, 19)").collect()}

    assert errors == {
        2: "s_max_length: s is 7 characters long, more than 5",
        12: "at_not_in_future: at 2026-11-21T12:02:00.000Z is later than its publish time + "
        "clock skew (2026-11-21T12:01:00.000Z)",
        13: "day_not_in_future: day 2026-11-22 is after the day of its publish time + skew "
        "(2026-11-21)",
        19: "no_unknown_fields: undeclared: data.y, z",
    }


def test_event_types_without_a_discriminator_are_told_apart_by_subject(spark):
    contract = contract_from_dict(
        {
            "events": {
                "A": {
                    "subjects": ["shop.a.*"],
                    "fields": {"n": {"type": "long", "required": True}},
                },
                "B": {"subjects": ["shop.b"], "fields": {"n": {"type": "long", "enum": [1]}}},
            }
        }
    )
    frame = bronze_of(spark, {1: ({"n": 1}, [])}, "shop.a.x").unionByName(
        bronze_of(spark, {2: ({"n": 2}, []), 3: ({"n": 1}, [])}, "shop.b")
    )
    frame = frame.unionByName(bronze_of(spark, {4: ({"n": 1}, [])}, "shop.c"))

    batch = route(parse_events(frame, contract), contract, run_id="run-1", now=NOW)

    assert [r.seq for r in batch.tables["A"].collect()] == [1]
    assert [r.seq for r in batch.tables["B"].collect()] == [3]
    quarantine = batch.quarantine.orderBy("seq").select("seq", "failed_rules", "error").collect()
    assert [tuple(r) for r in quarantine] == [
        (2, ["n_in_allowed_values"], "n_in_allowed_values: n '2' is not one of 1"),
        (4, ["known_event_type"], "known_event_type: subject 'shop.c' is none of "
         "(A: shop.a.*; B: shop.b)"),
    ]  # fmt: skip


def test_patterns_end_at_the_very_end_of_the_text(spark):
    frame = spark.createDataFrame([("user-001",), ("user-001\n",)], "v string")
    pattern = spark_pattern("^user-[0-9]{3,}$")

    assert [r.ok for r in frame.select(F.col("v").rlike(pattern).alias("ok")).collect()] == [
        True,
        False,
    ]
    assert spark_pattern(r"^a\$") == r"^a\$"
    assert subject_regex("orders.*.>") == r"^orders\.[^.]+\..+\z"


def test_the_envelope_is_read_for_every_parsed_row_declared_type_or_not(checked):
    rows = {
        r.seq: (r._event_type, r._event_id, r._event_time)
        for r in checked.where("seq IN (1, 20, 22)").collect()
    }
    at = checked.where("seq = 1").select("_e0.at").first()[0]

    assert rows == {
        1: ("Everything", "1", at),
        20: ("Everything", "20", None),
        22: ("Nothing", "22", at),
    }


def test_two_event_types_with_different_structs_at_one_path_each_get_their_own(spark):
    def event(member_type: str) -> dict:
        return {
            "subjects": [f"t.{member_type}"],
            "fields": {"records": {"type": "array<struct>", "fields": {"v": member_type}}},
        }

    contract = contract_from_dict({"events": {"Text": event("string"), "Number": event("double")}})
    rows = [
        ("S", seq, subject, PUBLISHED, PUBLISHED.date(), None, json.dumps(doc).encode(), None,
         "r", PUBLISHED)
        for seq, (subject, doc) in enumerate(
            [("t.string", {"records": [{"v": "2.1"}]}), ("t.double", {"records": [{"v": 1.5}]})], 1
        )
    ]  # fmt: skip
    batch = route(
        parse_events(spark.createDataFrame(rows, BRONZE_SCHEMA), contract), contract,
        run_id="r", now=NOW, source_table="bronze/t",
    )  # fmt: skip

    assert [r.records[0].v for r in batch.tables["Text"].collect()] == ["2.1"]
    assert [r.records[0].v for r in batch.tables["Number"].collect()] == [1.5]


def test_keys_that_spark_sql_would_read_otherwise_are_looked_up_as_written(spark):
    # Silver's per-path columns are Spark SQL text (variant_types.literal): a key with a
    # quote, a backslash, a `$`, or a `${...}` that Spark's parser would substitute is still
    # the key, and its value lands.
    keys = ["${env:HOME}", "${x}", "it's", "back\\slash", "$dollar"]
    fields = {key: {"type": "string", "required": True} for key in keys}
    contract = contract_from_dict({"events": {"T": {"subjects": ["t"], "fields": fields}}})
    doc = {key: f"value of {key}" for key in keys}
    rows = [("S", 1, "t", PUBLISHED, PUBLISHED.date(), None, json.dumps(doc).encode(), None,
             "r", PUBLISHED)]  # fmt: skip
    batch = route(
        parse_events(spark.createDataFrame(rows, BRONZE_SCHEMA), contract), contract,
        run_id="r", now=NOW, source_table="bronze/t",
    )  # fmt: skip

    assert batch.quarantine.count() == 0
    (row,) = batch.tables["T"].collect()
    assert {f.path: row[f.column] for f in contract.event_types[0].fields} == doc
