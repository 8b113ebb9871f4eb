"""A contract read from JSON Schema judges every keyword of the validation vocabulary on a real
Spark: each constraint with a valid and an invalid value, landed in silver or quarantined
with its rule's name and what is wrong."""

import datetime as dt
import json
from decimal import Decimal

import pytest

from pipelines.contract import Envelope, contract_from_json_schemas
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.silver import parse_events, route
from pipelines.silver.expectations import contract_suite

PUBLISHED = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)
NOW = PUBLISHED + dt.timedelta(minutes=10)
FORMATS = {
    "t": ("time", "10:20:30.5+01:00", "25:00:00"),
    "dur": ("duration", "P1DT2H30M", "P"),
    "u": ("uri", "https://example.com/a?b=c#d", "no scheme here"),
    "ur": ("uri-reference", "../a/b?c=%20", "a b"),
    "h": ("hostname", "api.example-1.com", "-bad.example.com"),
    "ip4": ("ipv4", "192.0.2.1", "256.1.1.1"),
    "ip6": ("ipv6", "2001:db8::ffff:192.0.2.1", "2001:db8:::1"),
    "b64": ("byte", "aGVsbG8=", "aGVsbG8"),
    "mail": ("email", "a@b.io", "a@b"),
    "uid": ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
}
SCHEMA = {
    "type": "object",
    "required": ["id", "kind", "name", "qty", "note"],
    "properties": {
        "id": {"type": "integer"},
        "kind": {"const": "Thing"},
        "name": {"type": "string", "minLength": 2, "maxLength": 5},
        "qty": {"type": "integer", "exclusiveMinimum": 0, "maximum": 10, "multipleOf": 2},
        "price": {"type": "number", "minimum": 0, "multipleOf": 0.01},
        "dec": {"type": "number", "x-jsl-type": "decimal(10,4)", "multipleOf": 0.05},
        "amount": {  # pydantic's Decimal with Field(gt=0, multiple_of=Decimal("0.05"))
            "anyOf": [
                {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.05},
                {"type": "string"},
            ]
        },
        "ratio": {"type": "number", "exclusiveMaximum": 1},
        "tags": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "minItems": 1,
            "maxItems": 3,
            "uniqueItems": True,
        },
        "attrs": {
            "type": "object",
            "additionalProperties": {"type": "integer", "minimum": 0},
            "minProperties": 1,
            "maxProperties": 2,
        },
        "color": {"enum": ["red", "blue", None]},
        "flag": {"const": True},
        "code": {"type": "string", "pattern": "b[0-9]"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "any": {"description": "anything"},
        "lines": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["sku"],
                "properties": {
                    "sku": {"type": "string", "pattern": "^[a-z]$"},
                    "qty": {"type": "integer", "minimum": 1},
                },
                "additionalProperties": False,
            },
        },
        "day": {"type": "string", "format": "date"},
        **{key: {"type": "string", "format": fmt} for key, (fmt, _, _) in FORMATS.items()},
    },
    "additionalProperties": False,
}
CONTRACT = contract_from_json_schemas(
    {"thing": SCHEMA}, envelope=Envelope(event_type="kind", event_id="id")
)
VALID = {
    "id": 1,
    "kind": "Thing",
    "name": "\U0001f600\U0001f600",  # two code points (four UTF-16 units)
    "qty": 10,
    "price": 19.99,
    "dec": 1.15,
    "amount": "12.50",
    "ratio": 0.99,
    "tags": ["a", "b"],
    "attrs": {"a": 1},
    "color": None,
    "flag": True,
    "code": "ab1c",
    "note": None,
    "any": {"k": [1, "x"]},
    "lines": [{"sku": "a", "qty": 1}, {"sku": "b"}],
    "day": "2024-02-29",
    **{key: good for key, (_, good, _) in FORMATS.items()},
}
MISSING = object()


def valid(n: int, **changes) -> dict:
    event = {**VALID, "id": n, **changes}
    return {k: v for k, v in event.items() if v is not MISSING}


# seq -> (payload, the rules it breaks; [] if it lands in silver)
CASES = {
    1: (valid(1), []),
    2: (valid(2, name="n"), ["name_min_length"]),
    3: (valid(3, name="abcdef"), ["name_max_length"]),
    4: (valid(4, qty=0), ["qty_in_range"]),
    5: (valid(5, qty=3), ["qty_multiple_of"]),
    6: (valid(6, price=19.999), ["price_multiple_of"]),
    7: (valid(7, price=0.3, dec=2), []),
    8: (valid(8, dec=1.17), ["dec_multiple_of"]),
    9: (valid(9, ratio=1), ["ratio_in_range"]),
    10: (valid(10, tags=[]), ["tags_min_items"]),
    11: (valid(11, tags=["a", "b", "c", "d"]), ["tags_max_items"]),
    12: (valid(12, tags=["a", "a"]), ["tags_unique_items"]),
    13: (valid(13, tags=["", "b"]), ["tags_each_min_length"]),
    14: (valid(14, attrs={}), ["attrs_min_properties"]),
    15: (valid(15, attrs={"a": 1, "b": 2, "c": 3}), ["attrs_max_properties"]),
    16: (valid(16, color="green"), ["color_in_allowed_values"]),
    17: (valid(17, color="red", flag=False), ["flag_in_allowed_values"]),
    18: (valid(18, code="abc"), ["code_matches_pattern"]),
    19: (valid(19, note=MISSING), ["required_fields_present"]),
    20: (valid(20, name=None), ["required_fields_present"]),
    21: (valid(21, day="2023-02-29"), ["field_types_valid"]),
    22: (valid(22, any=MISSING, price=1e-30), ["price_multiple_of"]),
    # A member's constraint inside an array is a rule on every element.
    23: (
        valid(23, lines=[{"sku": "a", "qty": 1}, {"sku": "b", "qty": 0}]),
        ["lines_each_qty_in_range"],
    ),
    52: (valid(52, lines=[{"sku": "ab"}]), ["lines_each_sku_matches_pattern"]),
    # JSON null where the schema's type leaves it out: of a field, an element, a member.
    53: (valid(53, price=None), ["field_types_valid"]),
    54: (valid(54, lines=[{"sku": "a"}, None]), ["field_types_valid"]),
    55: (valid(55, tags=["a", None]), ["field_types_valid"]),
    56: (valid(56, lines=[{"sku": "a", "qty": None}]), ["field_types_valid"]),
    57: (valid(57, attrs={"a": None}), ["field_types_valid"]),
    58: (valid(58, any=None), []),  # no type: null is a value
    60: (valid(60, price=MISSING), []),  # an absent double is no multiple_of to judge
    # additionalProperties: false under items: an undeclared member is an unknown field.
    59: (valid(59, lines=[{"sku": "a"}, {"sku": "b", "x": 1}]), ["no_unknown_fields"]),
    24: (valid(24, lines=[{"qty": 1}]), ["field_types_valid"]),
    25: (valid(25, amount=" 1E+2 "), []),
    51: (valid(51, attrs={"a": 1, "b": -1}), ["attrs_each_in_range"]),
    26: (valid(26, amount="0"), ["amount_in_range"]),
    27: (valid(27, amount="12.51"), ["amount_multiple_of"]),
    28: (valid(28, amount="twelve"), ["amount_matches_pattern"]),
    29: (valid(29, amount="0.1234567890123456789"), ["amount_in_range", "amount_multiple_of"]),
    # pydantic sends a Decimal as text, and takes a number too: kept as its exact text.
    50: (valid(50, amount=12.5), []),
    61: (valid(61, amount=12.51), ["amount_multiple_of"]),
    62: (valid(62, amount=1e20), ["field_types_valid"]),  # an exponent: Spark reads a double
    **{
        30 + n: (valid(30 + n, **{key: bad}), [f"{key}_is_{fmt.replace('-', '_')}"])
        for n, (key, (fmt, _, bad)) in enumerate(FORMATS.items())
    },
}


@pytest.fixture(scope="module")
def batch(spark):
    day = PUBLISHED.date()
    rows = [
        ("S", seq, "things", PUBLISHED, day, None, json.dumps(p).encode(), None, "ingest", NOW)
        for seq, (p, _) in CASES.items()
    ]
    bronze = spark.createDataFrame(rows, BRONZE_SCHEMA)
    checked = parse_events(bronze, CONTRACT)
    return route(checked, CONTRACT, run_id="run-1", now=NOW, source_table="bronze/things")


@pytest.fixture(scope="module")
def quarantined(batch):
    return {r.seq: (r.failed_rules, r.error) for r in batch.quarantine.collect()}


@pytest.fixture(scope="module")
def landed(batch):
    return {r.seq: r.asDict(recursive=True) for r in batch.tables["Thing"].collect()}


def test_each_row_breaks_exactly_its_rules(quarantined, landed):
    assert {seq: rules for seq, (rules, _) in quarantined.items()} == {
        seq: rules for seq, (_, rules) in CASES.items() if rules
    }
    assert set(landed) == {seq for seq, (_, rules) in CASES.items() if not rules}


def test_every_rule_has_a_sentence_and_its_quarantine_row_says_what_is_wrong(quarantined):
    sentences = {r.name: r.description for r in CONTRACT.rules}
    for seq, (_, rules) in CASES.items():
        for rule in rules:
            assert sentences[rule].endswith(".")
            assert f"{rule}: " in quarantined[seq][1]

    assert "qty 3 is not a multiple of 2" in quarantined[5][1]
    assert "price 19.999 is not a multiple of 0.01" in quarantined[6][1]
    assert "qty 0 is outside (0, 10]" in quarantined[4][1]
    assert "tags has 1 repeated elements" in quarantined[12][1]
    assert "an element of tags: is 0 characters long, fewer than 1" in quarantined[13][1]
    assert "cannot be judged exactly as a multiple of 0.01" in quarantined[22][1]
    assert "missing or null: name" in quarantined[20][1]
    assert "missing or null: note" in quarantined[19][1]
    assert "amount '12.51' is not a multiple of 0.05" in quarantined[27][1]
    assert "a value of attrs: -1 is outside [0, inf]" in quarantined[51][1]
    assert sentences["attrs_each_in_range"] == "each value of attrs is at least 0."
    assert "amount '0.1234567890123456789' has too many digits" in quarantined[29][1]
    assert "lines[1].qty 0 is outside [1, inf]" in quarantined[23][1]
    assert "amount '12.51' is not a multiple of 0.05" in quarantined[61][1]
    assert "wrong type: amount (expected a number or its text)" in quarantined[62][1]
    assert "lines[0].sku 'ab' does not match ^[a-z]$" in quarantined[52][1]
    assert sentences["lines_each_qty_in_range"] == "each lines[].qty is at least 1."
    assert "wrong type: price (expected a number, got null)" in quarantined[53][1]
    assert "wrong type: lines (expected an array of struct)" in quarantined[54][1]
    assert "wrong type: tags (expected an array of string)" in quarantined[55][1]
    assert "no_unknown_fields: undeclared: lines[1].x" in quarantined[59][1]


def test_valid_values_land_exactly_as_sent(landed):
    row = landed[1]

    assert (row["name"], row["note"], row["color"], row["flag"]) == ("😀😀", None, None, True)
    assert (row["price"], row["dec"]) == (19.99, Decimal("1.1500"))
    assert row["any"].toJson() == '{"k":[1,"x"]}'  # a VARIANT: the value with its JSON types
    assert row["day"] == dt.date(2024, 2, 29)
    assert landed[7]["price"] == 0.3  # 0.3 is 30 times 0.01 as written, though not in binary
    assert landed[7]["dec"] == Decimal("2.0000")
    assert landed[50]["amount"] == "12.5"  # the number's text, never through a double


def test_the_great_expectations_suite_checks_what_gx_can_and_leaves_the_rest_to_the_rows():
    suite = contract_suite(CONTRACT, CONTRACT.event_type("Thing"))
    checks = {check.rule: check for check in suite.checks}

    assert checks["qty_in_range"].kwargs == {
        "column": "qty", "min_value": 0, "max_value": 10, "strict_min": True,
        "strict_max": False, "mostly": 1.0,
    }  # fmt: skip
    assert checks["name_min_length"].expectation == "ExpectColumnValueLengthsToBeBetween"
    assert checks["ip6_is_ipv6"].expectation == "ExpectColumnValuesToMatchRegex"
    assert not {
        "qty_multiple_of", "tags_unique_items", "tags_each_min_length", "lines_each_qty_in_range"
    } & set(checks)  # fmt: skip
    present = {c.name for c in suite.checks if c.rule == "required_fields_present"}
    assert present == {"id_not_null", "kind_not_null", "name_not_null", "qty_not_null",
                       "note_present"}  # fmt: skip
    assert "JSON null is a value" in suite.check("note_present").description  # note may be null
